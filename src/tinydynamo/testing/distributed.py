"""Run a function on several ``gloo`` ranks on this machine (book chapter 14, "Compiling
distributed programs"; the distributed tests and benchmarks use it too).

``run_ranks(fn, world_size)`` starts ``world_size`` fresh processes (the ``spawn`` start
method, as ``torchrun`` would), joins them into one process group over 127.0.0.1, calls
``fn(rank, world_size, *args)`` in each, and returns the list of their results, rank by rank.
``fn`` must be importable by name (a module-level function), and its result picklable. An
exception on any rank is raised here as ``RankError`` with that rank's traceback; a rank that
hangs (a collective that one rank never joins) is killed after ``timeout`` seconds.

torch.distributed is the engine: this only starts processes, as ``torchrun`` does.
"""
import multiprocessing
import os
import socket
import traceback

import torch
import torch.distributed as dist


class RankError(RuntimeError):
    """A rank raised, or did not finish in time."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(fn, world_size=2, *args, timeout=120, threads_per_rank=1):
    """``[fn(0, world_size, *args), ..., fn(world_size - 1, world_size, *args)]``, each on its own rank."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_rank_main, args=(fn, rank, world_size, port, args, threads_per_rank, results))
             for rank in range(world_size)]
    for p in procs:
        p.start()
    try:
        outcome = _collect(results, world_size, timeout)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    errors = [f"rank {rank}:\n{text}" for rank, (ok, text) in sorted(outcome.items()) if not ok]
    if errors:
        raise RankError("\n".join(errors))
    return [outcome[rank][1] for rank in range(world_size)]


def _collect(results, world_size, timeout):
    outcome = {}
    while len(outcome) < world_size:
        try:
            rank, ok, value = results.get(timeout=timeout)
        except Exception:
            missing = sorted(set(range(world_size)) - set(outcome))
            raise RankError(f"ranks {missing} did not finish within {timeout} s") from None
        outcome[rank] = (ok, value)
        if not ok:
            break  # the others may wait forever on a collective this rank never reaches
    return outcome


def _rank_main(fn, rank, world_size, port, args, threads_per_rank, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank), HF_HUB_OFFLINE="1")
    torch.set_num_threads(threads_per_rank)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        try:
            results.put((rank, True, fn(rank, world_size, *args)))
        finally:
            dist.destroy_process_group()
    except BaseException:
        results.put((rank, False, traceback.format_exc()))
