"""``python -m tnp_train.profiler``: capture a profile from running workers, and report on one.

    python -m tnp_train.profiler capture --service localhost:6009,localhost:6010 \\
        --duration-ms 2000 logs/
    python -m tnp_train.profiler report logs/ [--json] [--html report.html]

``capture`` exits with 0 when every worker answered, 1 when some did not (the others' traces
are written, and it says which did not) or none did; ``report`` with 1 when there is no trace.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings


def _capture(args):
    from .experimental import client
    options = {k: v for k, v in (("host_tracer_level", args.host_tracer_level),
                                 ("python_tracer_level", args.python_tracer_level),
                                 ("device_tracer_level", args.device_tracer_level),
                                 ("delay_ms", args.delay_ms)) if v is not None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the failures are printed below
        try:
            out = client.trace(args.service, args.logdir, args.duration_ms,
                               worker_list=args.worker_list,
                               num_tracing_attempts=args.num_tracing_attempts,
                               options=options or None)
        except (ConnectionError, ValueError) as e:
            print(f"capture failed: {e}", file=sys.stderr)
            return 1
    for path in out["files"]:
        print(f"wrote {path}")
    print(f"wrote {out['merged']}")
    for addr, why in out["failed"].items():
        print(f"no trace from {addr}: {why}", file=sys.stderr)
    return 1 if out["failed"] else 0


def _report(args):
    from . import html, report
    try:
        rep = report.report(args.logdir, run=args.run)
    except (FileNotFoundError, ValueError) as e:
        print(f"report failed: {e}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(rep, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report.format_text(rep, top=args.top))
    if args.html:
        html.write(args.html, rep, top=args.top)
        print(f"wrote {args.html}", file=sys.stderr if args.json else sys.stdout)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tnp_train.profiler",
                                     description="tnp_train's profiler: capture and report.")
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="record DURATION ms of running workers into LOGDIR")
    cap.add_argument("--service", required=True,
                     help="the workers' profiler servers: host:port[,host:port...]")
    cap.add_argument("--duration-ms", type=int, required=True)
    cap.add_argument("--num-tracing-attempts", type=int, default=3)
    cap.add_argument("--worker-list", default="",
                     help="the workers to ask (host[:port],...), when not --service's")
    cap.add_argument("--host-tracer-level", type=int, choices=(0, 1, 2, 3))
    cap.add_argument("--python-tracer-level", type=int, choices=(0, 1))
    cap.add_argument("--device-tracer-level", type=int, choices=(0, 1))
    cap.add_argument("--delay-ms", type=int)
    cap.add_argument("logdir")
    rep = sub.add_parser("report", help="the step-time breakdown of a run")
    rep.add_argument("logdir", help="a logdir (its newest run), a run folder or a trace file")
    rep.add_argument("--run", help="the run under LOGDIR/plugins/profile (default: the newest)")
    rep.add_argument("--json", action="store_true", help="print the report as JSON")
    rep.add_argument("--html", metavar="FILE", help="also write the report as an HTML page")
    rep.add_argument("--top", type=int, default=20, help="rows of the per-span tables")
    args = parser.parse_args(argv)
    return _capture(args) if args.command == "capture" else _report(args)


if __name__ == "__main__":
    sys.exit(main())
