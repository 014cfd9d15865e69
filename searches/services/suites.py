"""Writes on suites: importing many KernelBench problem files at once into a named suite, judging
a folder of solutions against it, and starting one search configuration over all its problems.

One import is one transaction and, from the web, one request: it counts once against the
rate limit on work. Imported problems are stored, not yet validated, unless asked: queueing
250 validations at once would hold every evaluator for hours, ahead of people's searches.
"""

import ast
import hashlib
import importlib.util
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.core.exceptions import ValidationError
from django.db import transaction

from evaluation import queue
from searches.models import Device, EvaluationJob, Problem, Search, Suite, SuiteProblem
from searches.problem_checks import model_docstring, size_error
from searches.problem_memory import input_bytes

from .kernels import kernel_submit
from .problems import problem_create
from .searches import search_start

ACCEPTED, DUPLICATE, REFUSED = "accepted", "duplicate", "refused"
MAX_FILES = 2000  # a zip with more entries than this is not a suite of problems

_LEVEL_DIR = re.compile(r"^level[_-]?(\d+)$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d+)_(.*)$")


@dataclass
class ImportRow:
    file: str
    outcome: str  # accepted, duplicate or refused
    reason: str = ""
    problem: Problem | None = None
    level: int | None = None
    number: int | None = None
    missing_modules: list[str] = field(default_factory=list)
    input_bytes: int | None = None  # one set of inputs, read from the source (searches.problem_memory)


@dataclass
class ImportReport:
    suite: Suite
    rows: list[ImportRow]

    def count(self, outcome: str) -> int:
        return sum(1 for row in self.rows if row.outcome == outcome)

    @property
    def counts(self) -> dict:
        return {outcome: self.count(outcome) for outcome in (ACCEPTED, DUPLICATE, REFUSED)}


def kernelbench_position(path: str) -> tuple[int | None, int | None, str]:
    """(level, number, title) from a KernelBench path: the level from a `levelN` folder, the
    number from the file name's `N_` prefix, the title from the rest of the name."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    level = None
    for part in parts[:-1]:
        match = _LEVEL_DIR.match(part)
        if match:
            level = int(match.group(1))
    stem = PurePosixPath(parts[-1]).stem
    match = _NUMBERED.match(stem)
    number, rest = (int(match.group(1)), match.group(2)) if match else (None, stem)
    title = " ".join(rest.replace("_", " ").split()) or stem
    return level, number, title


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def missing_modules(source: str) -> list[str]:
    """Top-level modules the source imports that this environment cannot find (e.g. einops):
    the problem cannot validate until they are installed. Only looked up, never imported."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if n not in sys.stdlib_module_names and importlib.util.find_spec(n) is None)


def _sort_key(name: str):
    level, number, _ = kernelbench_position(name)
    return (level is None, level or 0, number is None, number or 0, name)


def files_from_folder(root) -> list[tuple[str, bytes]]:
    """Every `.py` file under `root`, recursively, as (path relative to root, bytes)."""
    root = Path(root)
    found = [path for path in root.rglob("*.py") if path.is_file() and path.name != "__init__.py"]
    named = [(path.relative_to(root).as_posix(), path) for path in found]
    return [(name, path.read_bytes()) for name, path in sorted(named, key=lambda item: _sort_key(item[0]))]


def files_from_zip(fileobj) -> list[tuple[str, bytes]]:
    """The `.py` entries of a zip, as (path inside the zip, bytes). Sizes are checked against the
    problem size limit before an entry is read, so a zip bomb is refused unread."""
    try:
        archive = zipfile.ZipFile(fileobj)
    except zipfile.BadZipFile as exc:
        raise ValidationError(f"Not a zip file: {exc}", code="bad_zip") from exc
    entries = [
        info for info in archive.infolist()
        if not info.is_dir() and info.filename.endswith(".py") and not info.filename.startswith("__MACOSX/")
        and PurePosixPath(info.filename).name != "__init__.py"
    ]
    if len(entries) > MAX_FILES:
        raise ValidationError(f"The zip holds {len(entries)} Python files; the limit is {MAX_FILES}.", code="too_many")
    files = []
    for info in sorted(entries, key=lambda entry: _sort_key(entry.filename)):
        too_large = size_error(info.file_size)
        # Keep the entry with an empty payload and its size error, so the report names it.
        files.append((info.filename, too_large if too_large else archive.read(info)))
    return files


