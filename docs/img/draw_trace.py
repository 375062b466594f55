"""Draws a (merged) trace file as a timeline page, one row per worker's thread and one box per
span, as Perfetto lays it out; docs/img/merged_trace.png is a headless-Chromium screenshot of
its output (Perfetto's own UI needs the network).

    python docs/img/draw_trace.py TRACE.json.gz OUT.html [--steps 3]
    chromium --headless --screenshot=docs/img/merged_trace.png --window-size=1400,520 OUT.html
"""
import argparse
import html
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tnp_train.profiler.merge import read_trace  # noqa: E402

COLORS = {"step": "#dddddd", "input": "#e15759", "forward": "#4e79a7", "backward": "#f28e2b",
          "optimizer": "#59a14f", "collective": "#b07aa1", "wait": "#bab0ac",
          "checkpoint": "#edc948", "op": "#76b7b2", "trace": "#cccccc"}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=3, help="how many steps of rank 0 to show")
    args = ap.parse_args(argv)
    events = [e for e in read_trace(args.trace)["traceEvents"] if e.get("ph") == "X"]
    names = {}
    for e in read_trace(args.trace)["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            names[(e["name"], e["pid"], e.get("tid"))] = e["args"]["name"]
    steps = sorted((e for e in events if e["cat"] == "step" and e["pid"] == 0),
                   key=lambda e: e["ts"])
    first = steps[len(steps) // 2]
    last = steps[min(len(steps) - 1, len(steps) // 2 + args.steps - 1)]
    t0, t1 = first["ts"], last["ts"] + last["dur"]
    rows = sorted({(e["pid"], e["tid"]) for e in events
                   if e["ts"] < t1 and e["ts"] + e["dur"] > t0})
    width, label_w, row_h = 1300, 230, 22
    scale = (width - label_w) / (t1 - t0)
    depth_of = {}
    svg = []
    y = 30
    for pid, tid in rows:
        row = sorted((e for e in events if (e["pid"], e["tid"]) == (pid, tid)
                      and e["ts"] < t1 and e["ts"] + e["dur"] > t0),
                     key=lambda e: (e["ts"], -e["dur"]))
        stack, depth_of = [], {}
        for e in row:
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            depth_of[id(e)] = len(stack)
            stack.append(e["ts"] + e["dur"])
        levels = max(depth_of.values(), default=0) + 1
        proc = names.get(("process_name", pid, None), f"worker {pid}")
        thread = names.get(("thread_name", pid, tid), f"thread {tid}")
        svg.append(f'<text x="4" y="{y + 14}" font-size="12">{html.escape(proc)} / '
                   f'{html.escape(thread)}</text>')
        for e in row:
            x = label_w + max(0.0, e["ts"] - t0) * scale
            w = max(1.0, (min(e["ts"] + e["dur"], t1) - max(e["ts"], t0)) * scale)
            yy = y + depth_of[id(e)] * row_h
            color = COLORS.get(e["cat"], "#999999")
            svg.append(f'<rect x="{x:.1f}" y="{yy}" width="{w:.1f}" height="{row_h - 2}" '
                       f'fill="{color}" stroke="#ffffff" stroke-width="0.5"><title>'
                       f'{html.escape(e["name"])} ({e["cat"]}) {e["dur"] / 1000:.2f} ms'
                       f'</title></rect>')
            if w > 60:
                svg.append(f'<text x="{x + 3:.1f}" y="{yy + 14}" font-size="10" '
                           f'fill="#000">{html.escape(e["name"][:int(w / 6)])}</text>')
        y += levels * row_h + 16
    legend = " ".join(f'<span style="background:{c};padding:2px 6px;margin-right:4px">{k}'
                      f'</span>' for k, c in COLORS.items())
    page = (f'<!doctype html><html><body style="font-family:sans-serif;margin:10px">'
            f'<div style="font-size:13px;margin-bottom:6px">{html.escape(Path(args.trace).name)}:'
            f' {len(rows)} threads, {(t1 - t0) / 1000:.1f} ms from step '
            f'{first["args"].get("step_num")} of rank 0 &nbsp; {legend}</div>'
            f'<svg width="{width}" height="{y}">{"".join(svg)}</svg></body></html>')
    Path(args.out).write_text(page)


if __name__ == "__main__":
    main()
