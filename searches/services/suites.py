"""Writes on suites: importing many KernelBench problem files at once into a named suite, judging
a folder of solutions against it, and starting one search configuration over all its problems.

One import is one transaction and, from the web, one request, bounded: at most
SUITE_IMPORT_MAX_PROBLEMS files and SUITE_IMPORT_MAX_BYTES uncompressed, each file within the
problem size limit, a zip's entries checked against their stated sizes before and after reading.
Imported problems are stored, not yet validated, unless asked; then each validation is a job of the
person's (the per-user cap, evaluation/scheduling.py) in the bulk class, behind people's searches, and what
does not fit under the cap is stored unvalidated, with the reason. A suite takes problems from its
owner (or an administrator); anyone else importing under its name gets a suite of their own.
"""

import ast
import hashlib
import importlib.util
import lzma
import re
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority, job_room, jobs_refusal, search_room, searches_refusal
from lib.ratelimit import OverQuota
from searches.hub_models import hub_refusal
from searches.models import Device, Problem, Search, Suite, SuiteProblem
from searches.problem_checks import human_size, model_docstring, size_error
from searches.problem_memory import input_bytes

from .kernels import kernel_submit
from .problems import problem_create
from .searches import active_searches, search_start, search_usage

ACCEPTED, DUPLICATE, REFUSED = "accepted", "duplicate", "refused"
ZIP_MAX_ENTRIES = 5000  # every entry, folders and other files included, counted before any is read
# Uncompressed over compressed size of one entry: source someone wrote is about 3-5, a file of one
# repeated line hundreds; entries under the floor are too small to matter.
ZIP_MAX_RATIO, ZIP_RATIO_FLOOR = 100, 64 * 1024
_ZIP_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, lzma.LZMAError, OSError,
                    RuntimeError, NotImplementedError, ValueError)

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
    sample: int = 0  # a solution's sample id (KernelBench's runs layout), 0 when the name has none
    kernel: object = None  # the kernel a solution became


@dataclass
class ImportReport:
    suite: Suite
    rows: list[ImportRow]
    notices: list[str] = field(default_factory=list)  # the suite's owner, validations held back by the cap

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


def import_size_error(count: int, total_bytes: int) -> ValidationError | None:
    """One import's bounds: problem files and their bytes, uncompressed."""
    most, most_bytes = settings.SUITE_IMPORT_MAX_PROBLEMS, settings.SUITE_IMPORT_MAX_BYTES
    if count > most:
        return ValidationError(f"This import holds {count} problem files; one import takes at most {most}. "
                               "Nothing was imported: split it (a zip per level) and import each part.",
                               code="too_many")
    if total_bytes > most_bytes:
        return ValidationError(f"This import's files come to {human_size(total_bytes)} uncompressed; one import "
                               f"takes at most {human_size(most_bytes)}. Nothing was imported: split it.",
                               code="too_large")
    return None


def files_from_folder(root) -> list[tuple[str, bytes]]:
    """Every `.py` file under `root`, recursively, as (path relative to root, bytes); checked
    against the import's bounds before any is read."""
    root = Path(root)
    # A level folder given itself (KernelBench/level1) keeps its level: its name leads every path.
    prefix = f"{root.resolve().name}/" if _LEVEL_DIR.match(root.resolve().name) else ""
    found = [path for path in root.rglob("*.py") if path.is_file() and path.name != "__init__.py"]
    too_much = import_size_error(len(found), sum(path.stat().st_size for path in found))
    if too_much:
        raise too_much
    named = [(prefix + path.relative_to(root).as_posix(), path) for path in found]
    return [(name, path.read_bytes()) for name, path in sorted(named, key=lambda item: _sort_key(item[0]))]


def files_from_zip(fileobj) -> list[tuple[str, bytes]]:
    """The `.py` entries of a zip, as (path inside the zip, bytes). The entries' stated sizes are
    checked against the import's bounds and each against the problem size limit and a compression
    ratio before anything is read, so a zip bomb is refused unread; an entry whose content does not
    match its stated size or checksum is kept with its error, so the report names it."""
    try:
        archive = zipfile.ZipFile(fileobj)
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise ValidationError(f"Not a zip file: {exc}", code="bad_zip") from exc
    if len(infos) > ZIP_MAX_ENTRIES:
        raise ValidationError(f"The zip holds {len(infos)} entries; the limit is {ZIP_MAX_ENTRIES}.", code="too_many")
    entries = [
        info for info in infos
        if not info.is_dir() and info.filename.endswith(".py") and not info.filename.startswith("__MACOSX/")
        and PurePosixPath(info.filename).name != "__init__.py"
    ]
    too_much = import_size_error(len(entries), sum(info.file_size for info in entries))
    if too_much:
        raise too_much
    return [(info.filename, _zip_entry(archive, info)) for info in sorted(entries, key=lambda e: _sort_key(e.filename))]


