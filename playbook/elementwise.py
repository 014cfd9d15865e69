"""Elementwise ops of one tensor: Model.forward's expression is translated to a C expression
(shared by the C and CUDA kernels), so any composition of the supported functions works."""

import ast
import math
import textwrap

from .reading import ReadError, static_value
from .recipes import Family, Parts, Recipe, bind
from .sources import kernel_source

# name -> (arity after the tensor, C template using {a} and {b}, {c} for extra arguments, defaults)
_FUNCTIONS = {
    "relu": ("relu_f({a})", ()), "sigmoid": ("sigmoid_f({a})", ()), "tanh": ("tanhf({a})", ()),
    "exp": ("expf({a})", ()), "log": ("logf({a})", ()), "sqrt": ("sqrtf({a})", ()),
    "rsqrt": ("(1.0f / sqrtf({a}))", ()),
    "abs": ("fabsf({a})", ()), "sin": ("sinf({a})", ()), "cos": ("cosf({a})", ()), "erf": ("erff({a})", ()),
    "neg": ("(-{a})", ()), "square": ("(({a}) * ({a}))", ()), "silu": ("silu_f({a})", ()),
    "gelu": (None, ()), "softplus": ("softplus_f({a}, {b}, {c})", (1.0, 20.0)),
    "elu": ("elu_f({a}, {b})", (1.0,)), "leaky_relu": ("leaky_f({a}, {b})", (0.01,)),
    "hardtanh": ("clamp_f({a}, {b}, {c})", (-1.0, 1.0)), "clamp": ("clamp_f({a}, {b}, {c})", (None, None)),
    "clip": ("clamp_f({a}, {b}, {c})", (None, None)), "hardsigmoid": ("clamp_f(({a}) / 6.0f + 0.5f, 0.0f, 1.0f)", ()),
    "hardswish": ("(({a}) * clamp_f(({a}) / 6.0f + 0.5f, 0.0f, 1.0f))", ()),
    "mish": ("(({a}) * tanhf(softplus_f({a}, 1.0f, 20.0f)))", ()),
    "selu": ("(1.0507009873554805f * elu_f({a}, 1.6732632423543772f))", ()),
}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_KEYWORDS = {"softplus": ("beta", "threshold"), "elu": ("alpha",), "leaky_relu": ("negative_slope",),
             "hardtanh": ("min_val", "max_val"), "clamp": ("min", "max"), "clip": ("min", "max")}

HELPERS = kernel_source("elementwise/helpers.h")


# CPU kernels whose parameters set INLINE_MATH get branch-free inline versions of erff and expf
# in op(), so the `omp simd` loop vectorises (libm's scalar calls would keep it scalar).
# erf: one degree-13 polynomial in |x| on [0, 3.92] (Chebyshev fit, Horner in the centred variable,
# absolute error ~2.6e-6, also at 0; GELU's err ~0.03 of the fp32 tolerance), 1 beyond (float erf
# rounds to 1 there). Measured on GELU 256x4096: degree 15 (2.5e-7) was level with eager PyTorch, a split
# x * P(x^2) + Q(|x|) (2e-7) 10% slower still; at this size compute and memory take about half the
# time each. exp: Cody-Waite reduction, degree-6 polynomial, 2^k in the exponent.
C_INLINE_MATH = kernel_source("elementwise/inline_math.h")


def _literal(value) -> str:
    return f"{float(value)!r}f".replace("inff", "INFINITY")


