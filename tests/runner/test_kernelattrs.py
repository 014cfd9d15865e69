"""Reading the launched kernels' resources (runner/inside/kernelattrs.py), off recorded shapes of what
torch.profiler's trace, cupy and Triton hold: the parsing needs no GPU."""

import sys
from types import SimpleNamespace

from runner.inside import kernelattrs


def kernel_event(name, dur, registers=40, shared=256, grid=(4096, 1, 1), block=(256, 1, 1)):
    return {"ph": "X", "cat": "kernel", "name": name, "dur": dur,
            "args": {"registers per thread": registers, "shared memory": shared, "grid": list(grid),
                     "block": list(block), "est. achieved occupancy %": 50}}


def test_rows_group_launches_by_name_longest_first():
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "dur": 5},
              kernel_event("reduce_rows", 10), kernel_event("scale_rows", 60), kernel_event("reduce_rows", 30),
              {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "dur": 2}]
    rows = kernelattrs.rows(events, {"scale_rows": 0})
    assert [r["name"] for r in rows] == ["scale_rows", "reduce_rows"]
    assert rows[0]["time_share"] == 0.6 and rows[1]["launches"] == 2 and rows[1]["time_share"] == 0.4
    assert rows[0]["local_bytes"] == 0 and rows[1]["local_bytes"] is None  # not a cupy or Triton kernel it knows
    assert rows[0]["registers"] == 40 and rows[0]["shared_bytes"] == 256 and rows[0]["block"] == [256, 1, 1]


def test_demangled_names_match_their_base_name():
    rows = kernelattrs.rows([kernel_event("void softmax_kernel<float>(float const*, float*, int)", 5)],
                            {"softmax_kernel": 16})
    assert rows[0]["local_bytes"] == 16


def test_cupy_local_memory_from_either_kind_of_function(monkeypatch):
    raw_kernel = SimpleNamespace(attributes={"local_size_bytes": 24, "num_regs": 64})
    driver = SimpleNamespace(funcGetAttribute=lambda attribute, ptr: {(3, 77): 8}[(attribute, ptr)])
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(driver=driver)))
    monkeypatch.setitem(sys.modules, "cupy.cuda", SimpleNamespace(driver=driver))
    function = SimpleNamespace(ptr=77)  # a RawModule's Function
    broken = SimpleNamespace()
    assert kernelattrs.cupy_local_bytes({"a": raw_kernel, "b": function, "c": broken}) == {"a": 24, "b": 8}


def test_triton_spills_from_the_jit_caches_and_through_an_autotuner():
    compiled = SimpleNamespace(metadata=SimpleNamespace(name="add_one"), n_spills=3, n_regs=32)
    def add_one():  # a JITFunction keeps the Python function it compiles as `fn`, as its wrappers keep it
        pass

    jit = SimpleNamespace(device_caches={0: ({"key": compiled}, None, None)}, __name__="add_one", fn=add_one)
    tuned = SimpleNamespace(fn=SimpleNamespace(device_caches={0: ({"k": SimpleNamespace(
        metadata=SimpleNamespace(name="mm"), n_spills=0)},)}, fn=add_one))
    module = SimpleNamespace(add_one=jit, mm=tuned, CONSTANT=4)
    assert kernelattrs.triton_local_bytes(module) == {"add_one": 12, "mm": 0}
    assert kernelattrs.triton_local_bytes(None) == {}
