"""The anti-cheat and fault corpora: kernels, the small problems they target, and index.json,
which says what the runner must answer for each. Tests parametrize from here."""

import json
from pathlib import Path

import pytest

FOLDER = Path(__file__).parent


def read(relative: str) -> str:
    return (FOLDER / relative).read_text()


def cases(*, device: str | None = None, kinds: tuple[str, ...] = ()) -> list[dict]:
    found = json.loads(read("index.json"))["cases"]
    return [c for c in found if (device is None or c["device"] == device) and (not kinds or c["kind"] in kinds)]


def params(*, kinds: tuple[str, ...], devices: tuple[str, ...] = ("cpu", "cuda")) -> list:
    """pytest params, one per case, marked gpu for the CUDA corpus."""
    out = []
    for device in devices:
        for case in cases(device=device, kinds=kinds):
            marks = [pytest.mark.gpu] if device == "cuda" else []
            if case.get("xfail"):
                marks.append(pytest.mark.xfail(strict=True, reason=case["xfail"]))
            out.append(pytest.param(case, id=case["id"], marks=marks))
    return out
