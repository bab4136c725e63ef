"""Random straight-line tensor programs, drawn by hypothesis, for the fuzzer in test_fuzz.py.

A program is Python source: one statement per step, over inputs ``v0, v1, ...`` with odd shapes
(0, 1, prime sizes), dtypes and layouts (transposed, strided, offset, expanded). The generator
runs each candidate step eagerly on example inputs while it draws the program, so it knows every
variable's shape and dtype and keeps mostly steps that eager accepts; now and then it keeps one
that eager rejects, and the program ends there (the compiled program must raise too). Because
everything is drawn from hypothesis, a failing program shrinks to a minimal one.
"""
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

FORWARD_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32,
                  torch.bool)
TRAINING_DTYPES = (torch.float32, torch.float64)
SIZES = (0, 1, 2, 3, 5, 7)
LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded")

# Each step is an expression assigned to a new variable, or statements that assign {out}, formatted
# with a (the first operand), b (the second) and d (a dim of a).
UNARY = [
    "-{a}", "{a}.abs()", "{a}.exp()", "{a}.log()", "{a}.sqrt()", "{a}.sin()", "{a}.tanh()",
    "{a}.sigmoid()", "torch.relu({a})", "{a}.reciprocal()", "{a}.floor()", "{a}.round()", "{a}.sign()",
    "{a}.square()", "F.gelu({a})", "F.silu({a})", "{a}.clamp(-1, 1)", "torch.nan_to_num({a})",
    "torch.logical_not({a})", "{a}.isnan()", "{a} * 2.5", "{a} + 3", "{a} / 3", "{a} // 2", "{a} % 3",
    "{a} ** 2", "~{a}", "torch.where({a} > 0, {a}, 0)", "{a}.clone()",
]
BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "torch.maximum({a}, {b})", "torch.minimum({a}, {b})",
    "{a} == {b}", "{a} < {b}", "torch.where({a} > 0, {a}, {b})", "torch.add({a}, {b}, alpha=2)",
    "torch.atan2({a}, {b})", "{a} ** {b}", "torch.floor_divide({a}, {b})", "torch.fmod({a}, {b})",
    "torch.logical_and({a}, {b})", "{a} & {b}",
]
REDUCTIONS = [
    "{a}.sum({d})", "{a}.sum({d}, keepdim=True)", "{a}.mean({d})", "{a}.amax({d})", "{a}.amin({d})",
    "{a}.prod({d})", "{a}.var({d})", "{a}.std({d}, keepdim=True)", "{a}.var({d}, correction=0)",
    "{a}.argmax({d})", "torch.softmax({a}, {d})", "torch.log_softmax({a}, {d})", "{a}.any({d})",
    "{a}.all({d})", "{a}.max({d}).values", "{a}.sum()", "{a}.mean()", "torch.logsumexp({a}, {d})",
    "{a}.cumsum({d})", "torch.linalg.vector_norm({a}, dim={d})", "{a} - {a}.mean({d}, keepdim=True)",
]
VIEWS = [
    "{a}.transpose(0, -1)", "{a}[..., ::2]", "{a}[1:]", "{a}.unsqueeze(0)", "{a}.squeeze()", "{a}.reshape(-1)",
    "{a}.view(-1)", "{a}.flatten()", "{a}.expand(2, *{a}.shape)", "{a}.select(0, 0)", "{a}.narrow({d}, 0, 1)",
    "{a}.mT", "{a}.diagonal()", "{a}.permute(*reversed(range({a}.ndim)))", "{a}[None, ..., None]",
]
INPLACE = [
    "{a}.add_({b})", "{a}.mul_({b})", "{a}.sub_({b})", "{a}.div_({b})", "{a}.copy_({b})", "{a}.clamp_(min=0)",
    "{a}.fill_(1.5)", "{a}.masked_fill_({b} > 0, 2)", "{a}.relu_()", "{a}.zero_()", "{a}.pow_(2)",
    "{a}[0] = 1; {out} = {a}", "{a}[..., ::2] = {b}; {out} = {a}", "{a}.mul_(2)",
]
MATMUL = ["{a} @ {b}", "torch.mm({a}, {b})", "{a} @ {a}.mT", "torch.bmm({a}, {b})", "torch.matmul({a}, {b}.T)"]
JOIN = ["torch.cat([{a}, {b}])", "torch.cat([{a}, {b}], {d})", "torch.stack([{a}, {b}])", "torch.cat([{a}, {a} * 2], -1)"]
INDEXING = [
    "{a}[torch.tensor([0, -1])]", "{a}.index_select({d}, torch.tensor([0]))", "{a}[:, 0]", "{a}[{a} > 0]",
    "{a}[0]", "{a}[-1:, None]", "torch.gather({a}, {d}, torch.zeros_like({a}, dtype=torch.int64))",
]
CASTS = ["{a}.to(torch.float32)", "{a}.to(torch.int64)", "{a}.to(torch.bool)", "{a}.to(torch.bfloat16)",
         "{a}.double()", "{a}.half()", "{a}.int()", "{a}.to({b}.dtype)"]
KINDS = {"unary": UNARY, "binary": BINARY, "reduction": REDUCTIONS, "view": VIEWS, "inplace": INPLACE,
         "matmul": MATMUL, "join": JOIN, "indexing": INDEXING, "cast": CASTS}