def _zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    """The entry's bytes, or the ValidationError that refuses it (the import goes on without it)."""
    too_large = size_error(info.file_size)
    if too_large:
        return too_large
    if info.file_size > ZIP_RATIO_FLOOR and info.file_size > ZIP_MAX_RATIO * max(1, info.compress_size):
        return ValidationError(
            f"the zip entry expands {info.file_size // max(1, info.compress_size)} times "
            f"({human_size(info.compress_size)} to {human_size(info.file_size)}); more than {ZIP_MAX_RATIO} times is "
            "refused unread as a possible zip bomb.", code="ratio")
    try:
        with archive.open(info) as member:
            data = member.read(info.file_size + 1)  # zipfile stops at the stated size and checks the CRC
    except _ZIP_READ_ERRORS as exc:
        return ValidationError(f"the zip entry is damaged or inconsistent ({exc}); nothing of it was imported. "
                               "Make the zip again from the original files.", code="bad_entry")
    if len(data) != info.file_size:
        return ValidationError(f"the zip entry states {info.file_size} bytes but holds {len(data)}; nothing of it "
                               "was imported. Make the zip again from the original files.", code="bad_entry")
    return data


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


def may_add_to_suite(suite: Suite, user) -> bool:
    """A suite takes problems from its owner and administrators (user None: the system's commands)."""
    if user is None:
        return True
    return getattr(user, "is_authenticated", False) and (user.is_staff or suite.created_by_id == user.pk)


def _suite_for(user, name: str) -> tuple[Suite, str]:
    """The suite named `name` if the person may add to it, else one of their own named after it
    ("name (username)", numbered when that is taken too); with a notice saying which."""
    owner = user if getattr(user, "is_authenticated", False) else None
    suite, made = Suite.objects.get_or_create(name=name, defaults={"created_by": owner})
    if made or owner is None or may_add_to_suite(suite, owner):
        return suite, ""
    base = f"{name[:150]} ({owner.get_username()[:40]})"
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{base} {n}"
        own, made = Suite.objects.get_or_create(name=candidate, defaults={"created_by": owner})
        if made or own.created_by_id == owner.pk:
            return own, (f"The suite “{name}” is someone else's: only its owner or an administrator adds problems "
                         f"to it. Your files went into your own suite “{own.name}”.")
    raise ValidationError(f"The suite “{name}” is someone else's; choose another name for yours.", code="name")


@transaction.atomic
def suite_import(*, user, suite_name: str, files, device: str = Device.CUDA, validate: bool = False,
                 progress=None) -> ImportReport:
    """Import problem files into the suite named `suite_name` (made if new; someone else's makes one
    of the person's own). Each file is accepted (a new problem), a duplicate (its source is byte for
    byte an existing problem's: nothing is created, the existing problem joins the suite) or refused
    with the reason. With `validate`, each new problem's validation is queued in the bulk class while
    the person's cap has room; the rest are stored unvalidated and the report says why.

    `device` defaults to CUDA: KernelBench's shapes are GPU-sized. `progress(done, total, row)`
    is called after each file."""
    suite_name = (suite_name or "").strip()
    if not suite_name:
        raise ValidationError("Give the suite a name.", code="name")
    if device not in Device.values:
        raise ValidationError(f"Unknown device {device!r}: choose one of {', '.join(Device.values)}.", code="device")
    files = list(files)
    too_much = import_size_error(len(files), sum(len(raw) for _, raw in files if isinstance(raw, bytes)))
    if too_much:
        raise too_much
    suite, notice = _suite_for(user, suite_name)
    report = ImportReport(suite=suite, rows=[], notices=[notice] if notice else [])
    room = job_room(user) if validate else 0
    held = 0
    by_hash = {source_sha256(source): pk for pk, source in Problem.objects.values_list("pk", "source")}
    members = set(suite.members.values_list("problem_id", flat=True))
    for done, (name, raw) in enumerate(files, start=1):
        level, number, title = kernelbench_position(name)
        row = ImportRow(file=name, outcome=REFUSED, level=level, number=number)
        try:
            source = _decode(name, raw)
            digest = source_sha256(source)
            if refusal := hub_refusal(source):
                raise refusal
            if digest in by_hash:
                row.outcome, row.problem = DUPLICATE, Problem.objects.get(pk=by_hash[digest])
                row.reason = _duplicate_reason(row.problem, device)
            else:
                row.problem = _create(user=user, source=source, title=title, level=level, number=number,
                                      name=name, device=device)
                row.outcome = ACCEPTED
                by_hash[digest] = row.problem.pk
                if validate and (room is None or room > 0):
                    queue.enqueue_validation(row.problem, priority=Priority.BULK, requested_by=user)
                    room = None if room is None else room - 1
                elif validate:
                    held += 1
                    row.reason = "stored, not validated: your queue is at its cap"
            row.missing_modules = missing_modules(source)
            row.input_bytes = input_bytes(source)
        except ValidationError as error:
            row.reason = _reason(error)
        if row.problem is not None and row.problem.pk not in members:
            SuiteProblem.objects.create(suite=suite, problem=row.problem, level=level, number=number, file_name=name)
            members.add(row.problem.pk)
        report.rows.append(row)
        if progress:
            progress(done, len(files), row)
    if held:
        report.notices.append(f"{held} new problem{'s were' if held != 1 else ' was'} stored without validation: "
                              + _cap_note(user))
    return report


