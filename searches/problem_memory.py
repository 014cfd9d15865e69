"""How much memory a problem's inputs take, read from its source without running any of it.

KernelBench problems size their inputs with module-level constants and factory calls
(`batch_size = 4096`, `torch.rand(batch_size, dim)`): this folds that arithmetic on the syntax
tree, so an import can say which problems are GPU-sized before a sandbox ever runs them. Only
literal arithmetic over names is folded; a shape it cannot read makes the estimate unknown
(None), never a guess. Outputs and parameters are not counted: validation measures the whole
set (`Problem.min_bytes`); this is the lower bound known at once, for free.

The source is anyone's text and this runs in the web process, where nothing can interrupt a
big-integer `**` once started: every operation is bounded before it runs (operand and result
magnitudes, exponents, tuple lengths, expression depth, steps per problem), and anything past
a bound is unknown too.
"""

import ast
from functools import lru_cache

FACTORIES = {"rand", "randn", "zeros", "ones", "empty", "full", "randint", "randn_like", "tensor"}
ITEM_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8,
              "int8": 1, "uint8": 1, "bool": 1, "int16": 2, "int32": 4, "int": 4, "int64": 8, "long": 8}
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}

MAX_MAGNITUDE = 2 ** 64  # no dimension or byte count comes near; operands of at most 64 bits stay cheap
MAX_EXPONENT = 64
MAX_ITEMS = 64  # elements of one tuple or shape
MAX_DEPTH = 50  # nesting of one expression (a 1,200-term sum is 1,200 deep)
MAX_STEPS = 2_000  # nodes folded for one problem; KernelBench's largest takes under 100


class Unknown(Exception):
    """A value the fold cannot read."""


class TooCostly(Unknown):
    """The problem's fold ran out of steps: the whole estimate is unknown."""


class Budget:
    """The steps one problem's fold may take, counted so a hostile source costs a bounded amount."""

    def __init__(self, steps: int = MAX_STEPS):
        self.left = steps
        self.used = 0

    def spend(self) -> None:
        if self.left <= 0:
            raise TooCostly
        self.left -= 1
        self.used += 1


def _number(value):
    """A folded value within the bounds, or Unknown (nan and inf fail the comparison too)."""
    if isinstance(value, tuple):
        if len(value) > MAX_ITEMS:
            raise Unknown
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) <= MAX_MAGNITUDE:
        raise Unknown
    return value


def _binop(op, left, right):
    """One arithmetic step, refused before it runs when its result could be huge."""
    if isinstance(left, tuple) or isinstance(right, tuple):
        raise Unknown
    if op is ast.Pow and right > MAX_EXPONENT:
        raise Unknown
    if op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0 \
            and (abs(left).bit_length() - 1) * right > MAX_MAGNITUDE.bit_length():
        raise Unknown  # the result would be past the bound: never computed
    return _number(_OPS[op](left, right))


def fold(node, names: dict, budget: Budget | None = None, depth: int = 0):
    """The value of a literal expression over known names: numbers, tuples, lists, + - * / // **."""
    budget = budget if budget is not None else Budget()
    budget.spend()
    if depth > MAX_DEPTH:
        raise Unknown
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return _number(node.value)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        if len(node.elts) > MAX_ITEMS:
            raise Unknown
        return tuple(fold(e, names, budget, depth + 1) for e in node.elts)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left = fold(node.left, names, budget, depth + 1)
        right = fold(node.right, names, budget, depth + 1)
        return _binop(type(node.op), left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = fold(node.operand, names, budget, depth + 1)
        if isinstance(value, tuple):
            raise Unknown
        return -value
    raise Unknown


def _assign(statement, names: dict, budget: Budget) -> None:
    """`a = 3`, `height = width = 128`, `d, h, w = 16, 32, 32`: names bound to folded values (an
    unreadable value unbinds them)."""
    if not isinstance(statement, ast.Assign):
        return
    if (len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Tuple)
            and isinstance(statement.value, ast.Tuple) and len(statement.value.elts) == len(statement.targets[0].elts)):
        for target, value in zip(statement.targets[0].elts, statement.value.elts):
            _assign(ast.Assign(targets=[target], value=value), names, budget)
        return
    if not all(isinstance(t, ast.Name) for t in statement.targets):
        return
    try:
        value = fold(statement.value, names, budget)
    except TooCostly:
        raise
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


def _shape(call, kind: str, names: dict, budget: Budget) -> tuple:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if kind == "randint":  # randint(high, size) or randint(low, high, size)
        size = keywords.get("size") or (call.args[-1] if len(call.args) >= 2 else None)
        if size is None:
            raise Unknown
        return tuple(fold(size, names, budget))
    if kind == "full":
        args = call.args[:1] or [keywords.get("size")]
    else:
        args = call.args or [keywords.get("size")]
    if not args or args[0] is None or len(args) > MAX_ITEMS:
        raise Unknown
    values = []
    for arg in args:
        if isinstance(arg, ast.Starred):  # torch.rand(batch_size, *input_shape)
            values.extend(fold(arg.value, names, budget))
        else:
            values.append(fold(arg, names, budget))
    if len(values) == 1 and isinstance(values[0], tuple):
        return values[0]
    return tuple(values)


def _tensor_bytes(call, kind: str, names: dict, budget: Budget) -> int:
    shape = _shape(call, kind, names, budget)
    if len(shape) > MAX_ITEMS or not all(isinstance(d, int) and 0 <= d <= MAX_MAGNITUDE for d in shape):
        raise Unknown
    count = 1
    for d in shape:  # bounded at each step, so no product grows past 128 bits
        count = _number(count * d)
    return count * _item_bytes(call, kind)


def _item_bytes(call, kind: str) -> int:
    for keyword in call.keywords:
        if keyword.arg == "dtype":
            if isinstance(keyword.value, ast.Attribute) and keyword.value.attr in ITEM_BYTES:
                return ITEM_BYTES[keyword.value.attr]
            raise Unknown
    return 8 if kind == "randint" else 4  # torch's defaults: int64, float32


def _until_return(body: list) -> list:
    """get_inputs' statements up to its first `return`: what follows never runs, so it is never read."""
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Return):
            return body[:index + 1]
    return body


@lru_cache(maxsize=1024)
def input_bytes(source: str) -> int | None:
    """Bytes of the tensors `get_inputs` creates with torch's factory functions, or None when a
    shape cannot be read from the source (or it creates none that way, or reading it would cost
    more than the bounds allow)."""
    return measure(source, Budget())


def measure(source: str, budget: Budget) -> int | None:
    """input_bytes, spending from the given budget (uncached)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep nesting fails in the parser
        return None
    names: dict = {}
    get_inputs = None
    try:
        for statement in tree.body:
            _assign(statement, names, budget)
            if isinstance(statement, ast.FunctionDef) and statement.name == "get_inputs":
                get_inputs = statement
        if get_inputs is None:
            return None
        body = _until_return(get_inputs.body)
        if any(isinstance(n, (ast.comprehension, ast.For, ast.While)) for s in body for n in ast.walk(s)):
            return None  # a loop makes a factory call count more than once
        local = dict(names)
        total, found = 0, 0
        for statement in body:
            _assign(statement, local, budget)
            for node in ast.walk(statement):
                budget.spend()
                kind = _factory(node) if isinstance(node, ast.Call) else None
                if kind in (None, "tensor", "randn_like"):
                    if kind is not None:
                        raise Unknown  # data or a shape from another tensor: not read here
                    continue
                total = _number(total + _tensor_bytes(node, kind, local, budget))
                found += 1
    except (Unknown, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None
    return total if found else None
