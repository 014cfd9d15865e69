"""Driver-level launch accounting's decisions (runner/common/launches.py), on the kernel names and streams
CUPTI reports; the recording itself runs on the GPU (tests/runner/test_gpu_judging.py)."""

import subprocess
import sys

import pytest

from runner.common import findings, launches

SOURCE = '''
import triton

@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pass

CUDA = r"""
template <int BLOCK>
__global__ void __launch_bounds__(256) softmax_rows(const float *x, float *y, int n) {}
extern "C" __global__ void scale(float *y, float s, int n) {}
"""
'''
OWN = launches.own_kernel_names(SOURCE)
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
COPY = ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const>(int)")
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, float, std::array<char*, 2ul>)"


def decide(kernels, allow_library=False):
    return launches.decide(kernels, OWN, 7, allow_library=allow_library, call=1)


def test_own_kernel_names_come_from_cuda_and_python_definitions():
    assert OWN == {"add_kernel", "softmax_rows", "scale"}


def test_qualifiers_between_global_and_the_name_are_not_its_name():
    source = ('CUDA = r"""\n'
              'extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK, 2)\n'
              'softmax_cluster(const float* x) {}\n'
              '__global__ void __maxnreg__(64) __attribute__((noinline)) gemm(float* c) {}\n"""')
    assert launches.own_kernel_names(source) == {"softmax_cluster", "gemm"}


def test_a_kernel_named_through_a_macro_is_its_own():
    source = 'CUDA = r"""\n#define GEMM_NAME mm_tiled\nextern "C" __global__ void GEMM_NAME(float *c) {}\n"""'
    own = launches.own_kernel_names(source)
    assert "mm_tiled" in own
    assert launches.decide([("mm_tiled", 7)], own, 7, allow_library=False, call=1) is None


def test_base_names_of_demangled_mangled_and_plain_kernels():
    assert launches.base_name("void softmax_rows<128>(float const*, float*, int)") == "softmax_rows"
    assert launches.base_name("_Z12softmax_rowsILi128EEvPKfPfi") == "softmax_rows"
    assert launches.base_name("_ZN2ns5scaleEPffi") == "scale"
    assert launches.base_name("add_kernel") == "add_kernel"
    assert launches.base_name(FILL) == "vectorized_elementwise_kernel"


def test_own_kernels_with_bookkeeping_fills_and_copies_pass():
    assert decide([(FILL, 7), ("add_kernel", 7), (COPY, 7), ("void softmax_rows<128>(float*)", 7)]) is None
    assert decide([("Memcpy DtoD (Device -> Device)", 7), ("scale", 7)]) is None


def test_a_no_op_kernel_of_its_own_beside_cublas_through_ctypes_is_refused():
    found = decide([("scale", 7), (GEMM, 7)])
    assert found.code == findings.PARTIAL and GEMM in found.reason and "scale" in found.reason


def test_library_or_pytorch_kernels_alone_are_no_kernel_of_its_own():
    assert decide([(GEMM, 7)]).code == findings.NO_KERNEL
    assert decide([(RELU, 7)]).code == findings.NO_KERNEL
    assert decide([(FILL, 7)]).code == findings.NO_KERNEL  # only an allocation's fill: nothing of its own


def test_library_kernels_pass_when_library_calls_are_allowed():
    assert decide([(GEMM, 7), (RELU, 7)], allow_library=True) is None


def test_side_stream_work_is_refused_naming_stream_and_kernel_even_with_library_calls():
    for allow in (False, True):
        found = decide([("add_kernel", 7), (GEMM, 13)], allow_library=allow)
        assert found.code == findings.RULE
        assert "stream 13" in found.reason and "timed stream 7" in found.reason and GEMM in found.reason


def test_cute_names_with_prefix_and_suffix_are_own_but_lookalikes_are_not():
    own = {"elementwise_add_kernel"}
    assert launches.is_own("kernel_cutlass_elementwise_add_kernel_0", own)
    assert not launches.is_own("vectorized_elementwise_add_kernel", own)


def test_the_recorder_is_inert_on_the_cpu():
    watch = launches.Launches(SOURCE, "cpu")
    with watch.recording():
        pass
    assert watch.finding(allow_library=False, call=1) is None and watch.recorded == 0
    assert "torch" not in launches.__dict__  # torch only on CUDA, lazily


class _Event:
    def __init__(self, name, device, stream, start):
        self._name, self._device, self._stream, self._start = name, device, stream, start

    def name(self): return self._name
    def device_type(self): return self._device
    def device_resource_id(self): return self._stream
    def start_ns(self): return self._start
    def end_ns(self): return self._start + 1


