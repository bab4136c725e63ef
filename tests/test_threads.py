"""One compiled function called from many threads at once, as a web server or a data loader
does: every result must match eager, and an error must surface only in the thread that caused it.

Each workload runs in 8 threads that start together (a ``threading.Barrier``): first on a cold
cache, so that all of them make the first call at the same moment, then on the warm cache. The
workloads cover what a call can share by mistake: the workspace of intermediate buffers (a chain
of matrix products), the error flag of the C++ kernels (a gather whose indices are out of range
in one thread only), reductions (softmax, log_softmax, var), and a training step whose backward
graph runs in every thread.
"""
import sys
import threading
import time
import traceback

import pytest
import torch
import torch.nn.functional as F

import tinydynamo
from tinydynamo import config
from tinydynamo.backends import lookup_backend

THREADS = 8
CALLS = 12  # per thread and phase
DEADLINE = 240  # seconds for all threads of one phase; a deadlock fails the test, with stacks
BAD_THREAD = 0  # the one thread whose gathers go out of range, on odd calls


@pytest.fixture(scope="module", autouse=True)
def cold_kernel_cache(tmp_path_factory):
    """A kernel cache of this module's own: the first calls compile C++ for real."""
    with config.patch(cache_dir=str(tmp_path_factory.mktemp("tinydynamo-threads"))):
        yield


def with_intermediates(x, w):
    h = torch.relu(x @ w) * 2  # crosses an extern kernel: lives in the workspace
    g = torch.tanh(h @ w) + h
    return (g @ w).sin() + g.mean()


def reduction_chain(x):
    s = x.softmax(-1)
    return (s * x).sum(-1).log_softmax(0) + x.var(-1) + x.amax(-1)


def gather(x, index):
    return (x * 2)[index].exp() + 1


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(32, 64), torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def training_step(model):
    """Loss and gradients of one step (autograd.grad: threads sharing parameters do not
    accumulate into each other's .grad)."""
    def step(x, y):
        loss = F.mse_loss(model(x), y)
        return (loss, *torch.autograd.grad(loss, list(model.parameters())))

    return step


def is_bad_call(thread, call, workload):
    return workload == "gather" and thread == BAD_THREAD and call % 2 == 1


def make_inputs(workload, generator, thread, call):
    def randn(*size):
        return torch.randn(*size, generator=generator)

    if workload == "with_intermediates":
        return randn(128, 128), randn(128, 128) / 8
    if workload == "reduction_chain":
        return (randn(64, 257) * (thread + 1) ** 3,)  # a different scale in each thread
    if workload == "gather":
        index = torch.randint(0, 500, (20000,), generator=generator)
        if is_bad_call(thread, call, workload):
            index[-1] = 10_000  # out of range: the kernel finds it last
        return randn(500, 16), index
    return randn(256, 32), randn(256, 8)


def run_in_threads(workload, compiled, eager):
    """Every thread calls ``compiled`` CALLS times; returns what went wrong, one line a call."""
    barrier = threading.Barrier(THREADS)
    problems = []  # list.append is atomic

    def worker(thread):
        generator = torch.Generator().manual_seed(1000 * thread)
        barrier.wait(timeout=DEADLINE)
        for call in range(CALLS):
            inputs = make_inputs(workload, generator, thread, call)
            try:
                result = compiled(*inputs)
            except IndexError as error:
                if not is_bad_call(thread, call, workload):
                    problems.append(f"thread {thread}, call {call}: {type(error).__name__}: {error}")
                continue
            except Exception as error:  # noqa: BLE001 (any error is a finding)
                problems.append(f"thread {thread}, call {call}: {type(error).__name__}: {error}")
                continue
            if is_bad_call(thread, call, workload):
                problems.append(f"thread {thread}, call {call}: an out-of-range index raised nothing")
                continue
            try:
                torch.testing.assert_close(result, eager(*inputs), rtol=1e-4, atol=1e-4)
            except AssertionError as error:
                problems.append(f"thread {thread}, call {call}: wrong result: {str(error).splitlines()[:3]}")

    start_and_join(worker)
    return problems


