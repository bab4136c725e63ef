import pytest

import tinydynamo.dynamo as dynamo


@pytest.fixture(autouse=True)
def fresh_caches():
    """Every test starts with no compiled frames and zeroed counters."""
    dynamo.reset()
    yield
    dynamo.reset()