class _Translator:
    def __init__(self, tensor: str, constants: dict):
        self.tensor, self.constants, self.locals = tensor, constants, set()

    def expr(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            if node.id == self.tensor:
                return "v"
            if node.id in self.locals:
                return f"t_{node.id}"
            if node.id in self.constants:
                return _literal(self.constants[node.id])
            raise ReadError(f"unknown name {node.id!r} in the elementwise expression")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and f"self.{node.attr}" in self.constants):  # e.g. self.alpha = alpha, fixed by get_init_inputs
            return _literal(self.constants[f"self.{node.attr}"])
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return _literal(node.value)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math"
                and node.attr in _MATH_CONSTANTS):  # e.g. GELU's tanh form: math.sqrt(2.0 / math.pi)
            return _literal(_MATH_CONSTANTS[node.attr])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return f"({'-' if isinstance(node.op, ast.USub) else '+'}{self.expr(node.operand)})"
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left), self.expr(node.right)
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
            if type(node.op) in ops:
                return f"({left} {ops[type(node.op)]} {right})"
            if isinstance(node.op, ast.Pow):
                return self.power(left, node.right)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise ReadError(f"the playbook cannot translate {ast.unparse(node)!r} to C")

    def call(self, node: ast.Call) -> str:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        name = name.rstrip("_") if name.endswith("_") and name != "_" else name
        method = isinstance(func, ast.Attribute) and not self._is_namespace(func.value)
        args = ([func.value] if method else []) + list(node.args)
        keywords = {item.arg: item.value for item in node.keywords}
        if name == "pow" and args and (len(args) > 1 or "exponent" in keywords):
            return self.power(self.expr(args[0]), args[1] if len(args) > 1 else keywords["exponent"])
        if name not in _FUNCTIONS or not args:
            raise ReadError(f"the playbook has no elementwise translation for {ast.unparse(node)!r}")
        a = self.expr(args[0])
        if name == "gelu":
            approximate = keywords.get("approximate")
            if approximate is not None and getattr(approximate, "value", None) == "tanh":
                return f"(0.5f * {a} * (1.0f + tanhf(0.7978845608028654f * ({a} + 0.044715f * {a} * {a} * {a}))))"
            return f"(0.5f * {a} * (1.0f + erff({a} * 0.7071067811865476f)))"
        template, defaults = _FUNCTIONS[name]
        extra = []
        for index, default in enumerate(defaults):
            keyword = _KEYWORDS[name][index]
            given = args[index + 1] if index + 1 < len(args) else keywords.get(keyword)
            if given is None or (isinstance(given, ast.Constant) and given.value is None):
                # clamp's missing bound is no bound at all
                extra.append(_literal(default) if default is not None else ("-INFINITY", "INFINITY")[index])
            else:
                extra.append(self.expr(given))
        return template.format(a=a, **dict(zip("bc", extra)))

    def power(self, base: str, exponent: ast.expr) -> str:
        """Small integer powers as products (as exact as PyTorch's), others through powf."""
        value = getattr(exponent, "value", None)
        if isinstance(exponent, ast.Constant) and value in (2, 3) and not isinstance(value, bool):
            return "(" + " * ".join([base] * int(value)) + ")"
        return f"powf({base}, {self.expr(exponent)})"

    @staticmethod
    def _is_namespace(node) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in {"torch", "F", "nn", "functional", "math"}


def read(shape) -> dict:
    if len(shape.forward_args) != 1:
        raise ReadError("the playbook's elementwise kernels take exactly one tensor argument")
    constants = {**shape.constant_values(), **_attributes(shape)}
    translator = _Translator(shape.first_input, {k: v for k, v in constants.items() if isinstance(v, (int, float))})
    lines = []
    for statement in shape.forward.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            target = statement.targets[0].id
            value = translator.expr(statement.value)
            if target == shape.first_input:
                lines.append(f"v = {value};")
            else:
                translator.locals.add(target)
                lines.append(f"float t_{target} = {value};")
        elif isinstance(statement, ast.Return) and statement.value is not None:
            lines.append(f"return {translator.expr(statement.value)};")
            break
        else:
            raise ReadError(f"the playbook cannot translate the statement {ast.unparse(statement)!r}")
    else:
        raise ReadError("Model.forward has no return statement")
    return {"input": shape.first_input, "body": "\n    ".join(lines)}


def _attributes(shape) -> dict:
    """`self.name` -> its number, for Model.__init__'s plain `self.name = value` assignments whose
    value the source fixes (playbook.reading.static_value): the kernel is built with it."""
    found = {}
    for statement in shape.init.body if shape.init else ():
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Attribute)
                and isinstance(statement.targets[0].value, ast.Name) and statement.targets[0].value.id == "self"):
            value = static_value(shape, ast.unparse(statement.value))
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[f"self.{statement.targets[0].attr}"] = value
    return found


def device_code(facts: dict) -> str:
    return C_INLINE_MATH + HELPERS + f"DEVICE_FN float op(float v) {{\n    {facts['body']}\n}}\n"