def start_and_join(worker):
    """worker(thread number) in THREADS threads at once; returns when all have finished. Fails
    if a worker raised, or with the stack of every thread still running after DEADLINE seconds."""
    crashes = []

    def guarded(thread):
        try:
            worker(thread)
        except BaseException as error:  # noqa: BLE001 (a thread's error would otherwise vanish)
            crashes.append(f"thread {thread}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    stuck = [t for t in threads if t.is_alive()]
    if stuck:
        frames = sys._current_frames()
        stacks = ["".join(traceback.format_stack(frames[t.ident])) for t in stuck if t.ident in frames]
        pytest.fail(f"{len(stuck)} of {THREADS} threads still running after {DEADLINE} s:\n" + "\n".join(stacks))
    assert not crashes, "\n".join(crashes)


def workloads():
    torch.manual_seed(0)
    model = MLP()
    eager_model = MLP()
    eager_model.load_state_dict(model.state_dict())
    return {
        "with_intermediates": (lambda: tinydynamo.compile(with_intermediates), with_intermediates),
        "reduction_chain": (lambda: tinydynamo.compile(reduction_chain), reduction_chain),
        "gather": (lambda: tinydynamo.compile(gather), gather),
        "training_step": (lambda: training_step(tinydynamo.compile(model)), training_step(eager_model)),
    }


@pytest.mark.parametrize("workload", ["with_intermediates", "reduction_chain", "gather", "training_step"])
def test_threads_get_eager_results_cold_then_warm(workload):
    tinydynamo.reset()
    make_compiled, eager = workloads()[workload]
    compiled = make_compiled()
    for phase in ("cold", "warm"):  # cold: all threads make the first call at once
        problems = run_in_threads(workload, compiled, eager)
        assert not problems, f"{phase}: {len(problems)} of {THREADS * CALLS} calls went wrong:\n" + \
            "\n".join(problems[:5])
    # one thread compiled; the others waited for it and reused its cache entry
    assert tinydynamo.stats()["frames_compiled"] == 1 and tinydynamo.stats()["recompiles"] == 0


def test_backends_compile_graphs_in_several_threads_at_once():
    """Without dynamo's compile lock (as behind torch.compile, whose Dynamo calls the backend):
    each stage keeps its tracing state per thread."""
    functions = [with_intermediates, lambda x, w: reduction_chain(x @ w)] * (THREADS // 2)
    # torch.fx.symbolic_trace patches torch.nn.Module globally while it runs: trace here, not in threads
    graphs = [torch.fx.symbolic_trace(fn) for fn in functions]
    barrier = threading.Barrier(THREADS)
    problems = []

    def worker(thread):
        fn, graph = functions[thread], graphs[thread]
        inputs = make_inputs("with_intermediates", torch.Generator().manual_seed(thread), thread, 0)
        barrier.wait(timeout=DEADLINE)
        try:
            torch.testing.assert_close(lookup_backend("inductor")(graph, list(inputs))(*inputs), fn(*inputs),
                                       rtol=1e-4, atol=1e-4)
        except Exception as error:  # noqa: BLE001 (any error is a finding)
            problems.append(f"thread {thread}: {type(error).__name__}: {error}")

    start_and_join(worker)
    assert not problems, "\n".join(problems)
    assert torch._C._get_mkldnn_enabled(), "tracing (which turns oneDNN off) left it off"


def test_threads_with_changing_sizes_share_one_symbolic_frame():
    """dynamic=True: one translation serves every size in every thread; the backend's variants
    for each size are compiled once, under the compile lock, while other threads call."""
    tinydynamo.reset()
    compiled = tinydynamo.compile(reduction_chain, dynamic=True)
    barrier = threading.Barrier(THREADS)
    problems = []

    def worker(thread):
        generator = torch.Generator().manual_seed(thread)
        barrier.wait(timeout=DEADLINE)
        for call in range(CALLS):
            x = torch.randn(3 + (thread + call) % 5, 33 + call % 3, generator=generator)
            try:
                torch.testing.assert_close(compiled(x), reduction_chain(x), rtol=1e-4, atol=1e-4)
            except Exception as error:  # noqa: BLE001 (any error is a finding)
                problems.append(f"thread {thread}, call {call}, shape {tuple(x.shape)}: {error}")

    start_and_join(worker)
    assert not problems, "\n".join(problems[:5])
    assert tinydynamo.stats()["frames_compiled"] == 1
