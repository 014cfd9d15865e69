"""How much memory a problem's inputs take, read from its source without running any of it.

KernelBench problems size their inputs with module-level constants and factory calls
(`batch_size = 4096`, `torch.rand(batch_size, dim)`): this folds that arithmetic on the syntax
tree, so an import can say which problems are GPU-sized before a sandbox ever runs them. Only
literal arithmetic over names is folded; a shape it cannot read makes the estimate unknown
(None), never a guess. Outputs and parameters are not counted: validation measures the whole
set (`Problem.min_bytes`); this is the lower bound known at once, for free.
"""

import ast
import math
from functools import lru_cache

FACTORIES = {"rand", "randn", "zeros", "ones", "empty", "full", "randint", "randn_like", "tensor"}
ITEM_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8,
              "int8": 1, "uint8": 1, "bool": 1, "int16": 2, "int32": 4, "int": 4, "int64": 8, "long": 8}
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


class Unknown(Exception):
    """A value the fold cannot read."""


def fold(node, names: dict):
    """The value of a literal expression over known names: numbers, tuples, lists, + - * / // **."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(fold(e, names) for e in node.elts)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = fold(node.left, names), fold(node.right, names)
        if isinstance(left, tuple) or isinstance(right, tuple) or (isinstance(right, (int, float)) and right > 64
                                                                   and isinstance(node.op, ast.Pow)):
            raise Unknown
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -fold(node.operand, names)
    raise Unknown


def _assign(statement, names: dict) -> None:
    """`a = 3`, `height = width = 128`, `d, h, w = 16, 32, 32`: names bound to folded values (an
    unreadable value unbinds them)."""
    if not isinstance(statement, ast.Assign):
        return
    if (len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Tuple)
            and isinstance(statement.value, ast.Tuple) and len(statement.value.elts) == len(statement.targets[0].elts)):
        for target, value in zip(statement.targets[0].elts, statement.value.elts):
            _assign(ast.Assign(targets=[target], value=value), names)
        return
    if not all(isinstance(t, ast.Name) for t in statement.targets):
        return
    try:
        value = fold(statement.value, names)
    except (Unknown, ZeroDivisionError, OverflowError):
        value = None
    for target in statement.targets:
        if value is None:
            names.pop(target.id, None)
        else:
            names[target.id] = value


def _factory(call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr if func.attr in FACTORIES else None
    return None


def _shape(call, kind: str, names: dict) -> tuple:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if kind == "randint":  # randint(high, size) or randint(low, high, size)
        size = keywords.get("size") or (call.args[-1] if len(call.args) >= 2 else None)
        if size is None:
            raise Unknown
        return tuple(fold(size, names))
    if kind == "full":
        args = call.args[:1] or [keywords.get("size")]
    else:
        args = call.args or [keywords.get("size")]
    if not args or args[0] is None:
        raise Unknown
    values = []
    for arg in args:
        if isinstance(arg, ast.Starred):  # torch.rand(batch_size, *input_shape)
            values.extend(fold(arg.value, names))
        else:
            values.append(fold(arg, names))
    if len(values) == 1 and isinstance(values[0], tuple):
        return values[0]
    return tuple(values)


def _item_bytes(call, kind: str) -> int:
    for keyword in call.keywords:
        if keyword.arg == "dtype":
            if isinstance(keyword.value, ast.Attribute) and keyword.value.attr in ITEM_BYTES:
                return ITEM_BYTES[keyword.value.attr]
            raise Unknown
    return 8 if kind == "randint" else 4  # torch's defaults: int64, float32


@lru_cache(maxsize=1024)
def input_bytes(source: str) -> int | None:
    """Bytes of the tensors `get_inputs` creates with torch's factory functions, or None when a
    shape cannot be read from the source (or it creates none that way)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: dict = {}
    get_inputs = None
    for statement in tree.body:
        _assign(statement, names)
        if isinstance(statement, ast.FunctionDef) and statement.name == "get_inputs":
            get_inputs = statement
    if get_inputs is None:
        return None
    if any(isinstance(n, (ast.comprehension, ast.For, ast.While)) for n in ast.walk(get_inputs)):
        return None  # a loop makes a factory call count more than once
    local = dict(names)
    total, found = 0, 0
    try:
        for statement in get_inputs.body:
            _assign(statement, local)
            for node in ast.walk(statement):
                kind = _factory(node) if isinstance(node, ast.Call) else None
                if kind in (None, "tensor", "randn_like"):
                    if kind is not None:
                        raise Unknown  # data or a shape from another tensor: not read here
                    continue
                shape = _shape(node, kind, local)
                if not all(isinstance(d, int) and d >= 0 for d in shape):
                    raise Unknown
                total += math.prod(shape) * _item_bytes(node, kind)
                found += 1
    except (Unknown, ZeroDivisionError, OverflowError, TypeError):
        return None
    return total if found else None