def forward(facts: dict, launch: str) -> str:
    return f"""
{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
x = x.contiguous()
y = torch.empty_like(x)
n = x.numel()
if n:
{textwrap.indent(launch, '    ')}
return y
"""


# -- CPU -----------------------------------------------------------------------------------

_C = kernel_source("elementwise/cpu.c")


def _cpu(params):
    flags = ("-fopenmp",) if params["parallel"] else ("-fopenmp-simd",) if params["simd"] else ("-fno-tree-vectorize",)
    if params.get("inline_math"):
        # lets GCC if-convert the selects without AVX-512 masks (AVX2 hosts); no result changes
        flags += ("-fno-trapping-math",)
    return Parts(_C, "_launch('elementwise', _ptr(x), _ptr(y), _n(n))", flags=flags)


CPU = (
    Recipe("naive", "Naive scalar loop",
           "The straightforward translation: one loop applying the expression to each element, kept scalar.",
           ({"parallel": 0, "simd": 0},), _cpu),
    Recipe("openmp_simd", "OpenMP across cores with SIMD inside each thread's range",
           "Elementwise work is embarrassingly parallel: `omp parallel for simd` splits the array across cores in "
           "contiguous ranges (good for prefetching) and asks for vector lanes within each (libm calls without a "
           "vector form stay scalar). The second variant keeps one thread and only vectorises.",
           ({"parallel": 1, "simd": 1}, {"parallel": 0, "simd": 1}), _cpu),
    Recipe("inline_vector_math", "Inline branch-free erf and exp so the SIMD loop really vectorises",
           "A loop that calls libm's erff or expf stays scalar whatever the pragma says. Swap them for inline, "
           "branch-free versions the compiler turns into vector code (AVX-512 on this host): erf from one "
           "Chebyshev-fitted polynomial of degree 13 on [0, 3.92], then 1 (~2.6e-6), exp by Cody-Waite "
           "range reduction and a degree-6 polynomial with 2^k built in the exponent bits. One thread, "
           "contiguous, the output written once; the first variant works in blocks of 256 values and "
           "prefetches the input 8 KB ahead, since at this size memory and compute each take about half the time.",
           ({"parallel": 0, "simd": 1, "inline_math": 1, "prefetch": 2048},
            {"parallel": 0, "simd": 1, "inline_math": 1, "prefetch": 0}), _cpu),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU = kernel_source("elementwise/gpu.cu")


def _cuda(params):
    per_block = params.get("block", 1) * params["unroll"]
    if params["kernel"] == "ew_naive":
        launch = "_launch('ew_naive', ((n + 255) // 256,), (256,), _ptr(x), _ptr(y), _n(n))"
    else:
        launch = f"""
if x.data_ptr() % 16 or y.data_ptr() % 16:
    _launch('ew_naive', ((n + 255) // 256,), (256,), _ptr(x), _ptr(y), _n(n))
else:
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    _launch('ew_vec4', (min(sms * {params['waves']}, (n // 4 + {per_block - 1}) // {per_block}),),
            ({params['block']},), _ptr(x), _ptr(y), _n(n))"""
    return Parts(_CU, launch, kernels=("ew_naive", "ew_vec4"))


CUDA = (
    Recipe("naive", "One thread per element",
           "The straightforward kernel: a thread per element, 32-bit loads and stores.",
           ({"kernel": "ew_naive", "unroll": 1, "stream": 0},), _cuda),
    Recipe("float4_grid_stride", "float4 vectorized loads/stores in a grid-stride loop sized to the SMs",
           "Move 16 bytes per load and store (fewer instructions and memory transactions), keep several loads "
           "in flight per thread (UNROLL), and launch a fixed number of waves over the SMs instead of one thread "
           "per element; some variants add streaming (evict-first) cache hints since nothing is reused.",
           ({"kernel": "ew_vec4", "block": 256, "unroll": 1, "waves": 32, "stream": 0},
            {"kernel": "ew_vec4", "block": 256, "unroll": 4, "waves": 8, "stream": 0},
            {"kernel": "ew_vec4", "block": 512, "unroll": 2, "waves": 4, "stream": 1},
            {"kernel": "ew_vec4", "block": 256, "unroll": 1, "waves": 32, "stream": 1}), _cuda),
)

FAMILIES = (Family("elementwise", read, forward, {"cpu": CPU, "cuda": CUDA}, device_code),)