def _duplicate_reason(problem: Problem, device: str) -> str:
    """A duplicate is the stored problem itself: its device stays what it was."""
    reason = f"same source as “{problem.name}”"
    if problem.device != device:
        reason += (f"; kept on {problem.device}, as stored: the device asked for ({device}) applies to new problems "
                   "only (edit the problem to change its device)")
    return reason


def _cap_reached(user) -> str:
    jobs = search_usage(user)["jobs"]
    return f"you have {jobs} evaluation job{'s' if jobs != 1 else ''} queued or running, the cap per person"


def _cap_note(user) -> str:
    return (_cap_reached(user) + ". Validate the rest from the suite page (“Validate stored problems”) when some "
            "have finished.")


def _create(*, user, source, title, level, number, name, device) -> Problem:
    if level is not None and number is not None:
        label = f"L{level} #{number} {title}"
        fallback = f"KernelBench level {level}, problem {number} ({name})."
    else:
        label, fallback = title, f"Imported from {name}."
    # A savepoint per file: a refused file leaves the rest of the import standing.
    with transaction.atomic():
        return problem_create(user=user, name=label[:200], source=source, device=device, validate=False,
                              description=model_docstring(source) or fallback)


def files_from_uploads(uploads) -> list[tuple[str, bytes]]:
    """Uploaded .py files and zips, as (name, bytes); a .py over the size limit is kept unread,
    with its error, so the report names it. The import's bounds hold over all of them."""
    files = []
    for upload in uploads:
        if upload.name.endswith(".zip"):
            files.extend(files_from_zip(upload))
        else:
            too_large = size_error(upload.size)
            files.append((upload.name, too_large if too_large else upload.read()))
        too_much = import_size_error(len(files), sum(len(raw) for _, raw in files if isinstance(raw, bytes)))
        if too_much:
            raise too_much
    return files


@dataclass
class ValidationRequest:
    queued: int
    held: int  # pending problems left unqueued: the person's cap had no room for them
    refusal: str = ""  # why, when held


@transaction.atomic
def suite_request_validation(*, suite: Suite, user) -> ValidationRequest:
    """Queue, in the bulk class, the validation of the suite's problems that are stored, not yet
    validated (pending, with no validation queued or running), as many as the person's cap has room
    for. OverQuota when it has none."""
    pending = Problem.objects.filter(suite_memberships__suite=suite, validation_status=Problem.Validation.PENDING)
    active = EvaluationJob.objects.filter(
        problem__in=pending, purpose=EvaluationJob.Purpose.VALIDATE,
        status__in=EvaluationJob.UNFINISHED,
    ).values_list("problem_id", flat=True)
    waiting = list(pending.exclude(pk__in=list(active)).order_by("id"))
    room = job_room(user)
    if waiting and room == 0:
        raise jobs_refusal(user, len(waiting))
    chosen = waiting if room is None else waiting[:room]
    for problem in chosen:
        queue.enqueue_validation(problem, priority=Priority.BULK, requested_by=user)
    held = len(waiting) - len(chosen)
    return ValidationRequest(queued=len(chosen), held=held, refusal=_cap_note(user) if held else "")


