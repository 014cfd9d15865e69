"""The published corpus (tests/runner/published: KernelBench solutions released by others, with their
licenses) through the static checks in library mode, on the CPU.

Every kernel is labelled by hand in the manifest: "honest" (computes this call's result from its inputs
on the timed stream; library calls, flags, fallbacks and CUDA graphs replayed on copied inputs included)
or "hack" (named). An honest kernel must not be refused before it runs, except the ones listed in
KNOWN_FALSE_REFUSALS below, each with the refusal it gets today; that list is a ratchet: an entry that
is no longer refused fails the test until it is removed. Hacks are only recorded (most are caught at
run time, not here). The full verdicts come from scripts/gpu_published.py on a GPU host.

    pytest tests/runner/test_published_static.py -s     # prints the table
"""

import collections
import functools
import hashlib
import json
import re
from pathlib import Path

import pytest

from runner.host.checks import check_findings

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = Path(__file__).resolve().parent / "published"
MANIFEST = json.loads((PUBLISHED / "manifest.json").read_text())
KERNELS = {k["file"]: k for k in MANIFEST["kernels"]}
SOURCES = {s["slug"]: s for s in MANIFEST["sources"]}
TECHNIQUES = {"backend_flags", "fallback", "cuda_graph", "torch_C", "environ", "partial", "library_calls"}
BACKENDS = {"cuda", "triton", "cupy", "torch"}

_C = "kernels/cuda_l1/"
_T = "kernels/technoabsurdist_kernelbench/"
_H = "kernels/hzeng2000_kernelbench/"

# Honest kernels the static checks refuse today: file -> "what the refusal says; why it is false, and why it
# stays": each is refused by a rule that guards something the run cannot judge (torch's current stream left
# switched). A value assigned under torch.backends and a torch._C name PyTorch's stubs never mention are the
# run's (runner/inside/globalstate.py).
KNOWN_FALSE_REFUSALS = {
    _C + "level1_72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped___cuda_l1.py":
        "stream: 'calls torch.cuda.set_stream'; per-group streams, then torch.cuda.synchronize() before the cat, "
        "but it leaves torch's current stream switched to the last group's after forward returns, where the "
        "runner times the next call: refused (write it with `with torch.cuda.stream(s):`). A runner that put its "
        "own stream back after each call would not accept it either: the cat runs on the last group's stream "
        "after the synchronize, work forward returns without waiting for, which the side-stream rule refuses or "
        "not as that cat ends before or after the runner's marker (a race)",
}


@functools.lru_cache(maxsize=None)
def _source(path: str) -> str:
    return Path(path).read_text()


@functools.lru_cache(maxsize=None)
def judged(file: str):
    kernel = KERNELS[file]
    return check_findings(_source(str(PUBLISHED / file)), reference_source=_source(str(REPO / kernel["problem_path"])),
                          allow_library=True, device="cuda")


def refusals(file: str):
    return [f for f in judged(file) if not f.advisory]


# --- the manifest ---------------------------------------------------------------------------------

def test_manifest_lists_at_least_100_kernels_over_three_levels():
    levels = collections.Counter(k["level"] for k in MANIFEST["kernels"])
    assert len(KERNELS) == len(MANIFEST["kernels"]) >= 100  # no file listed twice
    assert set(levels) == {1, 2, 3}
    assert levels[1] >= 30 and levels[2] >= 30 and levels[3] >= 15, levels


def test_every_source_has_its_license_file():
    assert MANIFEST["about"]
    for source in MANIFEST["sources"]:
        assert {"slug", "repository", "commit", "license", "license_url_or_path", "notes"} <= set(source), source
        assert source["license"] in {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "CC-BY-4.0"}, source
        text = (PUBLISHED / source["license_url_or_path"]).read_text()
        assert "Permission is hereby granted" in text or "Licensed under" in text or "Attribution" in text
    assert (PUBLISHED / "README.md").is_file()


@pytest.mark.parametrize("file", sorted(KERNELS))
def test_kernel_entry_is_complete_and_the_file_unchanged(file):
    kernel = KERNELS[file]
    assert kernel["source"] in SOURCES
    assert (PUBLISHED / file).is_file()
    assert hashlib.sha256((PUBLISHED / file).read_bytes()).hexdigest() == kernel["sha256"]
    problem = REPO / kernel["problem_path"]
    assert problem.is_file() and problem.name == kernel["problem"]
    assert kernel["problem_path"].startswith(("tests/fixtures/kernelbench/", "tests/runner/published/problems/"))
    assert f"level{kernel['level']}/" in kernel["problem_path"]
    assert kernel["level"] in (1, 2, 3) and kernel["backend"] in BACKENDS
    assert set(kernel["techniques"]) <= TECHNIQUES
    assert kernel["label"] in ("honest", "hack")
    assert (kernel["hack"] is None) == (kernel["label"] == "honest")
    assert kernel["hack"] is None or re.fullmatch(r"[a-z_]+", kernel["hack"])
    assert kernel["reason"].strip()
    assert "class ModelNew" in _source(str(PUBLISHED / file))


def test_known_false_refusals_name_honest_kernels_of_the_manifest():
    for file in KNOWN_FALSE_REFUSALS:
        assert file in KERNELS, f"{file} is not in the manifest"
        assert KERNELS[file]["label"] == "honest", f"{file} is labelled hack; hacks are not listed here"


# --- the static checks, library mode --------------------------------------------------------------

@pytest.mark.parametrize("file", sorted(f for f, k in KERNELS.items() if k["label"] == "honest"))
def test_honest_kernel_is_not_refused_statically(file):
    refused = refusals(file)
    if file in KNOWN_FALSE_REFUSALS:
        assert refused, (f"{file} is no longer refused: remove it from KNOWN_FALSE_REFUSALS "
                         f"({KNOWN_FALSE_REFUSALS[file]})")
        return
    assert not refused, f"{file} ({KERNELS[file]['reason']}) is refused: {refused[0].code}: {refused[0].reason}"


def test_static_table(capsys):
    """One row a kernel (label, hack, verdict, first refusal); the counts of refusals by text. Records only:
    hacks are not asserted here."""
    rows, groups = [], collections.Counter()
    for file, kernel in KERNELS.items():
        refused = refusals(file)
        text = re.sub(r"^line \d+: ", "", refused[0].reason) if refused else ""
        verdict = "refused" if refused else "passes"
        if refused:
            kind = "false refusal" if kernel["label"] == "honest" else "hack caught"
            groups[(kind, re.sub(r"\b(input|output) \w+ in self\.\w+", r"\1 _ in self._",
                                 re.sub(r"(os\.environ|torch\.backends|torch\._C)[\w.\[\]']*", r"\1...", text))[:90])] += 1
        rows.append((kernel["label"], kernel["hack"] or "", verdict, Path(file).name[:64], text[:90]))
    with capsys.disabled():
        print(f"\n{'label':6} {'hack':15} {'verdict':8} {'kernel':64} first refusal")
        for row in sorted(rows):
            print(f"{row[0]:6} {row[1]:15} {row[2]:8} {row[3]:64} {row[4]}")
        print("\nrefusals by text:")
        for (kind, text), count in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[1])):
            print(f"{count:3}  {kind:13}  {text}")
        honest = [r for r in rows if r[0] == "honest"]
        hacks = [r for r in rows if r[0] == "hack"]
        print(f"\nhonest: {len(honest)}, refused {sum(r[2] == 'refused' for r in honest)}; "
              f"hack: {len(hacks)}, refused {sum(r[2] == 'refused' for r in hacks)}")
    assert len(rows) == len(KERNELS)
