"""The XSpace file the profiler writes for TensorBoard's Profile tab (``<host>.xplane.pb``).

Two references read it. TF's own ``XSpace`` class: tests/fixtures/make_xplane_fixture.py had
it parse our encoding of a trace that holds every kind of stat and event, drop what it does not
know and serialize the rest (``xplane_tf.pb``), and wrote down its reading (``xplane_tf.json``);
here our bytes of the same trace must decode to the same fields as TF's, and TF's reading must
say what the trace says. And the profile plugin's own converter (the ``xprof`` package, when
installed): the tools it lists, the trace viewer's events and the overview page's steps of a
real ``fit`` profile."""
import json
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
import trace_checks as tc
from tnp_train.profiler.merge import read_trace
from tnp_train.profiler.xplane import xplane_file_name, xspace_bytes

FIX = Path(__file__).resolve().parents[2] / "fixtures"

# which fields hold an embedded message, by (message, field number): the structure the decoder
# below needs to go down; the numbers compared are the ones on the wire, ours against TF's
_SUB = {("XSpace", 1): "XPlane", ("XPlane", 3): "XLine", ("XPlane", 4): "EventMetadataEntry",
        ("XPlane", 5): "StatMetadataEntry", ("XPlane", 6): "XStat", ("XLine", 4): "XEvent",
        ("XEvent", 4): "XStat", ("EventMetadataEntry", 2): "XEventMetadata",
        ("StatMetadataEntry", 2): "XStatMetadata", ("XEventMetadata", 5): "XStat"}
_MAPS = {("XPlane", 4), ("XPlane", 5)}


