"""Dynamic shapes in dynamo: size symbols, guards on sizes, the automatic-dynamic policy, and
every compiled result checked against eager."""
import math
import warnings

import pytest
import sympy
import torch
import torch._dynamo
import torch.nn.functional as F

import tinydynamo
from tinydynamo import config
from tinydynamo.symbolic_shapes import FloorDiv, ShapeEnv, to_python
from tinydynamo.testing.real_models import REAL_MODELS

BACKENDS = ["eager", "aot_eager", "inductor"]


@pytest.fixture(autouse=True)
def fresh():
    tinydynamo.reset()
    yield
    tinydynamo.reset()


def check_sizes(fn, make_args, sizes, backend="eager", **compile_kwargs):
    """Call the compiled ``fn`` with arguments of each size; every result must equal eager's."""
    compiled = tinydynamo.compile(fn, backend=backend, **compile_kwargs)
    for size in sizes:
        args = make_args(size)
        expected, actual = fn(*args), compiled(*args)
        torch.testing.assert_close(actual, expected, msg=lambda m: f"size {size}: {m}")
    return tinydynamo.stats()


def view_and_reduce(x, y):
    n = x.shape[0]
    z = x.view(n * 2, -1) * 2
    return z.sum(1) + y.sum(), x[: n // 2], x.size(), x.numel()


def pairs(n):
    return torch.randn(n, 6), torch.randn(n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_twelve_batch_sizes_compile_twice(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback, no cache-limit warning
        stats = check_sizes(view_and_reduce, pairs, range(2, 26, 2), backend)
    assert stats["frames_compiled"] == 2
    assert stats["fallbacks"] == 0 and stats.get("graph_breaks", 0) == 0


def test_dynamic_true_compiles_once():
    stats = check_sizes(view_and_reduce, pairs, range(2, 26, 2), dynamic=True)
    assert stats["frames_compiled"] == 1


def test_dynamic_false_specialises_every_size():
    stats = check_sizes(view_and_reduce, pairs, [2, 4, 6, 8], dynamic=False)
    assert stats["frames_compiled"] == 4


def test_sizes_zero_and_one_are_specialised():
    def f(x):
        return x * 2 + x.shape[0]

    stats = check_sizes(f, lambda n: (torch.randn(n, 3),), [4, 5, 6, 1, 7, 0], dynamic=True)
    # one symbolic graph for 4..7; size 1 and size 0 each fail `size >= 2` and get their own
    assert stats["frames_compiled"] == 3


def test_guards_name_the_sizes():
    x = torch.randn(6, 4)
    tinydynamo.mark_dynamic(x, 0)
    report = tinydynamo.explain(lambda x: x.view(x.shape[0] // 2, -1) + 1)(x)
    guards = "\n".join(report.guards)
    assert "x.size()[0]" in guards
    assert "L_x_size_0 >= 2" in guards
    assert "%" in guards  # the view needs an even size
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_a_divisibility_guard_recompiles_for_odd_sizes():
    def f(x):
        return x.view(x.shape[0] // 2, -1) * 3

    stats = check_sizes(f, lambda n: (torch.randn(2 * n, 3),), [2, 3, 4, 5], dynamic=True)
    assert stats["frames_compiled"] == 1


def test_mark_dynamic_and_mark_static():
    def f(x):
        return (x * 2).sum(0)

    compiled = tinydynamo.compile(f, backend="eager", dynamic=False)
    for n in (3, 4, 5):
        x = torch.randn(n, 2)
        tinydynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), f(x))
    assert tinydynamo.stats()["frames_compiled"] == 1

    tinydynamo.reset()
    compiled = tinydynamo.compile(f, backend="eager", dynamic=True)
    for n in (3, 4, 5):
        x = torch.randn(n, 2)
        tinydynamo.mark_static(x, 0)
        torch.testing.assert_close(compiled(x), f(x))
    assert tinydynamo.stats()["frames_compiled"] == 3


def test_mark_dynamic_checks_the_dimension():
    with pytest.raises(IndexError, match="out of range"):
        tinydynamo.mark_dynamic(torch.randn(2, 3), 2)


def test_duck_sizing_guards_equal_sizes():
    def f(x, y):
        return x + y.sum()

    compiled = tinydynamo.compile(f, backend="eager", dynamic=True)
    for nx, ny in [(4, 4), (5, 5), (5, 7), (6, 8)]:
        x, y = torch.randn(nx), torch.randn(ny)
        torch.testing.assert_close(compiled(x, y), f(x, y))
    # x and y had one symbol while equal; unequal sizes fail that guard once, then have two
    assert tinydynamo.stats()["frames_compiled"] == 2


def test_symbolic_sizes_through_torch_calls():
    def f(x):
        n, d = x.shape
        positions = torch.arange(n).unsqueeze(1)
        pad = x.new_zeros(n, 2)
        y = torch.cat([x + positions, pad], dim=1)
        return y.reshape(-1)[: n * d], y[:, :d], len(x)

    stats = check_sizes(f, lambda n: (torch.randn(n, 3),), [4, 5, 8, 9], dynamic=True)  # not 3: duck sizing
    assert stats["frames_compiled"] == 1


def test_augmented_assignment_on_a_size():
    """``n = 8; n += s0`` was recorded as ``iadd(8, s0)``, which FX writes as ``8 += s0``: a
    SyntaxError that ran Mistral's forward eagerly once its sequence length became dynamic."""
    def f(x):
        n = 8
        n += x.shape[0]
        n *= 2
        return x.new_zeros(n) + n

    stats = check_sizes(f, lambda n: (torch.randn(n),), [4, 5, 9], dynamic=True)
    assert stats["frames_compiled"] == 1 and stats["fallbacks"] == 0


def test_divmod_of_a_size_stays_symbolic():
    """``divmod(s0, 3)`` is ``(s0 // 3, s0 % 3)``, Python's floor semantics for a negative size
    expression too; it specialised the size (a compile per size)."""
    def f(x):
        q, r = divmod(x.shape[0], 3)
        nq, nr = divmod(-x.shape[0], 4)
        return x * q + r, (q, r, nq, nr)

    stats = check_sizes(f, lambda n: (torch.randn(n, 2),), [3, 5, 7, 10], dynamic=None)
    assert stats["frames_compiled"] == 2


def sizes_through_builtins(x):
    n = x.shape[-1]
    side = int(math.sqrt(n))  # a ViT's grid of patches
    scale = (n if isinstance(n, int) else 0) / math.sqrt(float(n))
    head = x[..., : math.ceil(n / 3)].sum(-1) + x[..., : max(math.floor(n / 4), 1)].sum(-1)
    grid = x.reshape(x.shape[0], side, side).sum(-1)
    same = x.shape == (x.shape[0], n) and x.shape[1:] != [n] and -1 not in x.shape  # a tuple never equals a list
    return grid * scale, head * min(n, 100, x.shape[0] + 50), int(n * 0.5), same, callable(n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtins_and_math_on_sizes_keep_them_symbolic(backend):
    """``int``, ``float``, ``max``/``min`` of ints, ``math.ceil``/``floor``/``sqrt``, ``isinstance``,
    ``callable``, ``==`` between shapes and tuples and ``in`` compute on the size without reading it, as
    in torch.compile: two compiles over five sizes. Each specialised the size (five compiles)."""
    stats = check_sizes(sizes_through_builtins, lambda n: (torch.randn(2, n),), [16, 25, 36, 49, 64],
                        backend=backend)
    assert stats["frames_compiled"] == 2


def test_int_of_a_negative_size_expression_specialises_it():
    """``int()`` truncates towards 0 and the size expressions floor: a negative value, where they
    differ, is specialised rather than kept symbolic."""
    stats = check_sizes(lambda x: x * int((x.shape[0] - 20) / 3), lambda n: (torch.randn(n),), [4, 5, 7, 8])
    assert stats["frames_compiled"] == 4


def test_a_symbolic_shape_stays_a_torch_size():
    """Slices, concatenations and repeats of a shape with symbolic sizes are torch.Size objects,
    which print as eager's and count their elements (they came back as tuples, and
    ``x.size().numel()`` raised a TypeError, after the recompile that made the size dynamic)."""
    def f(x):
        s = x.shape
        made = (s + (1,), (1,) + s, s * 2, s[::-1], s[1:], x.size().numel())
        return x + 1, made, [type(m).__name__ for m in made], callable(x), callable(f)

    compiled = tinydynamo.compile(f, backend="eager")
    for n in (4, 5, 6):
        x = torch.randn(3, n)
        expected, actual = f(x), compiled(x)
        torch.testing.assert_close(actual[0], expected[0])
        assert actual[1:] == expected[1:]
        assert [type(m) for m in actual[1]] == [type(m) for m in expected[1]]
    assert tinydynamo.stats()["frames_compiled"] == 2


def test_a_symbolic_shape_formats_as_eager():
    """An f-string of a shape reads its sizes: each size is then a constant of the graph (guarded)."""
    def f(x):
        return x + 1, f"{x.shape}", f"{x.shape[1:]!r}"

    compiled = tinydynamo.compile(f, backend="eager")
    for n in (4, 5, 6):
        x = torch.randn(3, n)
        assert compiled(x)[1:] == f(x)[1:]


def test_python_int_use_specialises_the_size():
    def f(x):
        total = x[0]
        for i in range(1, x.shape[0]):  # range() needs an int: one graph per size
            total = total + x[i]
        return total

    stats = check_sizes(f, lambda n: (torch.randn(n, 2),), [3, 4, 3], dynamic=True)
    assert stats["frames_compiled"] == 2


def test_training_step_through_symbolic_graph():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    compiled = tinydynamo.compile(model, backend="inductor", dynamic=True)
    for n in (3, 5, 9):
        x = torch.randn(n, 4)
        model.zero_grad()
        model(x).sum().backward()
        expected = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        compiled(x).sum().backward()
        for p, g in zip(model.parameters(), expected):
            torch.testing.assert_close(p.grad, g)
    assert tinydynamo.stats()["frames_compiled"] == 1


def test_parameters_stay_static_with_dynamic_true():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm.print_readable(print_output=False))
        return gm.forward

    model = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)
    torch.testing.assert_close(tinydynamo.compile(model, backend=backend, dynamic=True)(x), model(x))
    assert "f32[3, 4]" in graphs[0] and "f32[s0, s1]" in graphs[0]  # weight static, input symbolic


def test_a_static_backend_compiles_once_per_shape():
    shapes = []

    def backend(gm, example_inputs):
        shapes.append(tuple(example_inputs[0].shape))
        return gm.forward

    check_sizes(lambda x: x * 2, lambda n: (torch.randn(n),), [3, 4, 3, 5, 4], backend, dynamic=True)
    assert shapes == [(3,), (4,), (5,)]
    assert tinydynamo.stats()["size_specializations"] == 3


def test_recompile_log_says_which_dimension_became_dynamic(capsys):
    def f(x):
        return x + 1

    compiled = tinydynamo.compile(f, backend="eager")
    tinydynamo.set_logs("dynamic")
    try:
        compiled(torch.randn(4, 3))
        compiled(torch.randn(6, 3))
    finally:
        tinydynamo.set_logs("")
    assert "L['x'] dimension 0 changed size (now 6)" in capsys.readouterr().err


def test_cache_limit_not_reached_over_many_sizes():
    def f(x):
        return torch.softmax(x, -1) * x.shape[-1]

    with config.patch(cache_size_limit=3), warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = check_sizes(f, lambda n: (torch.randn(2, n),), range(3, 15))
    assert stats["frames_compiled"] == 2


# --- the ShapeEnv on its own -------------------------------------------------------------------

def test_shape_env_decides_what_ranges_decide():
    env = ShapeEnv()
    s0 = env.create_symint(5, "a")
    s1 = env.create_symint(7, "b")
    assert (s0 == 1) is not True and not bool(s0 == 1)
    assert bool(s0 * s1 != s0) and bool(s0 >= 2)
    assert env.guards == []  # decided by `every symbol >= 2`, no guard needed
    assert bool(s0 < s1) and [str(g.expr) for g in env.guards] == ["s0 < s1"]


def test_duck_sizing_and_floor_division():
    env = ShapeEnv()
    a, b = env.create_symint(6, "a"), env.create_symint(6, "b")
    assert a.node.expr == b.node.expr
    assert (a * 2 // 2).node.expr == a.node.expr
    assert isinstance((a // 4).node.expr, FloorDiv)
    with pytest.raises(ValueError, match="specialised"):
        env.create_symint(1, "c")


def test_a_guard_with_or_implied_by_another_is_dropped():
    x = torch.randn(6, 4)
    tinydynamo.mark_dynamic(x, 0)
    compiled = tinydynamo.compile(lambda x: x.unflatten(0, (-1, 2)), backend="eager")
    guard = tinydynamo.explain(lambda x: x.unflatten(0, (-1, 2)))(x).guards[0]
    # unflatten asks `s0 == 2 or s0 % 2 == 0`, then `s0 % 2 == 0`, which implies the first
    assert "and ((L_x_size_0 % 2) == 0)  # SHAPE_ENV" in guard and " or " not in guard
    torch.testing.assert_close(compiled(x), x.unflatten(0, (-1, 2)))
    with pytest.raises(RuntimeError):
        compiled(torch.randn(7, 4))  # fails the guard, and eager raises


def test_an_int_argument_becomes_dynamic_after_it_changes():
    def f(x, n):
        return x * n + x.shape[0] % n, n * 2

    compiled = tinydynamo.compile(f, backend="eager")
    for n in range(2, 14):
        x = torch.randn(5)
        torch.testing.assert_close(compiled(x, n), f(x, n))
    assert tinydynamo.stats()["frames_compiled"] == 2
    for n in (1, -3):  # outside a symbol's range: specialised, each its own graph
        torch.testing.assert_close(compiled(x, n), f(x, n))
    assert tinydynamo.stats()["frames_compiled"] == 4


def test_a_step_counter_in_a_closure_becomes_dynamic():
    """An int in a closure cell that changes every call (``nonlocal step; step += 1``) is traced
    as a symbol once it has changed, like an int argument: it compiled once per step, and ran
    eagerly past the cache limit."""
    def make():
        step = 0

        def f(x):
            nonlocal step
            step += 1
            return x * step

        return f

    compiled, plain = tinydynamo.compile(make(), backend="aot_eager"), make()
    for _ in range(12):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), plain(x))
    assert tinydynamo.stats()["frames_compiled"] == 3  # steps 0 and 1 are specialised, as sizes are


def test_resume_functions_take_sizes_as_symbols():
    def f(x):
        n = x.shape[0]
        y = x * 2
        print("a graph break")
        return y[: n // 2] + n

    stats = check_sizes(f, lambda n: (torch.randn(n),), [4, 6, 8, 10, 12, 14], dynamic=None)
    assert stats["frames_compiled"] == 4  # f and its resume function, twice each


def test_the_same_tensor_twice_and_non_dense_inputs():
    def f(x, y):
        return x * y + 1

    stats = check_sizes(f, lambda n: (lambda t: (t, t))(torch.randn(n, 3)), [4, 5, 6, 7])
    assert stats["frames_compiled"] == 2  # one symbolic translation serves x is y at every size
    tinydynamo.reset()
    # a strided slice has no dense layout to express in its sizes: its strides get symbols too
    stats = check_sizes(f, lambda n: (torch.randn(n, 6)[:, ::2], torch.randn(n, 3)), [4, 5, 6], dynamic=True)
    assert stats["frames_compiled"] == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_slice_whose_sizes_and_strides_change_compiles_twice(backend):
    """``ids[:, :-1]`` (the shifted labels of a language model) over several lengths: its row
    stride changes with its length. It was traced with static sizes, so every length compiled
    again up to the cache limit; torch.compile compiles twice. Gradients flow through it too."""
    def f(a, b):
        return (a * 2 + b.sum()).softmax(-1), a.t() @ a

    def make(n):
        return torch.randn(3, n + 1, requires_grad=True)[:, :-1], torch.randn(n)

    compiled = tinydynamo.compile(f, backend=backend)
    for n in (5, 7, 9, 12):
        args = make(n)
        expected, actual = f(*args), compiled(*args)
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(torch.autograd.grad(actual[1].sum(), args[0]),
                                   torch.autograd.grad(expected[1].sum(), args[0]))
    assert tinydynamo.stats()["frames_compiled"] == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_column_of_a_growing_buffer_compiles_twice(backend):
    """Autoregressive decoding, ``step(tokens[:, -1])`` while ``tokens`` grows: the column's size
    stays 3 and its stride grows by one each step. Only sizes were automatic-dynamic, so every step
    compiled again, up to the cache limit; torch.compile compiles twice, with a symbolic stride."""
    embedding = torch.nn.Embedding(10, 4)

    def step(token, h):
        return embedding(token).sum(-1) * h

    compiled = tinydynamo.compile(step, backend=backend)
    tokens = torch.zeros(3, 1, dtype=torch.long)
    for _ in range(10):
        args = tokens[:, -1], torch.randn(3, requires_grad=True)
        expected, actual = step(*args), compiled(*args)
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(torch.autograd.grad(actual.sum(), args[1]),
                                   torch.autograd.grad(expected.sum(), args[1]))
        tokens = torch.cat([tokens, torch.randint(0, 10, (3, 1))], 1)
    assert tinydynamo.stats()["frames_compiled"] == 2
    assert tinydynamo.stats()["cache_hits"] == 8


def test_size_expressions_print_as_python_that_computes_them():
    s = sympy.Symbol("s0", integer=True, positive=True)
    for expr in [sympy.floor(1.7 * s), sympy.ceiling(s / 3), sympy.Abs(s - 5), FloorDiv(s + 1, 2) * 3,
                 sympy.Mod(2 * s, 3), sympy.Max(s, 4) - sympy.Min(s, 2)]:
        text = to_python(expr, lambda symbol: "n")
        for n in (2, 3, 7, 11):
            assert eval(text, {"n": n}) == int(expr.subs(s, n)), (expr, text, n)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_scalars_made_inside_a_decomposition_stay_on_the_real_device(backend):
    def f(x):  # where() with two numbers makes scalar tensors from the (meta) input's device
        return x + torch.where(x > 0, 0.0, float("-inf"))

    stats = check_sizes(f, lambda n: (torch.randn(n),), [3, 5, 7], backend, dynamic=True)
    assert stats["frames_compiled"] == 1


def test_a_transformers_decoder_over_twelve_sequence_lengths():
    pytest.importorskip("transformers")  # the "models" extra (not in make test-py312/313)
    model = REAL_MODELS["gpt2"].build()[0]
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    ours, theirs = tinydynamo.compile(model, backend="aot_eager"), torch.compile(model, backend="eager")
    with torch.no_grad():
        for n in [5, 7, 9, 11, 13, 16, 19, 23, 26, 30, 33, 40]:
            ids = torch.randint(0, 1000, (2, n))
            torch.testing.assert_close(ours(input_ids=ids).logits, model(input_ids=ids).logits)
            theirs(input_ids=ids)
    assert tinydynamo.stats()["frames_compiled"] <= torch._dynamo.utils.counters["frames"]["ok"]
    assert tinydynamo.stats()["fallbacks"] == 0


def test_a_transformers_decoder_gets_kernels_for_every_length():
    """Inductor compiles GPT-2's kernels once, with the sequence length as an argument."""
    pytest.importorskip("transformers")  # the "models" extra (not in make test-py312/313)
    model = REAL_MODELS["gpt2"].build()[0]
    compiled = tinydynamo.compile(model, backend="inductor")
    with torch.no_grad():
        for n in [5, 7, 9, 13, 16]:
            ids = torch.randint(0, 1000, (2, n))
            torch.testing.assert_close(compiled(input_ids=ids).logits, model(input_ids=ids).logits)
    stats = tinydynamo.stats()
    assert stats["frames_compiled"] == 2  # the first length, then dynamic: as torch.compile
    assert stats["size_specializations"] == 0 and stats.get("symbolic_fallbacks", 0) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_size_one_dimension_may_have_any_stride(backend):
    """Found by the fuzzer: x[:1] of a (3, n) tensor has stride (n, 1) where a fresh (1, n) has
    (1, 1); a dimension of size 1 is never stepped along, so both must run the same graph."""
    def f(x):
        return x + x

    stats = check_sizes(f, lambda n: (torch.randn(1, n, 1),) if n % 2 else (torch.randn(3, n, 1)[:1],),
                        [2, 3, 4, 5], backend, dynamic=True)
    assert stats["frames_compiled"] == 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_graph_that_cannot_be_traced_symbolically_compiles_per_shape(backend):
    def f(x):  # torch's meta kernel of the upsampling rejects symbolic sizes
        return torch.nn.functional.interpolate(x, scale_factor=1.7, mode="bilinear")

    stats = check_sizes(f, lambda n: (torch.randn(2, 3, n, n + 1),), [4, 6, 9], backend, dynamic=True)
    assert stats["frames_compiled"] == 1 and stats["fallbacks"] == 0
    assert stats["symbolic_fallbacks"] == 1 and stats["size_specializations"] >= 3


@pytest.mark.parametrize("shuffle", [lambda x: torch.nn.functional.pixel_shuffle(x, 3),
                                     lambda x: torch.nn.functional.channel_shuffle(x, 3)])
def test_a_backward_whose_inputs_do_not_determine_every_symbol(shuffle):
    """Found by the OpInfo sweep: the backward of pixel_shuffle receives sizes ``s0 // 9`` and
    ``3*s1``, not ``s0``; its per-size kernels take those sizes from the meta kernels instead."""
    def step(x):
        x = x.detach().requires_grad_()
        shuffle(x).square().sum().backward()
        return x.grad

    compiled = tinydynamo.compile(shuffle, backend="inductor", dynamic=True)
    for n in (2, 3, 5):
        x = torch.randn(1, 9, n, n)
        x_compiled = x.clone().requires_grad_()
        compiled(x_compiled).square().sum().backward()
        torch.testing.assert_close(x_compiled.grad, step(x))
    assert tinydynamo.stats()["frames_compiled"] == 1


def view_with_an_inferred_size(x):
    return x.view(x.shape[0], -1, 4) * 2


def test_guards_of_a_view_with_an_inferred_size_are_simplified(capsys):
    """A view with a -1 size made 17 size conditions (floor divisions with a common factor,
    `(s1*s2) // 4 != 1` beside `(s1*s2) // ((s1*s2) // 4) == 4`, restated divisibility...);
    the guard keeps 4 and means the same: a size the view cannot take, or one that makes the
    view's strides differ, still fails it."""
    tinydynamo.set_logs("guards")
    try:
        compiled = tinydynamo.compile(view_with_an_inferred_size, backend="eager", dynamic=True)
        compiled(torch.randn(6, 3, 8))
    finally:
        tinydynamo.set_logs("")
    shape_env = next(line for line in capsys.readouterr().err.splitlines() if line.endswith("# SHAPE_ENV"))
    conditions = shape_env.split("# SHAPE_ENV")[0].strip().removeprefix("and ").split(" and ")
    assert len(conditions) == 3 + 4, shape_env  # 3 sizes >= 2, then 4 conditions
    assert "((L_x_size_1 * L_x_size_2) % 4) == 0" in shape_env
    for shape in [(5, 3, 8), (7, 5, 12), (3, 6, 10)]:  # the same graph serves these
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), view_with_an_inferred_size(x))
    assert tinydynamo.stats()["frames_compiled"] == 1
    x = torch.randn(6, 3, 4)  # (s1*s2) // 4 == s1: a view of another layout, a new graph
    torch.testing.assert_close(compiled(x), view_with_an_inferred_size(x))
    assert tinydynamo.stats()["frames_compiled"] == 2
    with pytest.raises(RuntimeError):  # 3*5 is not a multiple of 4: fails the guard, then the view
        compiled(torch.randn(6, 3, 5))


def test_guard_simplification_drops_only_implied_conditions():
    env = ShapeEnv()
    s0, s1 = env.create_symbol(6, "a"), env.create_symbol(8, "b")
    env.add_guard(sympy.Eq(s0 * sympy.Mod(s1, 4), 0), "here")  # s0 != 0: s1 % 4 == 0
    env.add_guard(sympy.Eq(s1, 4 * FloorDiv(s1, 4)), "here")  # the same condition restated
    env.add_guard(sympy.Eq(FloorDiv(s0 * s1, 4 * s0), 2), "here")  # s0 cancels: s1 // 4 == 2
    env.add_guard(sympy.Ne(FloorDiv(s1, 4), 1), "here")  # implied by s1 // 4 == 2
    env.add_guard(sympy.Ge(s0, 2), "here")  # every size is >= 2: not recorded
    env.add_guard(sympy.Ne(s0, s1), "here")  # not implied: kept
    kept = [g.expr for g in env.simplified_guards()]
    assert FloorDiv(s0 * s1 * s0, 4 * s0) == FloorDiv(s0 * s1, 4)
    assert FloorDiv(sympy.Float(2.5) * s0, s0) == FloorDiv(sympy.Float(2.5) * s0, s0)  # left alone
    # (s1 // 4 == 2 alone admits 9, 10, 11: the divisibility stays)
    assert kept == [sympy.Eq(sympy.Mod(s1, 4), 0), sympy.Eq(FloorDiv(s1, 4), 2), sympy.Ne(s0, s1)], kept


def test_each_condition_is_decided_once_and_guarded_once(monkeypatch):
    """A condition asked again is answered from ShapeEnv.decided: by the ranges if they decided
    it, else by the hint, without a second guard (a transformer asks the same ones per layer)."""
    env = ShapeEnv()
    s0, s1 = env.create_symbol(6, "a"), env.create_symbol(8, "b")
    asked = []
    static_value = ShapeEnv.static_value
    monkeypatch.setattr(ShapeEnv, "static_value", lambda self, c: asked.append(c) or static_value(self, c))
    by_hint, by_ranges = sympy.Lt(s0, s1), sympy.Ge(s0 * s1, 4)
    assert all(env.evaluate_condition(by_hint, "here") is True for _ in range(50))
    assert all(env.evaluate_condition(sympy.Not(by_hint), "here") is False for _ in range(50))
    assert all(env.evaluate_condition(by_ranges, "here") is True for _ in range(50))
    assert [g.expr for g in env.guards] == [by_hint]
    assert len(asked) <= 2 * 3 + 2 * 3, asked  # the condition and its simplified form, once each (+ add_guard)


def branches_on_the_size(x):
    if x.shape[0] == 5:
        return x + 1
    return x - 1


def test_mark_dynamic_on_a_dimension_the_code_specialises_is_an_error():
    """As torch.compile: a ConstraintViolationError naming the dimension and the user's line."""
    from tinydynamo.symbolic_shapes import ConstraintViolationError
    x = torch.randn(5, 3)
    tinydynamo.mark_dynamic(x, 0)
    line = branches_on_the_size.__code__.co_firstlineno + 1
    with pytest.raises(ConstraintViolationError, match=rf"L\['x'\]\.size\(\)\[0\].*constant \(5\).*"
                       rf"test_dynamic_shapes.py:{line}"):
        tinydynamo.compile(branches_on_the_size, backend="eager")(x)
    tinydynamo.reset()
    y = torch.randn(6, 3)  # 6 != 5 keeps the size symbolic: no error, as in torch.compile
    tinydynamo.mark_dynamic(y, 0)
    torch.testing.assert_close(tinydynamo.compile(branches_on_the_size, backend="eager")(y), y - 1)


def scaled_by_a_literal(x):
    return x * x.new_tensor([1.0, 2.0, 3.0, 4.0]) + x.new_tensor(2, dtype=torch.int64)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_new_tensor_of_literal_data_compiles_with_symbolic_sizes(backend):
    compiled = tinydynamo.compile(scaled_by_a_literal, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the symbolic graph must not fall back to eager
        for rows in (3, 5, 7):
            for dtype in (torch.float32, torch.float64):
                x = torch.randn(rows, 4, dtype=dtype)
                out = compiled(x)
                assert out.dtype == dtype
                torch.testing.assert_close(out, scaled_by_a_literal(x))


def unsqueezes_its_input(x):
    x.unsqueeze_(0)
    y = x * 2
    return x.shape, x.size(-1), x.stride(), y


def transposes_its_input(x):
    x.t_()
    return x.stride(), x.shape


@pytest.mark.parametrize("fn", [unsqueezes_its_input, transposes_its_input])
def test_an_input_reshaped_in_place_reports_its_sizes_after_a_recompile(fn):
    """After the recompile that makes n a symbol, Python rebuilt x.shape from x.size()[1] once
    x.unsqueeze_(0) had moved n to dimension 2: the graph breaks at such an op instead."""
    compiled = tinydynamo.compile(fn, backend="eager")
    for n in (3, 4, 6):
        ours, theirs = compiled(torch.ones(5, n)), fn(torch.ones(5, n))
        assert [type(v) for v in ours] == [type(v) for v in theirs]
        assert [v for v in ours if not isinstance(v, torch.Tensor)] == \
            [v for v in theirs if not isinstance(v, torch.Tensor)]


def tags_by_width(x, name):
    return {"%s:%d" % (name, x.shape[-1]): x * 2}


def test_percent_formatting_of_a_symbolic_size_specialises_it_as_an_f_string_does():
    """It broke the graph after the recompile that made the width a symbol."""
    compiled = tinydynamo.compile(tags_by_width, backend="eager")
    for width in (3, 4, 5):
        x = torch.randn(2, width)
        assert list(compiled(x, "a")) == list(tags_by_width(x, "a")) == [f"a:{width}"]
    explanation = tinydynamo.explain(tags_by_width)(torch.randn(2, 6), "a")
    assert not explanation.break_reasons


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_channels_last_convolution_keeps_eagers_layout_with_symbolic_sizes(backend):
    """The graph traced with symbolic sizes gave the convolution a contiguous result: after the
    recompile the output came back NCHW, where eager's is channels-last."""
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).to(memory_format=torch.channels_last)
    compiled = tinydynamo.compile(lambda x: torch.relu(conv(x)), backend=backend)
    for width in (6, 7, 9):
        x = torch.randn(2, 3, 5, width).to(memory_format=torch.channels_last)
        actual, expected = compiled(x), torch.relu(conv(x))
        torch.testing.assert_close(actual, expected)
        assert actual.stride() == expected.stride(), f"width {width}"
    assert tinydynamo.stats()["frames_compiled"] == 2


def classification_losses(logits, target, weight):
    sequence = logits.reshape(2, -1, 5).transpose(1, 2)  # [batch, classes, time], as a sequence model's
    return (F.cross_entropy(logits, target), F.nll_loss(logits.log_softmax(-1), target, reduction="none"),
            F.cross_entropy(logits, F.one_hot(target, 5).float(), reduction="none", label_smoothing=0.1),
            F.cross_entropy(logits, target, weight=weight, ignore_index=1),
            F.cross_entropy(sequence, target.reshape(2, -1), reduction="sum"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_classification_losses_keep_the_batch_size_symbolic(backend):
    """torch's nll_loss indexes with ``torch.arange(batch)``, made on the CPU: each new batch size
    (a language model's batch * sequence length) compiled again."""
    stats = check_sizes(classification_losses, lambda n: (torch.randn(n, 5), torch.randint(0, 5, (n,)), torch.rand(5)),
                        [16, 20, 24, 30], backend=backend)
    assert stats["frames_compiled"] == 2
