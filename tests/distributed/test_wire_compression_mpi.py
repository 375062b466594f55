"""Gradient compression (``CommunicationOptions(compression=Compression.fp16 | .bf16)``) in
real 2-rank ``mpiexec`` jobs, over the shared-memory buckets (the default on one machine) and
over MPI's messages (``TNP_COLLECTIVE_SHM=0``): compressed training matches uncompressed to
the precision of the wire dtype, every rank holds the same bits, the bytes handed to the
all-reduces for the gradients halve, and the refusals come on every rank alike. The arithmetic
itself (each step's sums equal NumPy's sums in the wire dtype) is checked with threads in
tests/tnp_train/distribute/test_wire_compression.py."""
import numpy as np
import pytest


# a job takes about 10 s on 2 idle cores; the bound is 10 times that and more
pytestmark = pytest.mark.timeout(200)


@pytest.mark.parametrize("shm", ["1", "0"])
def test_compressed_fit_on_two_ranks(mpirun, tmp_path, shm):
    job = mpirun("mw_compression.py", 2, timeout=180, args=(tmp_path,),
                 env={"TNP_COLLECTIVE_SHM": shm})
    assert job.returncode == 0 and not job.timed_out, str(job)
    ranks = [np.load(tmp_path / f"{r}.npz") for r in (0, 1)]
    for got in ranks:
        ref = got["none_final"]
        params, n_vars = int(got["params"]), int(got["n_vars"])
        none_bytes = got["none_bytes"][1:]       # after the first step, which lays them out
        assert len(set(none_bytes.tolist())) == 1 and len(got["none_bytes"]) == 20
        for compression, tol in (("fp16", 2e-3), ("bf16", 1e-2)):
            final = got[f"{compression}_final"]
            # 20 steps of SGD with momentum on gradients rounded to 11 (8) significant bits
            np.testing.assert_allclose(final, ref, rtol=tol, atol=tol, err_msg=compression)
            assert not np.array_equal(final, ref), compression
            # the gradients and their presence flags (one per variable) in 2 bytes, not 4;
            # the metrics' state that rides with them is the same
            step_bytes = got[f"{compression}_bytes"]
            assert len(step_bytes) == 20
            assert (none_bytes[0] - step_bytes == 2 * (params + n_vars)).all(), \
                (compression, step_bytes, none_bytes[0])
            assert step_bytes[0] / none_bytes[0] < 0.55
        assert "compression fp16 applies to floating gradients; variable 'phase" in \
            str(got["complex"])
        assert str(got["overflow_0"]) == "no error"
        # only rank 1's gradient overflowed: both ranks raise
        assert "the gradients of 'big" in str(got["overflow_1"]), str(got["overflow_1"])
        assert "do not fit in fp16" in str(got["overflow_1"])
    for key in ("none_final", "fp16_final", "bf16_final"):
        assert ranks[0][key].tobytes() == ranks[1][key].tobytes(), key