def _decode(name: str, raw) -> str:
    if isinstance(raw, ValidationError):
        raise raw
    too_large = size_error(len(raw))
    if too_large:
        raise too_large
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"not UTF-8 text (byte {exc.start} cannot be decoded)", code="encoding") from exc


def _reason(error: ValidationError) -> str:
    return " ".join(error.messages)


@transaction.atomic
def suite_import(*, user, suite_name: str, files, device: str = Device.CUDA, validate: bool = False,
                 progress=None) -> ImportReport:
    """Import problem files into the suite named `suite_name` (made if new). Each file is
    accepted (a new problem), a duplicate (its source is byte for byte an existing problem's:
    nothing is created, the existing problem joins the suite) or refused with the reason.

    `device` defaults to CUDA: KernelBench's shapes are GPU-sized. `progress(done, total, row)`
    is called after each file."""
    suite_name = (suite_name or "").strip()
    if not suite_name:
        raise ValidationError("Give the suite a name.", code="name")
    if device not in Device.values:
        raise ValidationError(f"Unknown device {device!r}: choose one of {', '.join(Device.values)}.", code="device")
    owner = user if getattr(user, "is_authenticated", False) else None
    suite, _ = Suite.objects.get_or_create(name=suite_name, defaults={"created_by": owner})
    by_hash = {source_sha256(source): pk for pk, source in Problem.objects.values_list("pk", "source")}
    members = set(suite.members.values_list("problem_id", flat=True))
    files = list(files)
    rows = []
    for done, (name, raw) in enumerate(files, start=1):
        level, number, title = kernelbench_position(name)
        row = ImportRow(file=name, outcome=REFUSED, level=level, number=number)
        try:
            source = _decode(name, raw)
            digest = source_sha256(source)
            if digest in by_hash:
                row.outcome, row.problem = DUPLICATE, Problem.objects.get(pk=by_hash[digest])
                row.reason = f"same source as “{row.problem.name}”"
            else:
                row.problem = _create(user=user, source=source, title=title, level=level, number=number,
                                      name=name, device=device, validate=validate)
                row.outcome = ACCEPTED
                by_hash[digest] = row.problem.pk
            row.missing_modules = missing_modules(source)
            row.input_bytes = input_bytes(source)
        except ValidationError as error:
            row.reason = _reason(error)
        if row.problem is not None and row.problem.pk not in members:
            SuiteProblem.objects.create(suite=suite, problem=row.problem, level=level, number=number, file_name=name)
            members.add(row.problem.pk)
        rows.append(row)
        if progress:
            progress(done, len(files), row)
    return ImportReport(suite=suite, rows=rows)


def _create(*, user, source, title, level, number, name, device, validate) -> Problem:
    if level is not None and number is not None:
        label = f"L{level} #{number} {title}"
        fallback = f"KernelBench level {level}, problem {number} ({name})."
    else:
        label, fallback = title, f"Imported from {name}."
    # A savepoint per file: a refused file leaves the rest of the import standing.
    with transaction.atomic():
        return problem_create(user=user, name=label[:200], source=source, device=device, validate=validate,
                              description=model_docstring(source) or fallback)


def files_from_uploads(uploads) -> list[tuple[str, bytes]]:
    """Uploaded .py files and zips, as (name, bytes); a .py over the size limit is kept unread,
    with its error, so the report names it."""
    files = []
    for upload in uploads:
        if upload.name.endswith(".zip"):
            files.extend(files_from_zip(upload))
        else:
            too_large = size_error(upload.size)
            files.append((upload.name, too_large if too_large else upload.read()))
    return files


BULK_VALIDATION_PRIORITY = 0  # below a person's single validation (10), so theirs still go first


