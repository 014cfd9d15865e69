"""Static checks of a problem's (and a hand-written kernel's) source, the only checks the web process may do.

Problem code is untrusted: here it is only measured and parsed, never imported or run.
Running it (output shapes, baselines, errors at run time) is the sandboxed validation job's
work.
"""

import ast

from django.conf import settings
from django.core.exceptions import ValidationError

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
FORMAT_HINT = (
    "A KernelBench problem defines, at module level, class Model(nn.Module), "
    "get_inputs() and get_init_inputs()."
)


NESTING_MESSAGE = (
    "The source is nested too deeply for Python to parse (thousands of brackets, operators or "
    "blocks inside one another). " + FORMAT_HINT
)


def human_size(n_bytes: int) -> str:
    if n_bytes >= 1024 * 1024:
        return f"{n_bytes / (1024 * 1024):.1f} MB"
    if n_bytes >= 1024:
        return f"{n_bytes / 1024:.0f} KB"
    return f"{n_bytes} bytes"


def size_error(n_bytes: int) -> ValidationError | None:
    limit = settings.PROBLEM_SOURCE_MAX_BYTES
    if n_bytes <= limit:
        return None
    return ValidationError(
        f"The source is {human_size(n_bytes)}; the limit is {human_size(limit)}. "
        "A reference program this large is almost certainly not what you meant to upload: "
        "keep data out of the source and generate inputs in get_inputs().",
        code="too_large",
    )


def module_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Names bound at module level (also inside top-level if/try blocks), with their nodes."""
    names: dict[str, ast.AST] = {}

    def visit(statements):
        for node in statements:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    names[(alias.asname or alias.name).split(".")[0]] = node
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return names


def syntax_error_message(error: SyntaxError) -> str:
    if not error.lineno:  # e.g. NUL bytes: the source is not text Python can read at all
        return f"The source cannot be parsed as Python: {error.msg}."
    where = f"line {error.lineno}"
    if error.offset:
        where += f", column {error.offset}"
    message = f"Syntax error on {where}: {error.msg}."
    if error.text and error.text.strip():
        message += f" The line reads: {error.text.strip()[:200]}"
    return message


def check_problem_source(source: str) -> None:
    """Raise ValidationError with one specific message when `source` cannot be a problem."""
    error = size_error(len(source.encode("utf-8")))
    if error:
        raise error
    if not source.strip():
        raise ValidationError("The source is empty. " + FORMAT_HINT, code="empty")
    try:
        tree = ast.parse(source, filename="problem.py")
    except SyntaxError as exc:
        raise ValidationError(syntax_error_message(exc), code="syntax") from None
    except ValueError as exc:  # e.g. NUL bytes
        raise ValidationError(f"The source cannot be parsed as Python: {exc}.", code="syntax") from None
    except (RecursionError, MemoryError):
        # CPython's parser gives up on deep nesting (`x = ------…1`, thousands of brackets or
        # operators) with these rather than a SyntaxError; for the form it is the same mistake.
        raise ValidationError(NESTING_MESSAGE, code="too_deep") from None

    names = module_names(tree)
    missing = [name for name in REQUIRED_NAMES if name not in names]
    if missing:
        listed = ", ".join(missing)
        raise ValidationError(
            f"The source does not define {listed}. " + FORMAT_HINT, code="missing_names"
        )
    if not isinstance(names["Model"], (ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign)):
        raise ValidationError("Model must be a class (an nn.Module subclass). " + FORMAT_HINT, code="model_kind")


def model_docstring(source: str) -> str:
    """The Model class's docstring, or the module's, as a default description ("" if none)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            doc = ast.get_docstring(node)
            if doc:
                return doc.strip()
    return (ast.get_docstring(tree) or "").strip()


def check_kernel_source(source: str) -> None:
    """Raise ValidationError when `source` cannot be a kernel module: empty, too large, not Python,
    or without ModelNew. The same parse as the problem form's, before anything is queued."""
    if not source.strip():
        raise ValidationError("The kernel source is empty.", code="empty")
    if len(source.encode("utf-8")) > settings.KERNEL_SOURCE_MAX_BYTES:
        raise ValidationError(f"The kernel source is larger than {settings.KERNEL_SOURCE_MAX_BYTES:,} bytes.",
                              code="too_large")
    try:
        tree = ast.parse(source, filename="kernel.py")
    except SyntaxError as exc:
        raise ValidationError(syntax_error_message(exc), code="syntax") from None
    except ValueError as exc:
        raise ValidationError(f"The source cannot be parsed as Python: {exc}.", code="syntax") from None
    except (RecursionError, MemoryError):
        raise ValidationError(NESTING_MESSAGE, code="too_deep") from None
    if "ModelNew" not in module_names(tree):
        raise ValidationError("A kernel module must define `class ModelNew(nn.Module)` (see the kernel format).",
                              code="missing_names")
