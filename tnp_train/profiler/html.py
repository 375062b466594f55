"""The report as one self-contained HTML page: the bottleneck, a stacked bar per step for every
worker (inline SVG, one scale for all workers, so a slow rank stands out), the median table and
each worker's spans by self time. Nothing is fetched: no script, no external style sheet or
font, so the page opens offline and from a mail attachment.

Every bar segment carries ``data-rank``, ``data-step``, ``data-index`` (the step's position in
the worker's list), ``data-category`` and ``data-ms`` (the value of the report's JSON), so tools
and tests can read the figures back from the page.
"""
from __future__ import annotations

import html
import math
import os

from tnp_train.checkpoint._io import atomic_write_bytes

from .report import CATEGORIES

__all__ = ["COLORS", "render", "write"]

# Tableau 10: distinct for the common forms of colour blindness, readable on white
COLORS = {"input": "#e15759", "forward": "#4e79a7", "backward": "#f28e2b",
          "optimizer": "#59a14f", "allreduce": "#b07aa1", "wait": "#bab0ac",
          "checkpoint": "#edc948", "other": "#9c755f"}
_LABELS = {"input": "input", "forward": "forward", "backward": "backward",
           "optimizer": "optimizer", "allreduce": "all-reduce transfer",
           "wait": "waiting for other ranks", "checkpoint": "checkpoint", "other": "other host"}

