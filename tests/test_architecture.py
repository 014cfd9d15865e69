"""The layout's rules, read from the code with `ast` (no imports run): no import circle inside
the app's packages nor between them, no module over the size cap outside the allowlist, no private name used
across modules, every top-level folder named in docs/ARCHITECTURE.md, and the import rules
written there. Plain Python: runs without Django."""

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
MAX_LINES = 500
# Modules that are one concern and longer than the cap (docs/ARCHITECTURE.md says why).
ALLOWLIST = {
    "runner/host/checks.py": "the static rules for candidate source, one rule set",
}
# The runner's trust zones (docs/ARCHITECTURE.md, "The runner's zones"): what each may import of the runner.
# None is the public top (runner/__init__.py, api.py, cli.py, bench.py, __main__.py).
RUNNER_ZONES = {
    "common": {"common"},
    "inside": {"inside", "common"},
    "judge": {"judge", "common"},
    "host": {"host", "common"},
    None: {None, "host", "common"},
}
# What the app (every module outside runner/ and tests/) may import of the runner: the top-level
# package and its public modules. The GPU scripts below reach further on purpose, each for its reason.
RUNNER_PUBLIC = {"runner", "runner.api", "runner.cli", "runner.bench"}
RUNNER_INTERNALS_ALLOWED = {
    "scripts/gpu_published.py": {"runner.host.evaluation", "runner.host.checks", "runner.common.findings"},  # static
    # checks turned into advisories for a re-judge of published kernels
    "scripts/gpu_phase_trace.py": {"runner.common.compile", "runner.common.exchange", "runner.inside.jobs",
                                   "runner.inside.machine", "runner.inside.truths"},  # the sandbox's jobs, profiled
}


def doc_rules() -> dict[str, list[str]]:
    """package -> what it may import, from the table under "## Import rules"."""
    text = DOC.read_text()
    section = text.split("## Import rules", 1)[1].split("\n## ", 1)[0]
    rules = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.fullmatch(r"`\w+`", cells[0]):
            rules[cells[0].strip("`")] = re.findall(r"`([\w.]+)`", cells[1])
    return rules


def app_packages() -> list[str]:
    return sorted(doc_rules())


def modules(packages) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def is_package(name: str, known: dict) -> bool:
    return name in known and known[name].name == "__init__.py"


def imports_of(name: str, path: Path, known: dict) -> list[tuple[str, int]]:
    """(module imported, line) for every import in the module, at any depth (lazy ones too)."""
    out = []
    package = name if is_package(name, known) else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if full in known else base, node.lineno))
    return out


def graph(known: dict) -> dict[str, set[str]]:
    return {name: {target for target, _ in imports_of(name, path, known) if target in known and target != name}
            for name, path in known.items()}


def package_graph(known: dict) -> dict[str, set[str]]:
    """Which of the app's packages imports which (any module of one importing any module of another)."""
    edges = {name.split(".")[0]: set() for name in known}
    for name, targets in graph(known).items():
        edges[name.split(".")[0]] |= {target.split(".")[0] for target in targets} - {name.split(".")[0]}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def private_uses(name: str, path: Path, known: dict) -> list[str]:
    """`from m import _x` and `m._x` where m is another module of the app."""
    tree = ast.parse(path.read_text(), str(path))
    bound, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias, (target, line) in zip(node.names, imports_of_node(node, name, known)):
                if target in known and target.endswith("." + alias.name):
                    bound[alias.asname or alias.name] = target
                elif alias.name.startswith("_") and not alias.name.startswith("__") and target != name:
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {alias.name} from {target}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in known:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    return found


def imports_of_node(node: ast.ImportFrom, name: str, known: dict) -> list[tuple[str, int]]:
    package = name if is_package(name, known) else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([node.module] if node.module else []))
    return [(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base, node.lineno) for a in node.names]


def allowed(target: str, rules: list[str]) -> bool:
    return any(target == rule or target.startswith(rule + ".") for rule in rules)


# --- the checks ----------------------------------------------------------------------------------


def test_no_import_circle_inside_the_apps_packages():
    known = modules(app_packages())
    assert circles(graph(known)) == []


def test_no_import_circle_between_the_apps_packages():
    """Package to package, the imports point one way (e.g. searches → evaluation → runner, lib), so a
    package can be read, tested and replaced without the ones that use it."""
    assert circles(package_graph(modules(app_packages()))) == []


def test_the_package_cycle_check_sees_a_circle():
    """The check above is not vacuous: a back edge from evaluation to searches would be a circle."""
    edges = package_graph(modules(app_packages()))
    edges["evaluation"].add("searches")
    assert any({"evaluation", "searches"} <= set(circle) for circle in circles(edges))


