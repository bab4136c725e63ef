"""The scaffold's pieces: config, logging, stats, backends registry, the C extension."""
import sys

import pytest
import torch

import tinydynamo
from tinydynamo import _logging, backends, config


def test_c_extension_is_built_for_this_interpreter():
    from tinydynamo._C import _eval_frame

    assert _eval_frame.python_version_hex() == sys.hexversion


def test_config_patch_restores():
    before = config.cache_size_limit
    with config.patch(cache_size_limit=2):
        assert config.cache_size_limit == 2
    assert config.cache_size_limit == before
    with pytest.raises(AttributeError, match="no option"):
        with config.patch(no_such_option=1):
            pass


def test_set_logs(capsys):
    tinydynamo.set_logs("graph")
    try:
        _logging.trace_artifact("graph", lambda: "hello")
        _logging.trace_artifact("guards", lambda: "hidden")
    finally:
        tinydynamo.set_logs("")
    err = capsys.readouterr().err
    assert "hello" in err and "hidden" not in err
    with pytest.raises(ValueError, match="unknown"):
        tinydynamo.set_logs("nonsense")


def test_stats_has_every_counter():
    assert set(tinydynamo.stats()) >= {"frames_seen", "graphs", "graph_breaks", "recompiles", "cache_hits"}


def test_backend_lookup():
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    fn = backends.lookup_backend("eager")(gm, [torch.ones(2)])
    torch.testing.assert_close(fn(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(ValueError, match="unknown tinydynamo backend"):
        backends.lookup_backend("nope")
