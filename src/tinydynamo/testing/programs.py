"""Random small programs of torch ops, shared by the inductor fuzzer and assignments a08 and a09.

A program is a list of steps ``(op, operand indices, params)`` over a pool of values that starts
with its inputs: pointwise ops, reductions (with keepdim), broadcasting, views, permutes, slices,
concatenation and dtype conversions. ``tests/inductor/test_inductor_fuzz.py`` draws programs with
hypothesis; ``tinydynamo.course.a08.random_program`` draws them from a seed, for the grader. Both
use the op table and the ``Program`` below, so a program prints and runs the same way in both.
"""
import torch
import torch.nn.functional as F

FLOATS = (torch.float32, torch.float64, torch.bfloat16)
F32_TOL = dict(atol=1e-4, rtol=1e-4)  # float32 math functions may differ from eager's in the last bit
F64_TOL = dict(atol=1e-9, rtol=1e-9)
BF16_TOL = dict(atol=3e-2, rtol=3e-2)  # ... which can flip a bfloat16 rounding


def _reduction(fn, name):
    def op(x, dim, keepdim):
        if name in ("softmax", "log_softmax"):
            return fn(x, dim)
        return fn(x, dim, keepdim=keepdim)

    return op


def _views():
    return {
        "permute": lambda x, dims: x.permute(dims),
        "flatten": lambda x, start: x.flatten(start, start + 1),
        "unflatten": lambda x, dim, sizes: x.unflatten(dim, sizes),
        "slice": lambda x, dim, start, step: x.narrow(dim, start, x.shape[dim] - start)[
            (slice(None),) * dim + (slice(None, None, step),)],
        "expand": lambda x, dim, size: x.unsqueeze(dim).expand(*x.shape[:dim], size, *x.shape[dim:]),
        "transpose_contiguous": lambda x: x.transpose(0, -1).contiguous(),
    }


# name -> function(*tensors, **params); a generator draws names from its own lists of these
UNARY_FLOAT = {
    "exp": torch.exp, "tanh": torch.tanh, "sin": torch.sin, "sigmoid": torch.sigmoid,
    "relu": torch.relu, "gelu": F.gelu, "sqrt_abs": lambda x: torch.sqrt(x.abs()),
    "rsqrt_abs1": lambda x: torch.rsqrt(x.abs() + 1), "log1p_abs": lambda x: torch.log1p(x.abs()),
    "reciprocal": torch.reciprocal, "floor": torch.floor, "round": torch.round,
}
UNARY_NUMBER = {"neg": torch.neg, "abs": torch.abs, "square": lambda x: x * x}
BINARY = {"add": torch.add, "mul": torch.mul, "maximum": torch.maximum, "minimum": torch.minimum,
          "div": torch.div, "sub": torch.sub}
COMPARE = {"gt": torch.gt, "eq": torch.eq, "le": torch.le, "lt": torch.lt}
REDUCE = {"sum": torch.sum, "amax": torch.amax, "amin": torch.amin}
REDUCE_FLOAT = {"mean": torch.mean, "var": torch.var, "softmax": torch.softmax,
                "log_softmax": torch.log_softmax}
REDUCE_ALL = {"sum_all": torch.sum, "amax_all": torch.amax}
VIEWS = _views()
OPS = {**UNARY_FLOAT, **UNARY_NUMBER, **BINARY, **COMPARE,
       **{name: _reduction(fn, name) for name, fn in {**REDUCE, **REDUCE_FLOAT}.items()},
       **VIEWS,
       "argmax": lambda x, dim: x.argmax(dim),
       "to": lambda x, dtype: x.to(dtype),
       "where": torch.where,
       "cat": lambda a, b, dim: torch.cat([a, b], dim),
       "scalar_add": lambda x, s: x + s,
       "scalar_mul": lambda x, s: s * x,
       "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
       "matmul": torch.matmul,
       **REDUCE_ALL}


class Program:
    """Steps ``(op, operand indices, params)`` over a pool that starts with the inputs."""

    def __init__(self, inputs):
        self.inputs = inputs  # [(shape, dtype, seed)]
        self.steps = []
        self.outputs = []
        self.dtypes_inside = set()  # a float64 output may carry float32 or bfloat16 rounding

    def make_inputs(self):
        """The inputs, the same on every call: integers in [-3, 3], bools half true."""
        tensors = []
        for shape, dtype, seed in self.inputs:
            g = torch.Generator().manual_seed(seed)
            if dtype == torch.bool:
                tensors.append(torch.rand(shape, generator=g) > 0.5)
            elif dtype.is_floating_point:
                tensors.append(torch.randn(shape, generator=g, dtype=dtype))
            else:
                tensors.append(torch.randint(-3, 4, shape, generator=g, dtype=dtype))
        return tensors

    def add_step(self, metas, step):
        """Append ``step``, and its result's meta tensor to ``metas``."""
        op, operands, params = step
        self.steps.append(step)
        metas.append(OPS[op](*[metas[i] for i in operands], **params))

    def tolerance(self):
        """How close to eager a compiled run must be, by the lowest precision computed inside."""
        if torch.bfloat16 in self.dtypes_inside:
            return BF16_TOL
        return F32_TOL if torch.float32 in self.dtypes_inside else F64_TOL

    def __call__(self, *inputs):
        pool = list(inputs)
        for op, operands, params in self.steps:
            pool.append(OPS[op](*[pool[i] for i in operands], **params))
        return tuple(pool[i] for i in self.outputs)

    def __repr__(self):
        lines = [f"v{i} = input{tuple(shape)} {dtype}" for i, (shape, dtype, _) in enumerate(self.inputs)]
        n = len(self.inputs)
        for k, (op, operands, params) in enumerate(self.steps):
            args = ", ".join([f"v{i}" for i in operands] + [f"{p}={v!r}" for p, v in params.items()])
            lines.append(f"v{n + k} = {op}({args})")
        lines.append(f"return {', '.join(f'v{i}' for i in self.outputs)}")
        return "\n".join(lines)
