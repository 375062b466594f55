"""The bottleneck sentence for each case: input-, compute-, communication-, checkpoint-bound,
untraced host time, and one slow rank that the others wait for. The traces are built so each
figure of the sentence can be computed by hand (in the comments)."""
from prof_traces import X, fit_steps, worker_trace
from tnp_train.profiler import report as R


def sentence(*traces):
    return R.analyze(list(traces))["bottleneck"]


def test_single_rank_input_bound():
    # step = 0.25*4 + 6 + 3 + 4 + 1 = 15 ms, input 6 ms = 40% (>= TF's 20%)
    tr = worker_trace(fit_steps(4, input_ms=6, gap_ms=0.25))
    assert sentence(tr) == "rank 0 is input-bound: 40% of its step waits for data"


def test_single_rank_compute_bound():
    # step 20 ms: input 1, forward 6, backward 10, optimizer 2, other 1
    tr = worker_trace(fit_steps(3, input_ms=1, forward_ms=6, backward_ms=10, optimizer_ms=2,
                                gap_ms=0.25))
    assert sentence(tr) == ("rank 0 is compute-bound: 90% of its step is computation "
                            "(forward 30%, backward 50%, optimizer 10%)")


def test_balanced_ranks_communication_bound():
    # every rank: step 20 = input 1 + forward 2 + backward 3 + optimizer 1 + transfer 10
    # + wait 2 + other 1; the waits are equal, so nobody is the slow one
    traces = [worker_trace(fit_steps(3, input_ms=1, forward_ms=2, backward_ms=3, optimizer_ms=1,
                                     allreduce_ms=10, wait_ms=2, gap_ms=0.25), rank=r)
              for r in range(3)]
    assert sentence(*traces) == ("all 3 ranks are communication-bound: 60% of each step is in "
                                 "collectives (all-reduce transfer 50%, waiting for other ranks "
                                 "10%)")


def test_balanced_ranks_input_bound():
    traces = [worker_trace(fit_steps(2, input_ms=6, gap_ms=0.25), rank=r) for r in range(2)]
    assert sentence(*traces) == "all 2 ranks are input-bound: 40% of each step waits for data"


def test_issue_example_one_input_bound_rank_and_three_waiting():
    # rank 1: step 100 = input 41 + forward 20 + backward 30 + optimizer 5 + other 4.
    # ranks 0, 2, 3: input 3, the same compute, and 38 ms waiting in the all-reduce.
    common = dict(forward_ms=20, backward_ms=30, optimizer_ms=5, gap_ms=1)
    traces = [worker_trace(fit_steps(3, input_ms=3, wait_ms=38, allreduce_ms=0.0001, **common),
                           rank=r) for r in (0, 2, 3)]
    traces.insert(1, worker_trace(fit_steps(3, input_ms=41, **common), rank=1))
    assert sentence(*traces) == ("rank 1 is input-bound: 41% of its step waits for data; "
                                 "ranks 0, 2, 3 wait 38 ms for it")


def test_slow_rank_in_untraced_code():
    # rank 1 sleeps 30 ms inside each step outside any span: of its 43 ms step, 1 + 3 + 4 + 1
    # + 1 ms are traced, 33 ms (77%) are not; rank 0 waits for it 30 ms in each all-reduce
    r0 = worker_trace(fit_steps(3, wait_ms=30, allreduce_ms=1), rank=0)
    evs1 = []
    for n, t0 in enumerate((0, 50, 100)):
        evs1 += [X("step", "step", t0, 43, args={"step_num": n}),
                 X("next", "input", t0 + 0.5, 1), X("dense", "forward", t0 + 2, 3),
                 X("backward", "backward", t0 + 5.5, 4), X("wait", "wait", t0 + 9.5, 0),
                 X("allreduce", "collective", t0 + 9.5, 1),
                 X("apply", "optimizer", t0 + 41.5, 1)]
    r1 = worker_trace(evs1, rank=1)
    s = sentence(r0, r1)
    assert s == ("rank 1 is slowed by untraced host work: 77% of its step is outside the traced "
                 "spans (other); rank 0 waits 30 ms for it")


def test_slow_rank_in_backward_with_others_waiting():
    # rank 2's backward is 12 ms longer; ranks 0 and 1 wait 12 ms for it. Its step: 4 gaps of
    # 0.5 + input 1 + forward 3 + backward 16 + transfer 0.5 + optimizer 1 = 23.5 ms, 68% backward
    others = [worker_trace(fit_steps(2, backward_ms=4, wait_ms=12, allreduce_ms=0.5), rank=r)
              for r in (0, 1)]
    slow = worker_trace(fit_steps(2, backward_ms=16, allreduce_ms=0.5), rank=2)
    assert sentence(*others, slow) == ("rank 2 is compute-bound: 68% of its step is in the "
                                       "backward pass; ranks 0, 1 wait 12 ms for it")


def test_jitter_below_the_threshold_is_not_a_slow_rank():
    # waits differ by 0.3 ms on a 12 ms step (2.5% < 5%): balanced, compute-bound
    a = worker_trace(fit_steps(2, wait_ms=0.4, allreduce_ms=0.5), rank=0)
    b = worker_trace(fit_steps(2, wait_ms=0.1, allreduce_ms=0.5), rank=1)
    assert sentence(a, b).startswith("all 2 ranks are compute-bound")


def test_checkpoint_bound():
    evs = [X("step", "step", 0, 10), X("dense", "forward", 0, 2), X("save", "checkpoint", 2, 8)]
    assert sentence(worker_trace(evs)) == ("rank 0 is checkpoint-bound: 80% of its step writes "
                                           "checkpoints")


def test_untraced_host_time_dominates():
    evs = [X("step", "step", 0, 10), X("dense", "forward", 0, 2)]
    assert sentence(worker_trace(evs)) == (
        "rank 0 is slowed by untraced host work: 80% of its step is outside the traced spans "
        "(other); capture with host_tracer_level=3 to see its operations")


def test_no_steps():
    tr = worker_trace([X("dense", "forward", 0, 2)])
    assert sentence(tr).startswith("no training steps in the trace")
    assert sentence().startswith("no training steps in the trace")


def test_a_rank_without_steps_is_left_out():
    busy = worker_trace(fit_steps(2, input_ms=6, gap_ms=0.25), rank=0)
    idle = worker_trace([], rank=1)
    assert sentence(busy, idle) == "rank 0 is input-bound: 40% of its step waits for data"
