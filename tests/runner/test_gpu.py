"""CUDA end to end (cupy kernels through NVRTC). Run on a GPU host:
python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner -m gpu"""

import time

import pytest

from runner import bench

from . import sources

pytestmark = pytest.mark.gpu

SOFTMAX = sources.cuda_softmax_problem(256, 4096)


def test_cupy_kernel_is_accepted_and_compiles_fast(cuda_pool):
    result = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=1)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    assert result["precision"] == "fp32"
    assert result["compile"]["seconds"] < 1.0
    assert result["environment"]["cuda"] and result["environment"]["device_name"]
    assert result["timing"]["median_ms"] > 0


def test_bench_kernel_is_accepted_on_the_big_softmax(cuda_pool):
    result = cuda_pool.evaluate(bench.problem_source("cuda"), bench.kernel_source("cuda"), seed=2)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    assert result["quarantined"] is False, result["quarantine_reason"]


def test_nvrtc_compile_error_is_reported(cuda_pool):
    result = cuda_pool.evaluate(SOFTMAX, sources.CUPY_COMPILE_ERROR, seed=3)
    assert result["status"] == "compile_error"
    assert "not_declared" in result["compile"]["log"]


def test_torch_computation_is_rejected_on_cuda(cuda_pool):
    result = cuda_pool.evaluate(SOFTMAX, sources.SOFTMAX_BY_TORCH, seed=4)
    assert result["status"] == "rejected"


def test_illegal_address_then_the_next_kernel_is_judged_right(cuda_pool):
    bad = cuda_pool.evaluate(SOFTMAX, sources.CUPY_ILLEGAL_ADDRESS, seed=5)
    assert bad["status"] in ("runtime_error", "crashed"), bad
    good = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=5)
    assert good["status"] == "correct", good["reason"]


def test_spinning_kernel_is_stopped_on_its_first_call_then_the_next_kernel_is_judged_right(cuda_pool):
    started = time.monotonic()  # the kernel spins from its first launch, inside forward's own synchronize
    spin = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SPIN, seed=6, timeout=120)
    assert spin["status"] == "timeout"
    assert "call 1 of forward waited" in spin["reason"], spin["reason"]
    # the watchdog's 5 s, not the run's 120 s; the rest is the wait for the device and the sandbox (64 s seen
    # with ten GPU test processes beside it, 22 s alone)
    assert time.monotonic() - started < 100
    good = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=6)
    assert good["status"] == "correct", good["reason"]


def test_work_on_a_side_stream_is_caught(cuda_pool):
    side = bench.kernel_source("cuda").replace(
        "with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):",
        "with SIDE:").replace("class ModelNew", "SIDE = cupy.cuda.Stream(non_blocking=True)\n\n\nclass ModelNew")
    result = cuda_pool.evaluate(bench.problem_source("cuda"), side, seed=7)
    assert result["status"] in ("rejected", "incorrect"), result


def test_kernel_opting_in_to_large_shared_memory_is_accepted(cuda_pool):
    """Launch counting wraps cupy functions; attribute writes such as the opt-in to more than
    48 KB of dynamic shared memory must still reach the real kernel."""
    big_shared = sources.CUPY_SOFTMAX_KERNEL.replace(
        '.get_function("softmax_rows")',
        '.get_function("softmax_rows")\nKERNEL.max_dynamic_shared_size_bytes = 96 * 1024',
    ).replace("cupy.int64(x.shape[1])))", "cupy.int64(x.shape[1])), shared_mem=96 * 1024)")
    assert "shared_mem=96 * 1024" in big_shared
    result = cuda_pool.evaluate(SOFTMAX, big_shared, seed=8)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")


GPU_HOG = '''
import time
import torch
import torch.nn as nn

hog = torch.empty(6 * 1024**3, dtype=torch.uint8, device="cuda")  # 6 GiB, past the test's 2 GiB cap
torch.cuda.synchronize()
time.sleep(5)  # NVML is polled; an honest problem never waits here


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(64, device="cuda")]


def get_init_inputs():
    return []
'''