def test_the_records_read_are_the_gpus_in_start_order_between_the_markers():
    """`_read` on records shaped as PyTorch's (its device enum itself; CUDA's own come on the GPU): CPU-side
    records are left out, the first marker names the timed stream, the last one is where forward returned."""
    import torch

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU
    events = [_Event("softmax_rows", cuda, 7, 20), _Event("cudaLaunchKernel", cpu, 0, 5), _Event(FILL, cuda, 7, 10),
              _Event("side_kernel", cuda, 9, 25), _Event(FILL, cuda, 7, 30)]
    watch = launches.Launches(SOURCE, "cuda")
    watch.returned_ns = 0
    watch._read(type("Profiler", (), {"profiler": type("Inner", (), {"kineto_results": type(
        "Results", (), {"events": staticmethod(lambda: events)})})}))
    assert watch.timed_stream == 7 and watch.returned_ns == 30 and watch.recorded == 1
    assert watch.kernels == [("softmax_rows", 7, 20, 21), ("side_kernel", 9, 25, 26)]


def test_own_kernels_seen_by_the_driver_count_as_the_calls_own_launches():
    """A CUDA graph's replay runs its captured kernels through no launcher the Python-level counter wraps: the
    own kernels in the activity records count for it; PyTorch's and a library's do not."""
    watch = launches.Launches(SOURCE, "cuda")
    watch.timed_stream, watch.kernels = 7, [("softmax_rows", 7, 0, 1), (FILL, 7, 1, 2), (GEMM, 7, 2, 3)]
    assert watch.own_launched() == 1
    watch.kernels = [(FILL, 7, 0, 1), (RELU, 7, 1, 2)]
    assert watch.own_launched() == 0
    watch.timed_stream = None  # nothing recorded (no CUPTI): the Python-level counter alone decides
    watch.kernels = [("softmax_rows", 7, 0, 1)]
    assert watch.own_launched() == 0
    assert launches.Launches(SOURCE, "cpu").own_launched() == 0


def test_side_stream_work_that_ended_before_forward_returned_passes():
    """Times in ns: the marker after forward returned began at 500. A kernel on stream 13 that ended by
    then was waited for (torch's stream waited on it, or the host synchronized); one still running was not."""
    waited = [("add_kernel", 7, 100, 200), ("scale", 13, 150, 480)]
    assert launches.decide(waited, OWN, 7, allow_library=False, call=1, returned_ns=500) is None
    running = [("add_kernel", 7, 100, 200), ("scale", 13, 150, 900)]
    found = launches.decide(running, OWN, 7, allow_library=False, call=1, returned_ns=500)
    assert found.code == findings.RULE and "scale on stream 13" in found.reason
    assert "returned before it finished" in found.reason
    # without the marker (a call that raised) every side-stream kernel is refused
    assert launches.decide(waited, OWN, 7, allow_library=True, call=1, returned_ns=None).code == findings.RULE


def test_a_recorded_call_launches_its_end_marker_before_the_runner_waits_for_the_device():
    """The side-stream rule reads "waited" off the marker launched after forward returned: a device-wide wait
    of the runner's before it would let every side-stream kernel end first, as if forward had waited."""
    import contextlib

    import torch

    from runner.inside import jobs

    order = []

    class Recording:
        error, calls, active = "", 0, False

        @contextlib.contextmanager
        def recording(self):
            yield
            order.append("marker")

        def finding(self, **_):
            return None

        def own_launched(self):
            return 0

    counter = Recording()
    counter.launches = counter
    jobs._call(lambda x: order.append("forward") or x * 2, [torch.ones(2)], {"first": True, "ops": []}, counter,
               True, lambda: order.append("sync"))
    assert order == ["forward", "marker", "sync"]


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout


def test_prepare_on_the_cpu_starts_no_profiler():
    # a CPU sandbox records no launches, so it pays neither the profiler's start nor the import of Dynamo
    # that a profiler cycle brings
    out = _fresh("import sys; import torch; from runner.common import launches; launches.prepare('cpu'); "
                 "print('torch._dynamo' in sys.modules)")
    assert out.split() == ["False"]


@pytest.mark.gpu
def test_prepare_leaves_the_first_recorded_call_nothing_to_start():
    """The profiler's first start (CUPTI, and torch.profiler's import of Dynamo) happens in prepare, before
    the device is granted: the first recording then imports nothing and still sees its kernels."""
    out = _fresh(
        "import sys; import torch; torch.empty(1, device='cuda'); from runner.common import launches\n"
        "launches.prepare('cuda'); before = set(sys.modules)\n"
        "rec = launches.Launches('', 'cuda')\n"
        "with rec.recording(): torch.ones(4, device='cuda').sum()\n"
        "print('torch._dynamo' in before, len(set(sys.modules) - before), rec.error == '', len(rec.kernels) > 0)")
    assert out.split() == ["True", "0", "True", "True"], out
