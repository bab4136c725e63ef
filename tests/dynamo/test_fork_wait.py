"""torch.jit.fork / torch.jit.wait inside a compiled function (dynamo/fork_join.py, variables/futures.py).

Each forked function is traced into a body graph of its own, compiled on its own by the frame's
backend, and run on a thread pool from the fork to the wait. Every program here runs compiled and
eagerly and must agree: results, gradients, what the inputs hold afterwards. The tests also check
what falls back and why (an untraceable body, a future that escapes, a body that may not run
concurrently), what explain() counts, and, without timing anything, that bodies really run on
other threads at the same time as the frame's own pieces.
"""
import concurrent.futures
import contextlib
import io
import operator
import threading

import pytest
import torch
import torch.nn.functional as F

import tinydynamo
from tinydynamo import config
from tinydynamo.dynamo import fork_join

from dynamo_cases import assert_same

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # eager torch.jit.fork warns

fork, wait = torch.jit.fork, torch.jit.wait
BACKENDS = ("eager", "aot_eager", "decomp_eager", "inductor")


def randn(*shape, requires_grad=False):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape))).requires_grad_(requires_grad)


# --- programs ------------------------------------------------------------------------------------


def scaled_matmul(a, b, scale=1.0):
    return (a @ b).relu() * scale, a.sum()


def fork_of_a_user_function(x, w):
    future = fork(scaled_matmul, x, w, scale=2.0)
    y = x.cos()
    product, total = wait(future)
    return product + y.sum() + total


def waits_in_another_order(x):
    first, second, third = fork(torch.sin, x), fork(lambda t: t * 3, x), fork(torch.tanh, x)
    return wait(third) - wait(first) * wait(second)


def forks_and_waits_itself(x):
    future = fork(torch.exp, x)
    return wait(future) + x.cos()


def nested_forks(x):
    outer = fork(forks_and_waits_itself, x)
    other = fork(forks_and_waits_itself, x * 2)
    return wait(outer) + wait(other)


def returns_a_structure(x):
    future = fork(lambda t: (t.sin(), (t.cos(), 3), "label"), x)
    a, (b, n), label = wait(future)
    return a + b * n, label


def waits_twice_through_the_method(x):
    future = fork(torch.sin, x)
    return future.wait() + future.wait()


def never_waits(x):
    fork(torch.sin, x)
    return x.cos()


def closes_over_an_intermediate(x):
    h = x.exp()
    future = fork(lambda: h * x.sum())
    return wait(future) + h