def _varint(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def decode(data, message="XSpace"):
    """A protobuf message as ``{field number: [values]}``; varints as ints, 64-bit fields as
    bytes, length-delimited fields as bytes or, where ``_SUB`` says, decoded messages (map
    entries sorted: their order on the wire is free)."""
    out, i = {}, 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
            if (message, field) in _SUB:
                value = decode(value, _SUB[(message, field)])
        else:
            raise AssertionError(f"wire type {wire} in {message}")
        out.setdefault(field, []).append(value)
    for m, field in _MAPS:
        if m == message and field in out:
            out[field].sort(key=lambda entry: entry.get(1, [0]))
    return out


def _fixture():
    with open(FIX / "xplane_trace.json") as f:
        return json.load(f)


def test_tf_reads_every_field_we_write():
    fx = _fixture()
    ours = xspace_bytes(fx["trace"], fx["host"], fx["epoch_offset_us"])
    theirs = (FIX / "xplane_tf.pb").read_bytes()
    assert decode(ours) == decode(theirs)


def test_tfs_reading_says_what_the_trace_says():
    fx = _fixture()
    tr, meta = fx["trace"], fx["trace"]["metadata"]
    with open(FIX / "xplane_tf.json") as f:
        space = json.load(f)
    assert space["hostnames"] == ["node1"] and space["errors"] == []
    assert space["warnings"] == ["2 events were dropped: the trace buffer holds 1000 events "
                                 "per process"]
    host, task = space["planes"]
    assert host["name"] == "/host:CPU" and task["name"] == "Task Environment"
    # one line per thread, named as in the trace, a thread without events included
    assert [(ln["id"], ln["name"], ln["display_name"]) for ln in host["lines"]] == [
        (0, "main", "main"),
        (3, "input pipeline (tt.data.prefetch)", "input pipeline (tt.data.prefetch)"),
        (5, "idle thread", "idle thread")]
    # times: the lines start at the earliest event, on worker 0's clock, in Unix-epoch ns
    start_us = 990.0
    base_ns = round((start_us + meta["clock_offset_us"] + fx["epoch_offset_us"]) * 1000)
    assert {ln["timestamp_ns"] for ln in host["lines"]} == {base_ns}
    assert all(ln["duration_ps"] == round((meta["stop_us"] - start_us) * 1e6)
               for ln in host["lines"])
    assert [s[:2] for s in task["stats"]] == [["profile_start_time", "int64_value"],
                                              ["profile_stop_time", "int64_value"]]
    assert task["stats"][0][2] == base_ns
    spans = {0: [], 3: [], 5: []}
    for e in tr["traceEvents"]:
        if e["ph"] != "M":
            spans[e["tid"]].append(e)
    for line in host["lines"]:
        # by start, a parent before a child that starts with it
        want = sorted(spans[line["id"]], key=lambda e: (e["ts"], -e.get("dur", 0.0)))
        assert len(line["events"]) == len(want)
        for got, ev in zip(line["events"], want):
            assert got["offset_ps"] == round((ev["ts"] - start_us) * 1e6)
            assert got["duration_ps"] == round(ev.get("dur", 0.0) * 1e6)
            # ops carry TF's "<scope>:<Type>" name and show ours; steps and traces keep theirs
            shown = got["display_name"] or got["name"]
            assert shown == ev["name"], got
            stats = {name: (kind, value) for name, kind, value in got["stats"]}
            assert stats["cat"] == ("str_value", ev["cat"])
            if ev["cat"] == "step":
                # TF's step marker, step_num 0 included (a oneof value is there even when 0)
                assert stats["_r"] == ("int64_value", 1)
                assert stats["step_num"] == ("int64_value", ev["args"]["step_num"])
                assert got["display_name"] == ""
    events = {(e["display_name"] or e["name"]): e for e in host["lines"][0]["events"]}
    assert events["dense"]["name"] == "dense:Dense"
    assert events["dénse_1 ☃"]["name"] == "d/nse_1:Dense"
    assert events["dense._make_backward (backward)"]["name"] == "dense/_make_backward:Backward"
    assert events["IteratorGetNext"]["name"] == "IteratorGetNext:IteratorGetNext"
    assert events["allreduce"]["name"] == "allreduce:Collective"
    assert events["wait for ranks"]["name"] == "wait/for/ranks:WaitForRanks"
    assert events["my span"]["name"] == "my span" and events["marker"]["duration_ps"] == 0
    coll = {n: (k, v) for n, k, v in events["allreduce"]["stats"]}
    assert coll["seq"] == ("int64_value", 7) and coll["bytes"] == ("int64_value", 1 << 40)
    assert coll["entered_us"] == ("double_value", 1500.125)
    opt = {n: (k, v) for n, k, v in events["SGD.apply_gradients"]["stats"]}
    assert opt == {"cat": ("str_value", "optimizer"), "negative": ("int64_value", -3),
                   "flag": ("int64_value", 1), "ratio": ("double_value", 0.5),
                   "shape": ("str_value", "[2, 3]"), "none": ("str_value", "null"),
                   "huge": ("str_value", str(1 << 70)), "nan": ("str_value", "NaN"),
                   "empty": ("str_value", "")}


def test_file_names_list_a_host_per_worker():
    assert xplane_file_name("vm", 0, 1) == "vm.xplane.pb"                  # TF's name
    assert xplane_file_name("vm", 1, 2) == "vm_rank1.xplane.pb"
    assert xplane_file_name("a b/c", 3, 4) == "a_b_c_rank3.xplane.pb"
    assert xplane_file_name("", 0, 1) == "localhost.xplane.pb"


# -- the plugin's converter --------------------------------------------------------------------

def _profile_fit(logdir, epochs=1):
    rng = np.random.default_rng(0)
    x = tnp.asarray(rng.normal(size=(128, 8)).astype("float32"))
    y = tnp.asarray(rng.integers(0, 3, size=128))
    model = tt.Sequential([tt.Input((8,)), tt.layers.Dense(16, activation="relu", name="hidden"),
                           tt.layers.Dense(3, name="logits")])
    model.compile(optimizer="adam",
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, verbose=0)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(32).prefetch(2)
    tt.profiler.experimental.start(logdir)
    model.fit(ds, epochs=epochs, verbose=0)
    return tt.profiler.experimental.stop()


def _convert(paths, tool, **options):
    pytest.importorskip("xprof")
    from xprof.convert import raw_to_tool_data
    params = {"trace_viewer_options": dict(options, format="json"), "hosts": []}
    data = raw_to_tool_data.xspace_to_tool_data([str(p) for p in paths], tool, params)
    data = data[0] if isinstance(data, tuple) else data
    return json.loads(data)


def test_the_plugin_shows_a_fit_profile(tmp_path):
    pytest.importorskip("xprof")
    from xprof.convert import raw_to_tool_data
    from xprof.profile_plugin import hosts_from_xplane_filenames
    run_dir = _profile_fit(str(tmp_path))
    workers, _ = tc.run_files(run_dir)
    (trace,) = workers.values()
    host = trace["metadata"]["host"]
    path = os.path.join(run_dir, xplane_file_name(host, 0, 1))
    assert os.path.isfile(path), os.listdir(run_dir)
    # the plugin lists a host per *.xplane.pb, by the file's name
    xplanes = [n for n in os.listdir(run_dir) if n.endswith(".xplane.pb")]
    assert hosts_from_xplane_filenames(xplanes, "trace_viewer@") == [host]
    tools = raw_to_tool_data.xspace_to_tool_names([path])
    assert {"trace_viewer@", "overview_page", "framework_op_stats"} <= set(tools), tools

    steps = sorted(tc.spans(trace, "step"), key=lambda e: e["args"]["step_num"])
    assert len(steps) == 4
    viewer = _convert([path], "trace_viewer")
    got = [e for e in viewer["traceEvents"] if e.get("ph") == "X"]
    threads = {e["args"]["name"] for e in viewer["traceEvents"] if e.get("name") == "thread_name"}
    assert "main" in threads and any(t.startswith("input pipeline") for t in threads), threads
    # every recorded span is there, under our name, with our duration; the plugin names a step
    # "<name> <step_num>" after TF's step marker and groups what happens inside it
    ours = sorted((e["name"], round(e["dur"], 3)) for e in tc.spans(trace))
    shown = sorted((e["name"] if e["args"].get("cat") != "step" else
                    e["name"].rsplit(" ", 1)[0], round(e["dur"], 3)) for e in got)
    assert shown == ours
    step_names = [e["name"] for e in got if e["args"].get("cat") == "step"]
    assert step_names == [f"train {s['args']['step_num']}" for s in steps]
    layers = [e for e in got if e["name"] in ("hidden", "logits")]
    assert len(layers) == 2 * len(steps) and all("group_id" in e["args"] for e in layers)

    # the overview page's step-time graph: one row per step, of our step's length
    overview = _convert([path], "overview_page")
    table = next(t for t in overview if t["cols"][0]["id"] == "stepnum")
    rows = {r["c"][0]["v"]: r["c"][-1]["v"] for r in table["rows"]}
    assert sorted(rows) == sorted(step_names)
    for s in steps:
        assert math.isclose(rows[f"train {s['args']['step_num']}"], s["dur"] / 1e3,
                            abs_tol=1e-3)
    # the layers count as framework ops, by class
    ops = _convert([path], "framework_op_stats")[0]
    kinds = {(r["c"][2]["v"], r["c"][3]["v"]) for r in ops["rows"]}
    assert {("Dense", "hidden"), ("Dense", "logits"), ("IteratorGetNext", "IteratorGetNext")} \
        <= kinds, kinds


def test_capture_client_writes_the_xspace_too(tmp_path):
    from tnp_train.profiler.experimental import client, server
    addr = server.start(0)
    try:
        done = {}
        t = threading.Thread(target=lambda: done.update(
            client.trace(addr, str(tmp_path), duration_ms=300)))
        t.start()
        step = 0
        while t.is_alive():                     # training goes on meanwhile
            with tt.profiler.experimental.Trace("train", step_num=step, _r=1):
                tnp.ones((64, 64)) @ tnp.ones((64, 64))
            step += 1
        t.join()
    finally:
        server.stop()
    names = sorted(os.listdir(done["run_dir"]))
    host = read_trace(done["files"][0])["metadata"]["host"]
    assert xplane_file_name(host, 0, 1) in names, names
