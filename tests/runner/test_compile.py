"""What a compile error's reason quotes: the compiler's first error lines, for people and for the
model's next attempt, not the first line of the log."""

from runner.common.compile import first_errors

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
