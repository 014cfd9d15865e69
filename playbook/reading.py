"""Reads what a playbook kernel needs from a problem's source, statically (never runs it).

The generated ModelNew repeats Model's constructor (same signature, same submodules, so the
runner copies parameters by name) and forward signature; each family then needs a few facts
about the op itself (softmax's dim, the reduced dim, the elementwise expression, ...), which are
taken from the source as Python expressions and evaluated inside ModelNew at run time.
"""

import ast
import copy
from dataclasses import dataclass, field


class ReadError(ValueError):
    """The problem does not have the shape the family's playbook kernels are written for."""


@dataclass
class ProblemShape:
    constants: str  # module-level constant assignments, repeated in the kernel module
    init_args: str  # "self, in_channels, ..." as written in Model.__init__
    init_body: str  # Model.__init__'s body with super() normalised
    forward_args: list[str]  # forward's argument names after self
    forward: ast.FunctionDef = field(repr=False)
    init: ast.FunctionDef | None = field(repr=False, default=None)
    init_inputs: ast.expr | None = field(repr=False, default=None)  # what get_init_inputs returns

    @property
    def first_input(self) -> str:
        if not self.forward_args:
            raise ReadError("Model.forward takes no tensor arguments")
        return self.forward_args[0]

    def constant_values(self) -> dict:
        """The module-level constants whose values are literals (sizes, dims, flags)."""
        values = {}
        for line in self.constants.splitlines():
            try:
                node = ast.parse(line).body[0]
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    values[node.targets[0].id] = ast.literal_eval(node.value)
            except (SyntaxError, ValueError, IndexError):
                continue
        return values

    def init_value(self, name: str):
        """The value Model.__init__'s parameter `name` gets when the problem is built, where the
        source says it statically: get_init_inputs' list (literals or module constants), else the
        parameter's default. None when it cannot be known without running the problem."""
        if self.init is None:
            return None
        params = [arg.arg for arg in self.init.args.args[1:]]
        if name not in params:
            return None
        index = params.index(name)
        given = self.init_inputs.elts if isinstance(self.init_inputs, (ast.List, ast.Tuple)) else None
        if given is None or any(isinstance(e, ast.Starred) for e in given):
            return None
        if index < len(given):
            value = given[index]
            if isinstance(value, ast.Name):
                return self.constant_values().get(value.id)
            try:
                return ast.literal_eval(value)
            except ValueError:
                return None
        defaults = self.init.args.defaults
        first_default = len(self.init.args.args) - len(defaults)
        if index + 1 >= first_default:
            try:
                return ast.literal_eval(defaults[index + 1 - first_default])
            except ValueError:
                return None
        return None


def read_problem(source: str) -> ProblemShape:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ReadError(f"the problem does not parse: {error}") from error
    model = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"), None)
    if model is None:
        raise ReadError("the problem has no class Model")
    methods = {node.name: node for node in model.body if isinstance(node, ast.FunctionDef)}
    if "forward" not in methods:
        raise ReadError("Model has no forward method")
    forward = methods["forward"]
    if forward.args.vararg or forward.args.kwonlyargs or forward.args.kwarg:
        raise ReadError("Model.forward takes *args/**kwargs: the playbook needs named tensor arguments")
    init = methods.get("__init__")
    factory = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "get_init_inputs"),
                   None)
    returned = next((node.value for node in ast.walk(factory) if isinstance(node, ast.Return)), None) if factory else None
    return ProblemShape(
        constants=_constants(tree),
        init_args=ast.unparse(init.args) if init else "self",
        init_body=_init_body(init),
        forward_args=[arg.arg for arg in forward.args.args[1:]],
        forward=forward,
        init=init,
        init_inputs=returned,
    )


def _constants(tree: ast.Module) -> str:
    """Top-level assignments without calls (sizes, dims): forward may refer to them."""
    kept = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            and not any(isinstance(inner, ast.Call) for inner in ast.walk(node))]
    return "\n".join(ast.unparse(node) for node in kept)


