"""Recursion, threads, generators and coroutines under the hook (book chapter 2)."""
import asyncio
import sys
import threading

import pytest
from hook_helpers import Compiler, compiling, ef, hooked, untag


def depth_sum(n):
    if n == 0:
        return "original", 0
    return "original", n + depth_sum(n - 1)[1]


def test_recursion_500_deep():
    expected = depth_sum(500)
    with compiling(depth_sum) as compiler:
        got = depth_sum(500)
    assert untag(got) == expected and got[0] == "replacement"
    assert len(compiler.misses) == 1  # every deeper call hit the cache


def test_runaway_recursion_raises_recursion_error():
    def forever(n):
        return forever(n + 1)

    with compiling(forever):
        with pytest.raises(RecursionError):
            forever(0)
    with compiling(forever):  # and again: nothing was left behind
        with pytest.raises(RecursionError):
            forever(0)


def leaf(x, *padding):
    return "original", x


def climb(n):
    """Calls leaf at every depth from n down to 0, so that some leaf frame is the
    first frame of a new chunk of the thread's frame stack."""
    here = leaf(n)
    return [here] + (climb(n - 1) if n else [])


def test_frames_at_every_stack_depth_including_new_stack_chunks():
    """On 3.12 the hook pops such frames itself; the deeper calls afterwards, across
    more chunks, run on whatever state of the frame stack that left."""
    expected = climb(300)
    with compiling(leaf):
        for _ in range(20):
            got = climb(300)
    assert [untag(item) for item in got] == expected and got[0][0] == "replacement"
    assert climb(700) == climb(700)
    expected = climb(600)
    with compiling(leaf):
        got = climb(600)
    assert [untag(item) for item in got] == expected and got[0][0] == "replacement"


def test_four_threads_each_with_its_own_callback():
    def work(x, k=3):
        return "original", x * k + threading.get_ident() % 7

    n_threads, n_calls = 4, 300
    barrier = threading.Barrier(n_threads)
    results, compilers, errors = {}, {}, []

    def worker():
        me = threading.get_ident()
        compiler = Compiler(work)
        compilers[me] = compiler
        try:
            barrier.wait()
            with hooked(compiler):
                results[me] = [work(i) for i in range(n_calls)]
            assert ef.set_eval_frame(None) is None
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, in the middle of hooked calls
    try:
        threads = [threading.Thread(target=worker) for _ in range(n_threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old_interval)
        ef.clear_code(work.__code__)
    assert errors == []
    for me, got in results.items():
        assert got == [("replacement", i * 3 + me % 7) for i in range(n_calls)]
        assert len(compilers[me].misses) == 1, "a thread hit another thread's cache entries"


def accumulate(start):
    total = start
    try:
        while True:
            try:
                received = yield "original", total
            except ValueError as error:
                received = len(str(error))
            total += received or 0
    finally:
        accumulate.cleanups.append(total)


accumulate.cleanups = []


def drive(generator):
    """send, throw and close a generator; return what it yielded."""
    seen = [next(generator), generator.send(5), generator.send(10)]
    seen.append(generator.throw(ValueError("abcd")))
    generator.close()
    return seen


def test_generator_send_throw_close():
    accumulate.cleanups.clear()
    expected = drive(accumulate(1))
    assert expected == [("original", 1), ("original", 6), ("original", 16), ("original", 20)]
    with compiling(accumulate) as compiler:
        got = drive(accumulate(1))  # created and driven with the hook on
        outside = accumulate(2)
    assert [untag(item) for item in got] == expected and got[0][0] == "replacement"
    assert drive(outside)[0] == ("replacement", 2)  # created inside, driven outside
    assert accumulate.cleanups == [20, 20, 21]
    assert len(compiler.misses) == 1  # the second generator came from the cache


def test_generator_driven_under_the_hook_is_never_offered_again():
    offered = []

    def callback(func, args):
        if func.__code__ is accumulate.__code__:
            offered.append(args)
        return None

    generator = accumulate(0)
    with hooked(callback):
        drive(generator)
    assert offered == []  # resuming a generator is never a new call


def test_yield_from_and_generator_expressions():
    def inner(n):
        yield from range(n)
        return "original"

    def outer(n):
        result = yield from inner(n)
        yield result
        yield sum(x for x in range(n))

    expected = list(outer(4))
    with compiling(outer, inner):
        got = list(outer(4))
    assert got == [0, 1, 2, 3, "replacement", 6] and expected[4] == "original"


async def fetch(x):
    await asyncio.sleep(0)
    return x * 2


async def gather_all(n):
    values = await asyncio.gather(*(fetch(i) for i in range(n)))
    async with asyncio.timeout(5) if hasattr(asyncio, "timeout") else _null():
        await asyncio.sleep(0)
    return "original", sum(values)


class _null:
    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


def test_asyncio_coroutines():
    expected = asyncio.run(gather_all(5))
    with compiling(gather_all, fetch) as compiler:
        got = asyncio.run(gather_all(5))
    assert untag(got) == expected == ("original", 20) and got[0] == "replacement"
    assert [name for name, _ in compiler.misses] == ["gather_all", "<genexpr>", "fetch"]


def test_async_generator():
    async def ticks(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield "original", i

    async def collect():
        return [item async for item in ticks(3)]

    expected = asyncio.run(collect())
    with compiling(ticks):
        got = asyncio.run(collect())
    assert [untag(item) for item in got] == expected and got[0][0] == "replacement"
