"""What a compile error's reason quotes: the compiler's first error lines, for people and for the
model's next attempt, not the first line of the log."""

from runner.common.compile import first_errors, last_line

GCC = """/tmp/k/kernel.c: In function 'softmax_rows':
/tmp/k/kernel.c:5:3: error: 'yy' undeclared (first use in this function)
    5 |   yy[i] = 0;
/tmp/k/kernel.c:5:3: note: each undeclared identifier is reported only once
/tmp/k/kernel.c:9:1: error: expected ';' before '}' token
/tmp/k/kernel.c:12:1: error: a third error
"""
NVRTC = 'kernel.cu(12): error: identifier "foo" is undefined\n\n1 error detected in the compilation of "kernel.cu".'


def test_the_first_error_lines_are_quoted_not_the_first_line():
    assert first_errors(GCC) == ("/tmp/k/kernel.c:5:3: error: 'yy' undeclared (first use in this function); "
                                 "/tmp/k/kernel.c:9:1: error: expected ';' before '}' token")
    assert first_errors(NVRTC) == 'kernel.cu(12): error: identifier "foo" is undefined'
    assert first_errors("Traceback ...\nSyntaxError: invalid syntax") == "SyntaxError: invalid syntax"


def test_a_log_without_an_error_line_gives_its_first_line():
    assert first_errors("\nIn file included from x.h\nsomething else") == "In file included from x.h"
    assert first_errors("") == ""


# PyTorch's wording when a sandbox's CUDA context could not be made (torch 2.x, c10/cuda/CUDAException.cpp)
CUDA_START = """Traceback (most recent call last):
  File "/runner/inside/child.py", line 55, in main
torch.AcceleratorError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

"""


def test_a_cuda_errors_last_line_is_the_error_not_pytorchs_advice():
    assert last_line(CUDA_START) == "torch.AcceleratorError: CUDA error: out of memory"
    assert last_line("RuntimeError: boom\n") == "RuntimeError: boom"