class _PlainSuper(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super":
            node.args = []
        return node


def _init_body(init: ast.FunctionDef | None) -> str:
    if init is None:
        return "super().__init__()"
    body = [_PlainSuper().visit(statement) for statement in init.body
            if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))]
    return "\n".join(ast.unparse(statement) for statement in body) or "super().__init__()"


# -- finding the op ------------------------------------------------------------------------

def _name(func: ast.expr) -> str:
    """torch.nn.functional.softmax -> 'softmax'; x.softmax -> 'softmax'."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_method_call(call: ast.Call, torch_aliases=("torch", "F", "nn", "functional")) -> bool:
    """x.sum(...) (a tensor method) rather than torch.sum(x, ...)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    owner = call.func.value
    while isinstance(owner, ast.Attribute):
        owner = owner.value
    return not (isinstance(owner, ast.Name) and owner.id in torch_aliases)


def calls(node: ast.AST, names: set[str]) -> list[ast.Call]:
    return [inner for inner in ast.walk(node) if isinstance(inner, ast.Call) and _name(inner.func) in names]


def argument(call: ast.Call, position: int, keyword: str, default: str | None = None) -> str | None:
    """The source text of an argument, counting `self` of a method call as position 0."""
    for item in call.keywords:
        if item.arg == keyword:
            return ast.unparse(item.value)
    args = ([call.func.value] if _is_method_call(call) else []) + list(call.args)
    if position < len(args):
        return ast.unparse(args[position])
    return default


def submodule(shape: ProblemShape, class_names: set[str]) -> str | None:
    """`self.ln` when Model.__init__ assigns one of class_names (e.g. nn.LayerNorm) to it."""
    found = constructed(shape, class_names)
    return found[0] if found else None


def constructed(shape: ProblemShape, class_names: set[str]) -> tuple[str, ast.Call] | None:
    """(`self.ln`, the constructor call) for the first of class_names Model.__init__ assigns."""
    if shape.init is None:
        return None
    for node in ast.walk(shape.init):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and _name(node.value.func) in class_names and len(node.targets) == 1):
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                return f"self.{target.attr}", node.value
    return None


class _Inline(ast.NodeTransformer):
    def __init__(self, bound: dict):
        self.bound = bound

    def visit_Name(self, node: ast.Name):
        return copy.deepcopy(self.bound.get(node.id, node))


def returned(shape: ProblemShape) -> ast.expr | None:
    """What forward returns, with its plain `name = value` steps inlined (`x = self.conv(x);
    return x` gives `self.conv(x)`); None for anything but such a straight line."""
    bound: dict[str, ast.expr] = {}
    for statement in shape.forward.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            bound[statement.targets[0].id] = _Inline(bound).visit(copy.deepcopy(statement.value))
        elif isinstance(statement, ast.Return) and statement.value is not None:
            return _Inline(bound).visit(copy.deepcopy(statement.value))
        else:
            return None
    return None


def require_whole(shape: ProblemShape, op: str, family: str, suffixes: tuple[str, ...] = ()) -> None:
    """Refuse a problem whose forward does more than `op` (its source text), e.g. KernelBench level 2's
    `x = self.conv(x); x = torch.softmax(x, dim=1); return torch.tanh(x)`: a kernel for the op alone
    would be wrong. `suffixes`: what may follow the op (max's `[0]`)."""
    result = returned(shape)
    text = ast.unparse(result) if result is not None else None
    if text not in (op, *(op + suffix for suffix in suffixes)):
        raise ReadError(f"the playbook's {family} kernels compute {op} as forward returns it, "
                        f"not {text if text is not None else 'a forward of several steps'!r}")


def static_value(shape: ProblemShape, text: str):
    """The value of an argument's source text where the problem fixes it statically (a literal,
    a module constant, or an __init__ parameter: ProblemShape.init_value); else None."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if text.isidentifier():
        if shape.init is not None and text in [arg.arg for arg in shape.init.args.args[1:]]:
            return shape.init_value(text)  # a parameter shadows the module's constant of that name
        return shape.constant_values().get(text)
    return None

