"""Existing sweeps become runs. Before runs existed, a sweep left only names behind:
`sweep_solutions` named each kernel "SUITE: FILE" (no search), and "Search every problem" named
each search "PREFIX: PROBLEM". Per suite, such kernels become one run "Sweep (migrated)" and such
searches one run per prefix, "PREFIX (migrated)"; a problem's kernels or searches are its samples
0, 1, ... in the order they were made. Nothing is deleted; reversing drops the migrated runs."""

from django.db import migrations


def _unique(Run, suite, name):
    taken = set(Run.objects.filter(suite=suite).values_list("name", flat=True))
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name} {n}", n + 1
    return candidate


def forwards(apps, schema_editor):
    Suite, Kernel, Search = (apps.get_model("searches", m) for m in ("Suite", "Kernel", "Search"))
    Run, RunKernel, RunSearch = (apps.get_model("runs", m) for m in ("Run", "RunKernel", "RunSearch"))
    for suite in Suite.objects.all():
        members = {m.problem_id: m for m in suite.members.all()}
        swept = Kernel.objects.filter(problem_id__in=members, search__isnull=True,
                                      name__startswith=f"{suite.name}: ").order_by("id")
        if swept.exists():
            run = Run.objects.create(suite=suite, name=_unique(Run, suite, "Sweep (migrated)"), source="migrated")
            _add(run, swept, members, RunKernel, "kernel")
        groups = {}
        for search in Search.objects.filter(problem_id__in=members).select_related("problem").order_by("id"):
            suffix = f": {search.problem.name}"
            if search.name.endswith(suffix) and len(search.name) > len(suffix):
                groups.setdefault(search.name[: -len(suffix)], []).append(search)
        for prefix, searches in groups.items():
            first = searches[0]
            run = Run.objects.create(
                suite=suite, name=_unique(Run, suite, f"{prefix} (migrated)"[:200]), source="migrated",
                proposer=first.proposer, model=first.model, language=first.language,
                allow_library=first.allow_library,
                shape={"rounds": first.rounds, "parents_per_round": first.parents_per_round,
                       "ideas_per_parent": first.ideas_per_parent, "kernels_per_idea": first.kernels_per_idea})
            _add(run, searches, members, RunSearch, "search")


def _add(run, items, members, Through, field):
    seen, rows = {}, []
    for item in items:
        sample = seen.get(item.problem_id, 0)
        seen[item.problem_id] = sample + 1
        rows.append(Through(run=run, member=members[item.problem_id], sample=sample, **{field: item}))
    Through.objects.bulk_create(rows)
    run.samples = max(seen.values())
    run.save(update_fields=["samples"])


def backwards(apps, schema_editor):
    apps.get_model("runs", "Run").objects.filter(source="migrated").delete()


class Migration(migrations.Migration):
    dependencies = [("runs", "0001_initial"), ("searches", "0012_parallel_calls_dedup_thinking")]
    operations = [migrations.RunPython(forwards, backwards)]