def test_no_module_over_the_size_cap_outside_the_allowlist():
    known = modules(app_packages())
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in known.values()}
    too_long = {path: lines for path, lines in sizes.items() if lines > MAX_LINES and path not in ALLOWLIST}
    assert too_long == {}
    assert all(sizes.get(path, 0) > MAX_LINES for path in ALLOWLIST), "an allowlisted module is short now: drop it"
    for path in ALLOWLIST:
        assert f"`{path}`" in DOC.read_text(), f"docs/ARCHITECTURE.md should say why {path} is allowed"


def test_no_private_name_used_across_modules():
    known = modules(app_packages())
    assert [use for name, path in known.items() for use in private_uses(name, path, known)] == []


def test_every_top_level_folder_is_named_in_the_architecture_doc():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {line.split("/", 1)[0] for line in tracked.splitlines() if "/" in line}
    folders |= {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}  # new, not committed yet
    text = DOC.read_text()
    assert sorted(f for f in folders if f"`{f}/`" not in text) == []


def test_the_import_rules_of_the_architecture_doc_hold():
    rules = doc_rules()
    known = modules(rules)
    broken = []
    for name, path in known.items():
        package = name.split(".")[0]
        for target, line in imports_of(name, path, known):
            top = target.split(".")[0]
            if top == package:
                continue
            if (top in rules or top == "django") and not allowed(target, rules[package]):
                broken.append(f"{path.relative_to(ROOT)}:{line}: {package} may not import {target}")
    assert broken == []


def runner_zone(name: str):
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RUNNER_ZONES else None


def test_the_runners_trust_zones_hold():
    """Nothing inside a sandbox or in the trusted judge imports the host side; inside and judge meet only
    in runner/common, which imports no zone; the host starts inside and judge as processes, never imports them."""
    known = modules(["runner"])
    zones = {runner_zone(name) for name in known}
    assert {"common", "inside", "judge", "host"} <= zones
    broken = []
    for name, path in known.items():
        zone = runner_zone(name)
        for target, line in imports_of(name, path, known):
            if target.split(".")[0] == "runner" and runner_zone(target) not in RUNNER_ZONES[zone]:
                broken.append(f"{path.relative_to(ROOT)}:{line}: runner/{zone or ''} may not import {target}")
    assert broken == []


def test_the_sandbox_and_the_judge_reach_no_host_code():
    known = modules(["runner"])
    edges = graph(known)
    for start in ("runner.inside.child", "runner.judge.referee"):
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo += edges[node]
        assert {runner_zone(name) for name in seen} <= {"common", runner_zone(start)}, start


def test_the_host_side_reaches_none_of_the_torch_modules_of_common():
    """verify, launches and facts import torch: only inside/ and judge/ may reach them."""
    known = modules(["runner"])
    edges = graph(known)
    seen, todo = set(), [name for name in known if runner_zone(name) in ("host", None)]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += edges[node]
    assert seen & {"runner.common.verify", "runner.common.launches", "runner.common.facts"} == set()


def test_the_app_imports_only_the_runners_public_modules():
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    known = modules(["runner"])
    broken = []
    for relative in tracked.splitlines():
        if relative.startswith(("runner/", "tests/")) or not (ROOT / relative).exists():
            continue
        path = ROOT / relative
        allowed_here = RUNNER_PUBLIC | RUNNER_INTERNALS_ALLOWED.get(relative, set())
        for target, line in imports_of(relative.removesuffix(".py").replace("/", "."), path, known):
            if target.split(".")[0] == "runner" and target not in allowed_here:
                broken.append(f"{relative}:{line} imports {target}")
    assert broken == []
    for relative, internals in RUNNER_INTERNALS_ALLOWED.items():
        assert internals <= set(known), f"{relative}: {internals - set(known)} is gone, drop it from the allowance"


def test_every_runner_module_is_named_in_its_zones_row_of_the_architecture_doc():
    section = DOC.read_text().split("## The runner's zones", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("zone", "---"):
            rows[cells[0].strip("`").rstrip("/")] = set(re.findall(r"`(\w+\.py)`", cells[2]))
    assert set(rows) == {"top", *(zone for zone in RUNNER_ZONES if zone)}
    for zone, named in rows.items():
        folder = ROOT / "runner" / ("" if zone == "top" else zone)
        found = {path.name for path in folder.glob("*.py") if zone == "top" or path.name != "__init__.py"}
        assert found == named, f"runner/{zone}: in the folder, not the doc {found - named}; gone {named - found}"


def test_starting_a_sandbox_or_the_judge_loads_no_host_code():
    """Python imports a package's __init__ before its modules: runner/__init__.py must not pull the
    host side (checks, pools, sandboxes) into every sandbox and the judge."""
    for start in ("runner.inside.child", "runner.judge.referee"):
        loaded = subprocess.run([sys.executable, "-c", f"import sys, {start}; print(*sys.modules, sep='\\n')"],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        host = [name for name in loaded if name.startswith(("runner.host", "runner.api"))]
        assert host == [], (start, host)
    import runner
    from runner.api import Pool

    assert runner.Pool is Pool and "Verdict" in dir(runner)  # the exports still load when asked for
