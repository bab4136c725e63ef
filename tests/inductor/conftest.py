"""Shared fixtures of the inductor tests: one kernel cache directory for the whole session, so a
graph compiled by several tests is compiled once, and nothing lands in the user's cache."""
import pytest

from tinydynamo import config


@pytest.fixture(scope="session")
def kernel_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tinydynamo-kernels")


@pytest.fixture(autouse=True)
def kernel_cache(kernel_cache_dir):
    with config.patch(cache_dir=str(kernel_cache_dir)):
        yield kernel_cache_dir
