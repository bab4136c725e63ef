"""Every decomposition against aten itself, on OpInfo-style samples (prims_samples.py)."""
import pytest

from prims_helpers import assert_meta_matches, assert_prims_only, assert_same, run_decomposed
from prims_samples import SAMPLES
from tinydynamo.prims import decomposition_table


def test_every_decomposition_has_samples():
    missing = sorted(str(op) for op in decomposition_table if not SAMPLES.get(op))
    assert not missing, f"decompositions without samples: {missing}"


def _output_meta(prim_gm):
    return next(n for n in prim_gm.graph.nodes if n.op == "output").meta["val"]


def _shapes_and_dtypes(value):
    if isinstance(value, (tuple, list)):
        return [_shapes_and_dtypes(v) for v in value]
    return None if value is None else (tuple(value.shape), value.dtype)


@pytest.mark.parametrize("op", sorted(SAMPLES, key=str), ids=str)
def test_decomposition_matches_aten(op):
    for sample in SAMPLES[op]:
        expected = op(*sample.args, **sample.kwargs)
        actual, prim_gm = run_decomposed(op, sample.args, sample.kwargs)
        assert_prims_only(prim_gm)
        assert_meta_matches(_output_meta(prim_gm), actual)
        if sample.values:
            assert_same(actual, expected, **sample.tolerance)
        else:
            assert _shapes_and_dtypes(actual) == _shapes_and_dtypes(expected)
