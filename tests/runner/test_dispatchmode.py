"""The runner's dispatch modes leave torch._dynamo unimported (a second of every sandbox's CPU) until
something else imports it, and step out of Dynamo's way once it is. Under the library-mode recorder a
candidate's torch.compile compiles (fullgraph too); under the plain one it runs eagerly, its ops recorded."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import torch
from runner.common.dispatchmode import LibraryOpRecorder, OpRecorder
from runner.common.facts import trace_forward

with OpRecorder() as recorder:
    torch.ones(4).mul(3).sum()
trace_forward(torch.nn.Linear(4, 2), [torch.ones(3, 4)])
print("dynamo after the modes:", "torch._dynamo" in sys.modules)

double = torch.compile(lambda x: x * 2 + 1, backend="eager")
with OpRecorder() as recorder:
    out = double(torch.ones(4))
print("compiled under the recorder:", out.tolist(), "aten.mul.Tensor" in recorder.ops)

whole = torch.compile(lambda x: torch.sigmoid(torch.softmax(x, dim=0)), backend="eager", fullgraph=True)
with LibraryOpRecorder() as recorder:
    out = whole(torch.zeros(2))
print("one graph under the recorder:", out.tolist(), "aten._softmax.default" in recorder.ops)
try:
    with OpRecorder() as recorder:
        whole(torch.ones(3))
except RuntimeError as exc:
    print("no graph without library calls:", "dispatch mode present" in str(exc))
"""

# Dynamo's first import happens inside forward, under the recorder (a candidate compiling lazily)
LAZY = """
import torch
from runner.common.dispatchmode import LibraryOpRecorder

with LibraryOpRecorder() as recorder:
    torch.ones(2).add(1)
    whole = torch.compile(lambda x: x.exp() + 1, backend="eager", fullgraph=True)
    out = whole(torch.zeros(2))
print("compiled inside the recorder:", out.tolist(), "aten.exp.default" in recorder.ops)
"""


def test_the_modes_run_without_dynamo_and_under_a_compiled_function():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "dynamo after the modes: False" in done.stdout, done.stdout
    assert "compiled under the recorder: [3.0, 3.0, 3.0, 3.0] True" in done.stdout, done.stdout
    assert "one graph under the recorder: [0.622459352016449, 0.622459352016449] True" in done.stdout, done.stdout
    assert "no graph without library calls: True" in done.stdout, done.stdout


def test_a_whole_graph_compiled_where_dynamo_is_first_imported():
    done = subprocess.run([sys.executable, "-c", LAZY], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "compiled inside the recorder: [2.0, 2.0] True" in done.stdout, done.stdout