def make_input(shape, dtype, layout, seed, requires_grad):
    """A tensor of ``shape`` with values in quarters between -2 and 2 (exact in every float dtype,
    so comparisons and rounding do not hinge on rounding error), laid out as ``layout``."""
    g = torch.Generator().manual_seed(seed)
    base_shape = list(shape)
    if layout == "transposed" and len(shape) >= 2:
        base_shape[0], base_shape[-1] = base_shape[-1], base_shape[0]
    elif layout == "strided" and shape:
        base_shape[-1] *= 2
    elif layout == "offset":
        base_shape = [1 + (base_shape[0] if shape else 0)] + base_shape[1:] if shape else [2]
    elif layout == "expanded" and shape:
        base_shape[0] = 1
    values = torch.randint(-8, 9, base_shape, generator=g) / 4
    x = values > 0 if dtype == torch.bool else values.to(dtype)
    if layout == "transposed" and len(shape) >= 2:
        x = x.transpose(0, -1)
    elif layout == "strided" and shape:
        x = x[..., ::2]
    elif layout == "offset":
        x = x[1:] if shape else x[1]
    elif layout == "expanded" and shape:
        x = x.expand(shape)
    return x.requires_grad_(requires_grad)


class InputSpec:
    def __init__(self, shape, dtype, layout, seed, requires_grad):
        self.shape, self.dtype, self.layout, self.seed, self.requires_grad = shape, dtype, layout, seed, requires_grad

    def make(self):
        return make_input(self.shape, self.dtype, self.layout, self.seed, self.requires_grad)

    def __repr__(self):
        grad = ", requires_grad" if self.requires_grad else ""
        return f"{self.layout} {str(self.dtype).replace('torch.', '')}{list(self.shape)}{grad}"


class Program:
    """Inputs, statements and outputs of one drawn program; ``source`` is what runs."""

    def __init__(self, inputs, lines, outputs, raises):
        self.inputs, self.lines, self.outputs, self.raises = inputs, lines, outputs, raises

    @property
    def source(self):
        params = ", ".join(f"v{i}" for i in range(len(self.inputs)))
        body = [f"    {line}" for line in self.lines]
        returns = ", ".join(f"v{i}" for i in self.outputs)
        return f"def program({params}):\n" + "\n".join(body + [f"    return ({returns},)"]) + "\n"

    def function(self):
        namespace = {"torch": torch, "F": F}
        exec(compile(self.source, "<fuzz program>", "exec"), namespace)
        return namespace["program"]

    def __str__(self):
        specs = "\n".join(f"# v{i}: {spec!r}" for i, spec in enumerate(self.inputs))
        return f"{specs}\n{self.source}"


@st.composite
def input_specs(draw, training):
    """1 to 3 inputs whose shapes broadcast with one another: each a suffix of a common shape,
    with some sizes replaced by 1."""
    common = draw(st.lists(st.sampled_from(SIZES), min_size=0, max_size=3))
    specs = []
    for i in range(draw(st.integers(1, 3))):
        ndim = draw(st.integers(0, len(common)))
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in common[len(common) - ndim:])
        dtype = draw(st.sampled_from(TRAINING_DTYPES if training else FORWARD_DTYPES))
        layout = draw(st.sampled_from(LAYOUTS))
        specs.append(InputSpec(shape, dtype, layout, i, training))
    return specs


def _eager_step(line, env, out):
    """Run one step eagerly in ``env``; True if eager accepts it and it makes a tensor ``out``."""
    try:
        exec(line, env)
    except Exception:  # noqa: BLE001 - eager rejecting the step is what we are asking
        return False
    return isinstance(env.get(out), torch.Tensor)


@st.composite
def programs(draw, training=False):
    """A program of 1 to 6 steps over drawn inputs."""
    inputs = draw(input_specs(training))
    env = {"torch": torch, "F": F}
    env.update({f"v{i}": spec.make() for i, spec in enumerate(inputs)})
    lines, raises = [], False
    for _ in range(draw(st.integers(1, 6))):
        n = len(inputs) + len(lines)
        kind = draw(st.sampled_from(sorted(KINDS)))
        template = draw(st.sampled_from(KINDS[kind]))
        a, b = f"v{draw(st.integers(0, n - 1))}", f"v{draw(st.integers(0, n - 1))}"
        ndim = env[a].ndim
        d = draw(st.integers(-ndim, ndim - 1)) if ndim else 0
        out = f"v{n}"
        line = template.format(a=a, b=b, d=d, out=out) if "{out}" in template else \
            f"{out} = " + template.format(a=a, b=b, d=d)
        if _eager_step(line, env, out):
            lines.append(line)
        elif draw(st.integers(0, 9)) == 0:  # keep a step that eager rejects, and stop there
            lines.append(line)
            raises = True
            break
    if not lines:
        lines.append(f"v{len(inputs)} = v0.clone()")
    last = len(inputs) + len(lines) - 1
    others = draw(st.lists(st.integers(0, last), max_size=2))
    outputs = sorted(set(others) | {last})
    return Program(inputs, lines, outputs, raises)
