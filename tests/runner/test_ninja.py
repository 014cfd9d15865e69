"""Reading a build.ninja as data (runner/host/ninja.py): the paths of its build statements, with
ninja's escapes, and a path under a variable reported as unknown rather than guessed."""

from runner.host import ninja


def test_torchs_build_statements_give_their_outputs_and_inputs():
    text = ("ninja_required_version = 1.3\nrule link\n  command = $cxx $in -o $out\n"
            "build main.o: compile /tmp/ext/main.cpp\n"
            "build cuda.cuda.o: cuda_compile /tmp/ext/cuda.cu\n"
            "build ext.so: link main.o cuda.cuda.o\n\ndefault ext.so\n")
    found = [(s.outputs, s.rule, s.inputs) for s in ninja.statements(text)]
    assert found == [(["main.o"], "compile", ["/tmp/ext/main.cpp"]),
                     (["cuda.cuda.o"], "cuda_compile", ["/tmp/ext/cuda.cu"]),
                     (["ext.so"], "link", ["main.o", "cuda.cuda.o"])]


def test_escapes_continuations_and_implicit_paths():
    text = "build my$ dir/a$:b.o | a.d: cc x$$y.c $\n    z.c | h.h || order\n"
    [statement] = ninja.statements(text)
    assert statement.outputs == ["my dir/a:b.o", "a.d"]
    assert statement.rule == "cc"
    assert statement.inputs == ["x$y.c", "z.c", "h.h", "order"]


def test_a_path_under_a_variable_is_unknown_and_lines_without_a_rule_are_no_statements():
    [statement] = ninja.statements("build $out/ext.so: link ${dir}/main.o\nbuild broken.o:\nbuild :\nbuild x\n")
    assert statement.outputs == [ninja.UNKNOWN]
    assert statement.inputs == [ninja.UNKNOWN]
