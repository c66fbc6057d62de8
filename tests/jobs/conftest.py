"""The jobs write their [output] paths relative to the working directory (conf/quickstart.toml saves to
out/quickstart/): the tests that run them do so in a fresh one, never in the checkout."""

import pytest

from tests.conftest import working_directory


@pytest.fixture(scope="module")
def job_cwd(spark, tmp_path_factory):
    """A fresh working directory for this module's job runs (Python's and Spark's)."""
    with working_directory(spark, tmp_path_factory.mktemp("job-cwd")) as path:
        yield path
