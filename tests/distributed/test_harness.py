"""The multi-process harness that every distributed test and the chapter use."""
import pytest
import torch
import torch.distributed as dist

from tinydynamo.testing.distributed import RankError, run_ranks


def sum_of_ranks(rank, world_size):
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    return t.item()


def fail_on_rank_one(rank, world_size):
    if rank == 1:
        raise ValueError("rank one refuses")
    return rank


def test_all_reduce_on_two_ranks():
    assert run_ranks(sum_of_ranks, 2) == [1.0, 1.0]


def test_a_failing_rank_is_reported_with_its_traceback():
    with pytest.raises(RankError, match="rank 1:(.|\n)*ValueError: rank one refuses"):
        run_ranks(fail_on_rank_one, 2, timeout=60)