@transaction.atomic
def suite_request_validation(*, suite: Suite, user) -> int:
    """Queue the validation of the suite's problems that are stored, not yet validated (pending,
    with no validation queued or running). Returns how many were queued."""
    pending = Problem.objects.filter(suite_memberships__suite=suite, validation_status=Problem.Validation.PENDING)
    active = EvaluationJob.objects.filter(
        problem__in=pending, purpose=EvaluationJob.Purpose.VALIDATE,
        status__in=(EvaluationJob.Status.QUEUED, EvaluationJob.Status.LEASED),
    ).values_list("problem_id", flat=True)
    queued = 0
    for problem in pending.exclude(pk__in=list(active)).order_by("id"):
        queue.enqueue_validation(problem, priority=BULK_VALIDATION_PRIORITY)
        queued += 1
    return queued


# --- sweeps: judge a folder of existing solutions against a suite's problems -------------------

QUEUED, UNMATCHED = "queued", "unmatched"


def solution_position(path: str) -> tuple[int | None, int | None]:
    """(level, number) of a solution file: KernelBench's run layout puts it in a folder named
    for the problem (`level1/19_ReLU/kernel.py`), or it is one `N_....py` per problem."""
    level, number, _ = kernelbench_position(path)
    if number is None:
        parts = PurePosixPath(path.replace("\\", "/")).parts
        for part in reversed(parts[:-1]):
            match = _NUMBERED.match(part)
            if match:
                number = int(match.group(1))
                break
    return level, number


@transaction.atomic
def suite_sweep(*, user, suite: Suite, files, progress=None) -> list[ImportRow]:
    """Submit each solution file as a kernel of the suite problem with its level and number,
    queued for the evaluators like any hand-written kernel. A suite whose problems carry no
    level (one flat folder) matches on the number alone."""
    members = list(suite.members.select_related("problem"))
    by_position = {(m.level, m.number): m for m in members if m.number is not None}
    by_number = {}
    for m in members:
        if m.number is not None:
            by_number.setdefault(m.number, []).append(m)
    files = list(files)
    rows = []
    for done, (name, raw) in enumerate(files, start=1):
        level, number = solution_position(name)
        row = ImportRow(file=name, outcome=UNMATCHED, level=level, number=number)
        member = by_position.get((level, number))
        if member is None and number is not None and len(by_number.get(number, [])) == 1:
            member = by_number[number][0] if level is None else None
        if member is None:
            row.reason = f"no problem of the suite has level {level} and number {number}"
        else:
            row.problem = member.problem
            try:
                with transaction.atomic():
                    source = _decode(name, raw)
                    kernel = kernel_submit(user=user, problem=member.problem, source=source,
                                           name=f"{suite.name}: {name}")
                row.outcome, row.reason = QUEUED, str(kernel.code)
            except ValidationError as error:
                row.outcome, row.reason = REFUSED, _reason(error)
        rows.append(row)
        if progress:
            progress(done, len(files), row)
    return rows


# --- search sweeps: one search configuration over every problem of a suite --------------------

STARTED = "started"


@dataclass
class SearchSweepRow:
    member: SuiteProblem
    outcome: str  # started or refused
    reason: str = ""
    search: Search | None = None


def suite_start_searches(*, user, suite: Suite, **search_fields) -> list[SearchSweepRow]:
    """Start one search per problem of the suite, each with the same knobs and its own budget
    (the budgets in `search_fields` apply to every search alone). A problem the search cannot run
    on (not validated, or a proposer that cannot serve it) is refused with the reason; the others
    start anyway, each in its own transaction, and advance on the task queue like any search."""
    rows = []
    for member in suite.members.select_related("problem").order_by("level", "number", "id"):
        name = search_fields.get("name") or ""
        fields = {**search_fields, "name": f"{name or suite.name}: {member.problem.name}"[:200]}
        try:
            with transaction.atomic():
                search = search_start(problem=member.problem, user=user, **fields)
        except ValidationError as error:
            rows.append(SearchSweepRow(member=member, outcome=REFUSED, reason=_reason(error)))
        else:
            rows.append(SearchSweepRow(member=member, outcome=STARTED, search=search))
    return rows