def test_gpu_memory_past_the_cap_is_oom_then_the_next_kernel_is_judged_right(cuda_pool, monkeypatch):
    import runner

    # only this pool's sandboxes get the small cap: the shared pool's replacements, started while the
    # variable is set, would keep it for the tests after this one
    with monkeypatch.context() as env:
        env.setenv("KERNELLAB_SANDBOX_GPU_MEMORY_MB", "2048")
        with runner.Pool(device="cuda", size=0) as pool:
            result = pool.validate(GPU_HOG, seed=0)
    assert result["status"] == "invalid"
    assert "GPU memory limit of 2048 MB" in result["reason"], result["reason"]
    honest = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=11)
    assert honest["status"] == "correct", honest["reason"]


# PyTorch's own wording for an allocation that did not fit: this process held 1 GiB, the device was full
OTHERS_OOM = ("CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which "
              "512.00 MiB is free. Including non-PyTorch memory, this process has 1.00 GiB memory in use.")


def test_an_oom_within_the_candidates_share_is_run_again_then_not_judged(cuda_pool):
    """An out-of-memory error that other work on the device caused is not the candidate's `oom`:
    it is run again, then handed back as the device's failure (DeviceBusy). The message here is
    forged by the candidate, which thereby gains nothing: no verdict at all."""
    from runner import DeviceBusy

    forged = sources.CUPY_SOFTMAX_KERNEL.replace(
        "        x = x.contiguous()\n", f"        raise RuntimeError({OTHERS_OOM!r})\n", 1)
    assert "RuntimeError" in forged
    with pytest.raises(DeviceBusy, match="within its own share"):
        cuda_pool.evaluate(SOFTMAX, forged, seed=12)
    honest = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=13)
    assert honest["status"] == "correct", honest["reason"]


def test_an_oom_past_the_candidates_share_stays_its_own(cuda_pool):
    greedy = OTHERS_OOM.replace("Tried to allocate 1.00 GiB", "Tried to allocate 900.00 GiB")
    forged = sources.CUPY_SOFTMAX_KERNEL.replace(
        "        x = x.contiguous()\n", f"        raise RuntimeError({greedy!r})\n", 1)
    result = cuda_pool.evaluate(SOFTMAX, forged, seed=14)
    assert result["status"] == "oom", result


# A degenerate problem (its output is all zeros) whose input and output are each 5% of the GPU's memory: its
# work before the device wait (the forward, then the degenerate check's copies and float64 truths) peaks near 40%
LARGE_ZEROS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 0.0


N = int(torch.cuda.get_device_properties(0).total_memory * 0.05) // 4


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''


def test_validations_too_large_to_share_the_gpu_wait_for_it_before_touching_it(runner_settings):
    """Three at once would need 120% of the device if each did that work before its device wait, as
    small problems do; sized on the meta device, each waits first. None runs out of memory: not in
    its forward (which would be retried: each validation's sandboxes are counted) nor in the
    degenerate check (which would leave the problem unchecked)."""
    import threading

    import runner

    results, taken = [None] * 3, []
    with runner.Pool(device="cuda", size=6) as pool:
        real_take = pool.take
        pool.take = lambda: taken.append(1) or real_take()

        def validate(i):  # distinct sources: none finds another's baseline in the cache
            results[i] = pool.validate(LARGE_ZEROS + f"\n# copy {i}\n", seed=i)

        threads = [threading.Thread(target=validate, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [r and r["status"] for r in results] == ["ok"] * 3, [r and r["reason"] for r in results]
    assert len(taken) == 3, "a validation ran out of memory and was run again"
    assert all("all zeros" in (r["degenerate"] or "") for r in results), [r["degenerate"] for r in results]


def test_do_bench_reference_is_announced_so_its_clocks_are_read(cuda_pool):
    # the level-1 sweep's reference: measured again, or marked, when the GPU was held back
    sandbox = cuda_pool.take()
    outcome = sandbox.run({"job": "do_bench", "device": "cuda", "seed": 0, "problem_source": SOFTMAX,
                           "kernel_source": SOFTMAX + "\n\nModelNew = Model\n"}, 300)
    assert outcome.result["status"] == "ok" and outcome.result["do_bench_ms"] > 0, outcome.reason
    tries = sandbox.measurements.of("do_bench")
    assert 1 <= len(tries) <= 3 and all(t["sm_mhz"][1] > 0 for t in tries), tries
    assert (sandbox.measurements.noisy("do_bench") is None) == (tries[-1]["disturbance"] is None)
