"""The report page as headless Chromium draws it: every bar segment is laid out with the height
its figure asks for, the segments of a step stack to the step's height, the visible ones are
hit by the pointer at their centre (drawn, not hidden), and the bottleneck is on the page.

The page itself has no script; the test adds a probe script to a copy of it that writes what
the browser laid out into data attributes, and reads them back with ``--dump-dom`` (no Python
package needed). Debian's ``chromium`` package provides the browser (``.ci/run`` installs it);
under ``CI=true`` a missing browser fails the test, elsewhere it skips.
"""
import html.parser
import os
import shutil
import subprocess

import pytest

from prof_traces import fit_steps, worker_trace
from tnp_train.profiler import html as H
from tnp_train.profiler import report as R

PROBE = """<script>
for (const r of document.querySelectorAll('rect.bar')) {
  const b = r.getBoundingClientRect();
  r.setAttribute('data-drawn-h', b.height.toFixed(4));
  r.setAttribute('data-drawn-w', b.width.toFixed(4));
  const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
  r.setAttribute('data-hit', hit === r ? '1' : '0');
}
document.body.setAttribute('data-probed', '1');
</script>"""


def chromium():
    for name in (os.environ.get("TNP_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    why = ("no headless browser: install Debian's chromium package (apt-get install chromium) "
           "or set TNP_CHROMIUM")
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


class Rects(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rects, self.body, self.text = [], {}, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "rect" and attrs.get("class") == "bar":
            self.rects.append(attrs)
        elif tag == "svg" and attrs.get("class") == "steps":
            self.scale = float(attrs["data-scale"])
        elif tag == "body":
            self.body = attrs

    def handle_data(self, data):
        self.text.append(data)


def test_bars_are_drawn_and_match_the_json(tmp_path):
    browser = chromium()
    rep = R.analyze([worker_trace(fit_steps(5, wait_ms=9, allreduce_ms=0.5), rank=0),
                     worker_trace(fit_steps(5, input_ms=10, allreduce_ms=0.5), rank=1),
                     worker_trace(fit_steps(5, wait_ms=9, allreduce_ms=0.5), rank=2)])
    page = H.render(rep).replace("</body>", PROBE + "</body>")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2400",
         "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = Rects()
    dom.feed(proc.stdout)
    assert dom.body.get("data-probed") == "1", "the probe script did not run"
    assert rep["bottleneck"] in " ".join(dom.text)

    scale = dom.scale
    assert 0 < scale * max(s["step_ms"] for w in rep["workers"].values()
                           for s in w["steps"]) <= H._CHART_H
    by_key = {(r["data-rank"], int(r["data-index"]), r["data-category"]): r for r in dom.rects}
    assert len(by_key) == len(dom.rects) == 3 * 5 * len(R.CATEGORIES)
    for rank, w in rep["workers"].items():
        for i, s in enumerate(w["steps"]):
            stacked = 0.0
            for c in R.CATEGORIES:
                r = by_key[(rank, i, c)]
                assert float(r["data-ms"]) == s[c + "_ms"]
                drawn = float(r["data-drawn-h"])
                assert drawn == pytest.approx(s[c + "_ms"] * scale, abs=0.01)
                assert float(r["data-drawn-w"]) >= 3
                if drawn >= 2:
                    assert r["data-hit"] == "1", (rank, i, c)
                stacked += drawn
            assert stacked == pytest.approx(s["step_ms"] * scale, abs=0.05)
