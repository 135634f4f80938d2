"""The benchmark suite's config (where the baselines' params entries are), read once per
test module that asks for `benchmark_params`."""

import pytest

from tests.algorithms import baselines


@pytest.fixture(scope="module")
def benchmark_params():
    return baselines.benchmark_params()
