"""Baseline times someone else published, loaded beside a run's own: KernelBench's results/timing
files (`{"level1": {"19_ReLU.py": {"mean": ms, "std", "num_trials", "hardware"}}}`, per GPU and
configuration). Each file name is read in the publisher's problems folder and matched to this
database's problems by the sha256 of its source, never by its name: a problem edited since, or
another problem under the same name, gets no published time. The GPU is the file's own, and every
page names it: these times were not measured on this host's GPU."""

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from searches import services as searches
from searches.models import Problem

from .models import PublishedBaseline

# KernelBench's file names for its configurations (results/timing/README.md); others keep their own name
CONFIGS = {"baseline_time_torch.json": "eager",
           "baseline_time_torch_compile_inductor_default.json": "torch.compile inductor default"}


@dataclass
class Loaded:
    matched: int = 0
    problems: int = 0  # problems of this database given a time (one file may match several)
    unmatched: list[str] = field(default_factory=list)  # files with no problem of the same source here
    missing: list[str] = field(default_factory=list)  # files the problems folder does not hold


def config_of(path: Path) -> str:
    return CONFIGS.get(path.name) or path.stem.removeprefix("baseline_time_")


@transaction.atomic
def published_baselines_load(timing_file: Path, problems_dir: Path, publisher: str) -> Loaded:
    """Load one timing file; `problems_dir` holds the publisher's level folders (KernelBench/ in its repository)."""
    data = json.loads(Path(timing_file).read_text())
    config = config_of(Path(timing_file))
    by_hash: dict[str, list[int]] = {}
    for pk, source in Problem.objects.values_list("pk", "source"):
        by_hash.setdefault(searches.source_sha256(source), []).append(pk)
    loaded = Loaded()
    for level, rows in sorted(data.items()):
        for name, row in sorted(rows.items()):
            where = f"{level}/{name}"
            path = Path(problems_dir) / level / name
            if not path.is_file():
                loaded.missing.append(where)
                continue
            matches = by_hash.get(searches.source_sha256(path.read_text(encoding="utf-8")), [])
            if not matches:
                loaded.unmatched.append(where)
                continue
            loaded.matched += 1
            for pk in matches:
                PublishedBaseline.objects.update_or_create(
                    problem_id=pk, publisher=publisher, config=config,
                    defaults={"gpu": str(row.get("hardware") or "unnamed GPU")[:200], "file": where[:300],
                              "mean_ms": float(row["mean"]), "std_ms": row.get("std"), "trials": row.get("num_trials")})
                loaded.problems += 1
    return loaded


def published_for(problem_ids) -> dict[int, list[PublishedBaseline]]:
    """Problem id -> its published baselines."""
    found: dict[int, list[PublishedBaseline]] = {}
    for row in PublishedBaseline.objects.filter(problem_id__in=list(problem_ids)):
        found.setdefault(row.problem_id, []).append(row)
    return found