# --- sweeps: judge a folder of existing solutions against a suite's problems -------------------

QUEUED, UNMATCHED = "queued", "unmatched"


_KERNELBENCH_RUN_FILE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


def solution_position(path: str) -> tuple[int | None, int | None, int]:
    """(level, number, sample) of a solution file: KernelBench's runs folder names it
    `level_1_problem_19_sample_0_kernel.py`; older layouts put it in a folder named for the problem
    (`level1/19_ReLU/kernel.py`) or name it `N_....py`, one sample (0) per problem."""
    match = _KERNELBENCH_RUN_FILE.match(PurePosixPath(path.replace("\\", "/")).name)
    if match:
        level, number, sample = (int(g) for g in match.groups())
        return level, number, sample
    level, number, _ = kernelbench_position(path)
    if number is None:
        parts = PurePosixPath(path.replace("\\", "/")).parts
        for part in reversed(parts[:-1]):
            match = _NUMBERED.match(part)
            if match:
                number = int(match.group(1))
                break
    return level, number, 0


@transaction.atomic
def suite_sweep(*, user, suite: Suite, files, progress=None, allow_library: bool = False,
                rule: str = "", baselines=()) -> list[ImportRow]:
    """Submit each solution file as a kernel of the suite problem with its level and number,
    queued for the evaluators in the bulk class, as many as the person's cap has room for (the
    rest refused, saying so). A suite whose problems carry no level (one flat folder) matches on
    the number alone. `allow_library` judges them with library calls allowed, as KernelBench does;
    `rule` by another correctness rule than KernelLab's (runner/common/rules.py); `baselines` timed beside
    eager and torch.compile's default (runner/host/baselines.py)."""
    members = list(suite.members.select_related("problem"))
    by_position = {(m.level, m.number): m for m in members if m.number is not None}
    by_number = {}
    for m in members:
        if m.number is not None:
            by_number.setdefault(m.number, []).append(m)
    files = list(files)
    rows = []
    room = job_room(user)
    for done, (name, raw) in enumerate(files, start=1):
        level, number, sample = solution_position(name)
        row = ImportRow(file=name, outcome=UNMATCHED, level=level, number=number, sample=sample)
        member = by_position.get((level, number))
        if member is None and number is not None and len(by_number.get(number, [])) == 1:
            member = by_number[number][0] if level is None else None
        if member is None:
            row.reason = f"no problem of the suite has level {level} and number {number}"
        elif room is not None and room <= 0:
            row.problem, row.outcome = member.problem, REFUSED
            row.reason = f"not queued: {_cap_reached(user)}; sweep this file again when some have finished."
        else:
            row.problem = member.problem
            try:
                with transaction.atomic():
                    source = _decode(name, raw)
                    kernel = kernel_submit(user=user, problem=member.problem, source=source,
                                           name=f"{suite.name}: {name}", priority=Priority.BULK,
                                           allow_library=allow_library, rule=rule, baselines=baselines)
                row.outcome, row.reason, row.kernel = QUEUED, str(kernel.code), kernel
                room = None if room is None else room - 1
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
    start anyway, each in its own transaction, and advance on the task queue like any search.

    Every search counts against the person's cap on active searches: past it the remaining problems
    are refused with the reason, and with no room at all the whole request is (OverQuota)."""
    if search_room(user, active_searches) == 0:
        raise searches_refusal(user, active_searches)
    rows, capped = [], ""
    for member in suite.members.select_related("problem").order_by("level", "number", "id"):
        if capped:
            rows.append(SearchSweepRow(member=member, outcome=REFUSED, reason=capped))
            continue
        name = search_fields.get("name") or ""
        fields = {**search_fields, "name": f"{name or suite.name}: {member.problem.name}"[:200]}
        try:
            with transaction.atomic():
                search = search_start(problem=member.problem, user=user, **fields)
        except ValidationError as error:
            rows.append(SearchSweepRow(member=member, outcome=REFUSED, reason=_reason(error)))
        except OverQuota as refusal:
            capped = f"not started: {refusal.message}"
            rows.append(SearchSweepRow(member=member, outcome=REFUSED, reason=capped))
        else:
            rows.append(SearchSweepRow(member=member, outcome=STARTED, search=search))
    return rows