class MLP(torch.nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(width, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class Ensemble(torch.nn.Module):
    """The TorchScript tutorial's pattern: fork every model in a loop, then wait for each."""

    def __init__(self, n=4):
        super().__init__()
        torch.manual_seed(0)
        self.models = torch.nn.ModuleList(MLP() for _ in range(n))

    def forward(self, x):
        futures = [fork(model, x) for model in self.models]
        return torch.stack([wait(future) for future in futures]).mean(0)


def fork_of_a_module(model, x):
    future = fork(model, x)
    y = model(x * 2)
    return wait(future) - y


MODEL = MLP()
PROGRAMS = [
    (fork_of_a_user_function, lambda: (randn(4, 4), randn(4, 4))),
    (waits_in_another_order, lambda: (randn(5),)),
    (nested_forks, lambda: (randn(5),)),
    (returns_a_structure, lambda: (randn(3),)),
    (waits_twice_through_the_method, lambda: (randn(3),)),
    (never_waits, lambda: (randn(3),)),
    (closes_over_an_intermediate, lambda: (randn(3),)),
    (Ensemble(), lambda: (randn(5, 8),)),
    (fork_of_a_module, lambda: (MODEL, randn(5, 8))),
]


def program_id(program):
    return getattr(program, "__name__", type(program).__name__)


def explained(fn, *args):
    tinydynamo.reset()
    explanation = tinydynamo.explain(fn)(*args)
    tinydynamo.reset()
    return explanation


@pytest.mark.parametrize("program, inputs", PROGRAMS, ids=[program_id(p) for p, _ in PROGRAMS])
def test_forked_programs_match_eager_with_no_graph_break(program, inputs):
    explanation = explained(program, *inputs())
    assert explanation.graph_break_count == 0, explanation.break_reasons
    compiled = tinydynamo.compile(program, backend="eager")
    for _ in range(2):  # the second call runs the cached program
        assert_same(compiled(*inputs()), program(*inputs()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, inputs", [PROGRAMS[0], PROGRAMS[2], PROGRAMS[7]],
                         ids=["user_function", "nested", "ensemble"])
def test_every_backend_compiles_the_pieces_and_bodies(backend, program, inputs):
    compiled = tinydynamo.compile(program, backend=backend)
    assert_same(compiled(*inputs()), program(*inputs()))
    assert tinydynamo.stats()["graph_breaks"] == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradients_through_forked_bodies_match_eager(backend):
    model = Ensemble()
    x = randn(5, 8, requires_grad=True)
    compiled = tinydynamo.compile(model, backend=backend)
    compiled(x).pow(2).sum().backward()
    got = [x.grad, *(p.grad for p in model.parameters())]
    x.grad = None
    model.zero_grad()
    model(x).pow(2).sum().backward()
    expected = [x.grad, *(p.grad for p in model.parameters())]
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)


def test_the_grad_mode_at_the_fork_is_the_bodys():
    def forks_under_no_grad(x):
        with torch.no_grad():
            future = fork(torch.sin, x)
        y = x * 2
        return wait(future) + y

    x = randn(3, requires_grad=True)
    for backend in ("eager", "aot_eager"):
        tinydynamo.reset()
        out = tinydynamo.compile(forks_under_no_grad, backend=backend)(x)
        expected = forks_under_no_grad(x)
        assert out.requires_grad and expected.requires_grad
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(torch.autograd.grad(out.sum(), x)[0], torch.autograd.grad(expected.sum(), x)[0])
    with torch.no_grad():
        assert not tinydynamo.compile(forks_under_no_grad, backend="aot_eager")(x).requires_grad


def test_bodies_run_in_the_callers_inference_mode():
    model = Ensemble()
    compiled = tinydynamo.compile(model, backend="inductor")
    with torch.inference_mode():
        out, expected = compiled(randn(5, 8)), model(randn(5, 8))
    assert out.is_inference() and expected.is_inference()
    torch.testing.assert_close(out, expected)


# --- explain() and logs ----------------------------------------------------------------------------


def sin_beside_cos(x):
    future = fork(torch.sin, x)
    y = torch.cos(x)
    return wait(future) + y


def test_explain_counts_every_graph_the_backend_compiles():
    explanation = explained(sin_beside_cos, randn(3))
    # the body (sin), and the frame's graph cut in two pieces: cos, then the add after the wait
    assert (explanation.graph_count, explanation.graph_break_count) == (3, 0)
    assert explanation.ops_per_graph == [[torch.sin], [torch.cos], [operator.add]]
    labels = [gm.meta["fork_join"] for gm in explanation.graphs]
    assert labels[0].startswith("the body forked at ") and "test_fork_wait.py" in labels[0]
    assert labels[1:] == [f"piece {i} of 2 of the frame's graph, cut at its forks and waits" for i in (1, 2)]
    assert "forked at" in str(explanation) and tinydynamo.stats()["graphs"] == 0  # explain's own compiles are reset


def test_logs_show_the_graph_with_its_bodies_and_the_steps():
    err = io.StringIO()
    tinydynamo.set_logs("graph")
    try:
        with contextlib.redirect_stderr(err):
            tinydynamo.compile(sin_beside_cos, backend="eager")(randn(3))
    finally:
        tinydynamo.set_logs("")
    log = err.getvalue()
    assert "class fork_body_0(torch.nn.Module)" in log and "torch.sin" in log
    assert "the steps of the frame's graph:\nfork fork: its body on the thread pool" in log
    assert "wait fork -> (getitem)" in log


# --- falling back: breaks, and bodies that run at the fork ----------------------------------------


def prints(x):
    print("inside the forked function")
    return x + 1


def forks_an_untraceable_function(x):
    future = fork(prints, x)
    return wait(future) * 2


def test_a_body_that_cannot_be_traced_breaks_the_graph_at_the_fork(capsys):
    x = randn(3)
    explanation = explained(forks_an_untraceable_function, x)
    first = explanation.break_reasons[0]
    assert "torch.jit.fork of UserFunctionVariable(prints): the forked function cannot be traced whole: print()" \
        in first.reason
    assert first.lineno == prints.__code__.co_firstlineno + 1  # where in the body, and how it got there:
    assert first.user_stack[0][1] == forks_an_untraceable_function.__code__.co_firstlineno + 1  # the fork
    capsys.readouterr()
    assert_same(tinydynamo.compile(forks_an_untraceable_function, backend="eager")(x), forks_an_untraceable_function(x))
    assert capsys.readouterr().out == "inside the forked function\n" * 2


def test_fullgraph_refuses_an_untraceable_body():
    with pytest.raises(tinydynamo.dynamo.exc.Unsupported, match="cannot be traced whole"):
        tinydynamo.compile(forks_an_untraceable_function, backend="eager", fullgraph=True)(randn(3))


def returns_its_future(x):
    y = x * 2
    future = fork(torch.sin, y)
    return future, y.cos()


class Holder:
    pass


HOLDER = Holder()


def stores_its_future(x):
    HOLDER.future = fork(torch.sin, x)
    return x + 1


@pytest.mark.parametrize("program", [returns_its_future, stores_its_future])
def test_a_future_that_escapes_breaks_the_graph_at_its_fork(program):
    x = randn(3)
    explanation = explained(program, x)
    (reason,) = explanation.break_reasons
    fork_line = next(i for i, line in enumerate(open(__file__).read().splitlines(), 1)
                     if "fork(torch.sin" in line and i > program.__code__.co_firstlineno)
    assert reason.reason.startswith(f"a torch.jit.Future forked at line {fork_line} outlives the graph")
    assert reason.lineno == fork_line and not reason.frame_ran_eagerly
    out = tinydynamo.compile(program, backend="eager")(x)
    expected = program(x)
    if program is returns_its_future:
        assert isinstance(out[0], torch._C.Future)
        assert_same((out[0].wait(), out[1]), (expected[0].wait(), expected[1]))
    else:
        assert_same(out, expected)
        assert_same(HOLDER.future.wait(), torch.sin(x))


def test_a_future_alive_at_a_graph_break_makes_the_frame_run_eagerly(capsys):
    def prints_between(x):
        future = fork(torch.sin, x)
        print("between")
        return wait(future)

    (reason,) = explained(prints_between, randn(3)).break_reasons
    assert "outlives the graph" in reason.reason and reason.frame_ran_eagerly
    assert_same(tinydynamo.compile(prints_between, backend="eager")(randn(3)), prints_between(randn(3)))


def mutates_its_input(x):
    x.add_(1)
    return x * 2


def body_writes_what_the_frame_reads(x):
    x = x.clone()
    future = fork(mutates_its_input, x)
    y = x * 3  # in eager the body has run: y sees the add
    return wait(future) + y


def frame_writes_what_the_body_reads(x):
    x = x.clone()
    future = fork(torch.sin, x)
    x.mul_(2)  # in eager the body has run: it read x before the mul
    return wait(future) + x


def body_writes_the_frames_input(x):
    future = fork(mutates_its_input, x)
    return wait(future) + 1


def dropout_in_two_forks(x):
    first = fork(F.dropout, x, 0.5, True)
    second = fork(F.dropout, x, 0.5, True)
    return wait(first) + wait(second)


@pytest.mark.parametrize("program, graphs", [
    (body_writes_what_the_frame_reads, 1),  # inlined: one graph, and no piece
    (frame_writes_what_the_body_reads, 1),
    (body_writes_the_frames_input, 2),  # nothing runs beside it: the body runs concurrently
    (dropout_in_two_forks, 3),  # the first is inlined (both draw random numbers), the second forked
])
def test_a_body_that_may_not_run_concurrently_runs_at_its_fork(program, graphs):
    x = randn(1000)
    assert explained(program, x.clone()).graph_count == graphs
    compiled = tinydynamo.compile(program, backend="aot_eager")  # draws random numbers as eager does
    for _ in range(2):
        x_compiled, x_eager = x.clone(), x.clone()
        torch.manual_seed(1)
        out = compiled(x_compiled)
        torch.manual_seed(1)
        expected = program(x_eager)
        assert_same(out, expected)
        assert_same(x_compiled, x_eager)


def test_logs_say_why_a_fork_runs_at_the_fork():
    err = io.StringIO()
    tinydynamo.set_logs("graph")
    try:
        with contextlib.redirect_stderr(err):
            tinydynamo.compile(frame_writes_what_the_body_reads, backend="eager")(randn(3))
    finally:
        tinydynamo.set_logs("")
    assert "runs at the fork, as in eager: mul_ at " in err.getvalue()


def test_forks_of_a_graph_with_symbolic_sizes_run_at_the_fork():
    compiled = tinydynamo.compile(nested_forks, backend="aot_eager", dynamic=True)
    for n in (5, 7):
        assert_same(compiled(randn(n)), nested_forks(randn(n)))
    assert tinydynamo.stats()["graphs"] == 1


# --- concurrency, without timing -------------------------------------------------------------------

RENDEZVOUS = threading.Barrier(2, timeout=30)
ARMED = threading.Event()  # off while compiling: AOT autograd runs the op once then
THREADS = []


@torch.library.custom_op("tinydynamo_test_fork::rendezvous", mutates_args=())
def rendezvous(x: torch.Tensor) -> torch.Tensor:
    """Returns x + 1, once a second thread has reached it too (when armed): a body and the frame's
    own piece can both pass it only if they run at the same time."""
    if ARMED.is_set():
        THREADS.append(threading.get_ident())
        RENDEZVOUS.wait()
    return x + 1


rendezvous.register_fake(lambda x: torch.empty_like(x))


def meets_itself(x):
    future = fork(rendezvous, x * 2)
    y = rendezvous(x)
    return wait(future) + y


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_a_body_runs_on_another_thread_at_the_same_time_as_the_frame(backend):
    x = randn(4)
    compiled = tinydynamo.compile(meets_itself, backend=backend)
    expected = meets_itself(x)
    compiled(x)  # compiles
    THREADS.clear()
    ARMED.set()
    try:
        out = compiled(x)
    finally:
        ARMED.clear()
    assert_same(out, expected)
    assert len(THREADS) == 2 and threading.get_ident() in THREADS
    assert len(set(THREADS)) == 2  # the body ran on a thread of the pool


def test_nested_forks_cannot_deadlock_a_pool_of_one_thread(monkeypatch):
    monkeypatch.setattr(fork_join, "_pool", concurrent.futures.ThreadPoolExecutor(1))
    compiled = tinydynamo.compile(nested_forks, backend="eager")
    assert_same(compiled(randn(5)), nested_forks(randn(5)))


def test_many_threads_call_a_forking_function_at_once():
    model = Ensemble()
    compiled = tinydynamo.compile(model, backend="inductor")
    inputs = [randn(5 + i, 8) for i in range(8)]
    with torch.no_grad():
        expected = [model(x) for x in inputs]
        compiled(inputs[0])
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(compiled, inputs))
    for out, ref in zip(results, expected):
        torch.testing.assert_close(out, ref)


def test_an_error_in_a_body_reaches_the_caller():
    def gathers(x, index):
        future = fork(lambda: x[index] * 2)
        return wait(future) + 1

    compiled = tinydynamo.compile(gathers, backend="inductor")
    compiled(randn(5), torch.tensor([0, 4]))
    with pytest.raises((IndexError, RuntimeError)):
        compiled(randn(5), torch.tensor([0, 9]))
    with config.patch(strict=True):
        assert_same(compiled(randn(5), torch.tensor([1, 2])), gathers(randn(5), torch.tensor([1, 2])))
