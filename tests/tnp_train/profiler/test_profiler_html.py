"""The HTML page: self-contained, one bar segment per worker, step and part carrying the report's
figures, heights to one scale, the bottleneck named, names escaped. (test_profiler_chromium.py
checks the same page as a browser draws it.)"""
import html.parser

import pytest

from prof_traces import X, fit_steps, worker_trace
from tnp_train.profiler import html as H
from tnp_train.profiler import report as R


class Elements(html.parser.HTMLParser):
    """Every start tag as (tag, attrs), and the page's text."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(page):
    p = Elements()
    p.feed(page)
    return p


@pytest.fixture(scope="module")
def rep():
    r0 = worker_trace(fit_steps(4, wait_ms=12, allreduce_ms=0.5), rank=0, host="a")
    r1 = worker_trace(fit_steps(4, input_ms=13, allreduce_ms=0.5), rank=1, host="b")
    return R.analyze([r0, r1])


def test_one_bar_segment_per_worker_step_and_part_with_the_json_figures(rep):
    page = parse(H.render(rep))
    bars = [a for t, a in page.tags if t == "rect" and a.get("class") == "bar"]
    assert len(bars) == 2 * 4 * len(R.CATEGORIES)
    seen = {(a["data-rank"], int(a["data-index"]), a["data-category"]): a for a in bars}
    for rank, w in rep["workers"].items():
        for i, s in enumerate(w["steps"]):
            for c in R.CATEGORIES:
                a = seen[(rank, i, c)]
                assert a["data-step"] == str(s["step"])
                assert float(a["data-ms"]) == s[c + "_ms"]
                assert a["fill"] == H.COLORS[c]


def test_heights_share_one_scale_and_segments_stack(rep):
    page = parse(H.render(rep))
    charts = [a for t, a in page.tags if t == "svg" and a.get("class") == "steps"]
    assert [c["data-rank"] for c in charts] == ["0", "1"]
    scales = {float(c["data-scale"]) for c in charts}
    assert len(scales) == 1
    scale = scales.pop()
    # the axis ends at the round tick above the longest step (23.5 ms: 10 ms ticks to 30 ms)
    tallest = max(s["step_ms"] for w in rep["workers"].values() for s in w["steps"])
    assert tallest == 23.5
    assert 30.0 * scale == pytest.approx(H._CHART_H)
    labels = [t for t in parse(H.render(rep)).text if t.endswith(" ms")]
    assert labels[:4] == ["0 ms", "10 ms", "20 ms", "30 ms"]
    bars = [a for t, a in page.tags if t == "rect" and a.get("class") == "bar"]
    by_step = {}
    for a in bars:
        assert float(a["height"]) == pytest.approx(float(a["data-ms"]) * scale, abs=2e-3)
        by_step.setdefault((a["data-rank"], a["data-index"]), []).append(a)
    for segs in by_step.values():
        # in CATEGORIES order from the baseline up: each segment's bottom is the previous top
        for lower, upper in zip(segs, segs[1:]):
            assert float(upper["y"]) + float(upper["height"]) == pytest.approx(
                float(lower["y"]), abs=2e-3)


def test_bottleneck_legend_and_tables(rep):
    page = parse(H.render(rep))
    text = " ".join(page.text)
    assert rep["bottleneck"] in text
    assert rep["bottleneck"].startswith("rank 1 is input-bound")
    legend = [a["data-category"] for t, a in page.tags if t == "span" and "data-category" in a]
    assert legend == list(R.CATEGORIES)
    assert "worker 0: spans by self time" in text
    assert "waiting for other ranks" in text


def test_self_contained_no_script_no_fetch(rep):
    page = H.render(rep)
    tags = parse(page).tags
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe", "object")]
    assert not [a for _, a in tags if "src" in a or "href" in a]
    assert "http://" not in page and "https://" not in page and "url(" not in page


def test_names_from_the_trace_are_escaped():
    evs = [X("step", "step", 0, 4), X('<img src=x onerror="alert(1)">', "forward", 1, 2)]
    rep = R.analyze([worker_trace(evs, host="<b>evil</b>")])
    page = H.render(rep)
    assert "<img" not in page and "<b>evil" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


def test_worker_without_steps_and_empty_report():
    rep = R.analyze([worker_trace(fit_steps(2), rank=0), worker_trace([], rank=1)])
    page = H.render(rep)
    assert "no training steps recorded on this worker" in page
    assert H.render(R.analyze([]))     # no worker at all: still a page, with the sentence


def test_write(tmp_path, rep):
    path = tmp_path / "report.html"
    H.write(path, rep, title="run 3")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<title>run 3</title>" in text