_CHART_H = 180          # px of the tallest step
_TOP, _BOTTOM, _LEFT, _RIGHT = 12, 28, 56, 12
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 24px 0 4px; }
.bottleneck { font-size: 16px; padding: 8px 12px; background: #fff4e5;
              border-left: 4px solid #f28e2b; }
.warning { color: #b00020; }
.source, .note { color: #666; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { padding: 2px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child, td.name, th.name { text-align: left; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px;
            vertical-align: -1px; }
"""


def _e(x):
    return html.escape(str(x), quote=True)


def _nice_step(top):
    """A round tick interval (1, 2, 2.5 or 5 times a power of ten) giving 4 to 8 ticks."""
    if top <= 0:
        return 1.0
    raw = top / 4
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _fmt(x):
    return f"{x:.3f}".rstrip("0").rstrip(".") if x else "0"


def _chart(rank, steps, top_ms, tick_ms):
    n = len(steps)
    bar_w = max(3.0, min(28.0, 900.0 / max(n, 1)))
    gap = max(1.0, bar_w / 4)
    width = _LEFT + n * (bar_w + gap) + _RIGHT
    height = _TOP + _CHART_H + _BOTTOM
    scale = _CHART_H / top_ms if top_ms > 0 else 0.0
    base = _TOP + _CHART_H
    out = [f'<svg class="steps" data-rank="{_e(rank)}" data-scale="{scale!r}" '
           f'width="{width:.1f}" height="{height}" viewBox="0 0 {width:.1f} {height}" '
           f'role="img" aria-label="step-time breakdown of worker {_e(rank)}">']
    for k in range(int(round(top_ms / tick_ms)) + 1 if top_ms > 0 else 0):
        v = k * tick_ms
        y = base - v * scale
        out.append(f'<line x1="{_LEFT - 4}" x2="{width - _RIGHT:.1f}" y1="{y:.2f}" y2="{y:.2f}" '
                   'stroke="#eee"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.2f}" text-anchor="end">{_fmt(v)} ms</text>')
    label_every = max(1, int(40 // (bar_w + gap)) + 1)
    for index, s in enumerate(steps):
        x = _LEFT + index * (bar_w + gap)
        y = base
        out.append(f'<g class="step" data-rank="{_e(rank)}" data-step="{_e(s["step"])}" '
                   f'data-index="{index}" data-ms="{_e(s["step_ms"])}">')
        for cat in CATEGORIES:
            ms = s[cat + "_ms"]
            h = ms * scale
            y -= h
            out.append(f'<rect class="bar" data-rank="{_e(rank)}" data-step="{_e(s["step"])}" '
                       f'data-index="{index}" data-category="{cat}" data-ms="{_e(ms)}" '
                       f'x="{x:.2f}" y="{y:.3f}" width="{bar_w:.2f}" height="{h:.3f}" '
                       f'fill="{COLORS[cat]}"><title>worker {_e(rank)}, step {_e(s["step"])}: '
                       f'{_LABELS[cat]} {_e(ms)} ms of {_e(s["step_ms"])} ms</title></rect>')
        out.append("</g>")
        if index % label_every == 0:
            out.append(f'<text x="{x + bar_w / 2:.2f}" y="{base + 14}" text-anchor="middle">'
                       f'{_e(s["step"])}</text>')
    out.append(f'<text x="{_LEFT - 6}" y="{base + 14}" text-anchor="end">step</text>')
    out.append("</svg>")
    return "\n".join(out)


def _html_table(header, rows, name_cols=()):
    head = "".join(f'<th class="name">{_e(h)}</th>' if i in name_cols else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(header))
    body = "\n".join("<tr>" + "".join(
        f'<td class="name">{_e(c)}</td>' if i in name_cols else f"<td>{_e(c)}</td>"
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def render(rep, top=20, title="tnp_train profile"):
    """The page of report dict ``rep`` (``tnp_train.profiler.report.report``'s), as a string."""
    workers = rep["workers"]
    max_ms = max((s["step_ms"] for w in workers.values() for s in w["steps"]), default=0.0)
    # one axis for every worker, up to the round tick above the longest step
    tick_ms = _nice_step(max_ms)
    top_ms = math.ceil(max_ms / tick_ms - 1e-9) * tick_ms if max_ms > 0 else 0.0
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{_e(title)}</title>", f"<style>{_STYLE}</style></head><body>",
             f"<h1>{_e(title)}</h1>"]
    if rep.get("source"):
        parts.append(f'<p class="source">{_e(rep["source"])}</p>')
    parts.append(f'<p class="bottleneck" id="bottleneck"><b>Bottleneck:</b> '
                 f'{_e(rep["bottleneck"])}</p>')
    if rep.get("dropped_events"):
        parts.append(f'<p class="warning">{_e(rep["dropped_events"])} events were dropped (the '
                     "trace buffer was full): the breakdown undercounts.</p>")
    parts.append('<p class="legend">' + "".join(
        f'<span data-category="{c}"><i style="background:{COLORS[c]}"></i>{_e(_LABELS[c])}'
        "</span>" for c in CATEGORIES) + "</p>")
    parts.append('<p class="note">Each bar is one step of the worker\'s main thread, split by '
                 "where its time went (the innermost span wins); all workers share one scale.</p>")
    for rank, w in workers.items():
        host = f" ({_e(w['host'])})" if w.get("host") else ""
        parts.append(f'<section class="worker" data-rank="{_e(rank)}">')
        parts.append(f"<h2>worker {_e(rank)}{host}: {len(w['steps'])} steps</h2>")
        if w["steps"]:
            parts.append(_chart(rank, w["steps"], top_ms, tick_ms))
        else:
            parts.append('<p class="note">no training steps recorded on this worker</p>')
        if w.get("threads"):
            parts.append('<p class="note">other threads (not in the bars): ' + ", ".join(
                f"{_e(t['name'])} {_e(t['busy_ms'])} ms busy" for t in w["threads"]) + "</p>")
        parts.append("</section>")
    parts.append("<h2>Median per step (ms)</h2>")
    rows = [[rank, w.get("host") or "-", len(w["steps"]), f"{w['median']['step_ms']:.3f}"]
            + [f"{w['median'][c + '_ms']:.3f}" for c in CATEGORIES]
            for rank, w in workers.items()]
    parts.append(_html_table(["rank", "host", "steps", "step"] + [_LABELS[c] for c in CATEGORIES],
                             rows, name_cols={1}))
    for rank, w in workers.items():
        ops = w.get("ops", [])[:top]
        if not ops:
            continue
        parts.append(f"<h2>worker {_e(rank)}: spans by self time (top {len(ops)} of "
                     f"{len(w['ops'])})</h2>")
        parts.append(_html_table(
            ["name", "category", "calls", "self ms", "mean self ms", "total ms"],
            [[r["name"], r["cat"], r["calls"], f"{r['self_ms']:.3f}",
              f"{r['mean_self_ms']:.3f}", f"{r['total_ms']:.3f}"] for r in ops],
            name_cols={0, 1}))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write(path, rep, top=20, title="tnp_train profile"):
    """Write the page of ``rep`` to ``path`` (atomically)."""
    atomic_write_bytes(os.fspath(path), render(rep, top=top, title=title).encode("utf-8"))
