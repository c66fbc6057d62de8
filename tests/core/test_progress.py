"""The progress log: a line at each tenth of a fit with elapsed and remaining time, at the default level."""

import re

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.progress import LOGGER, Progress
from core.spsvm import fit_spsvm
from core.synthetic import make_rings


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_line_at_each_tenth_with_elapsed_and_remaining_time(caplog):
    progress = Progress("method", 50, "things")
    for done in range(1, 51):
        progress.update(done, "detail")
    lines = _lines(caplog)
    assert [int(re.match(r"method: (\d+) of 50 things", line).group(1)) for line in lines] == list(range(5, 51, 5))
    assert all(re.search(r"\(\d+%\), \d+s elapsed, ~\d+s left; detail$", line) for line in lines)
    assert lines[-1].startswith("method: 50 of 50 things (100%)")


def test_without_a_known_end_a_line_each_interval(caplog):
    progress = Progress("solver", unit="rounds", interval=0.0)
    progress.update(7, "violation 0.1")
    assert _lines(caplog) == ["solver: 7 rounds, 0s elapsed; violation 0.1"]
    quiet = Progress("solver", unit="rounds")  # a minute between lines
    quiet.update(8)
    assert len(_lines(caplog)) == 1


def test_an_spsvm_fit_reports_basis_functions_of_max_basis_at_the_default_level(caplog):
    """No caplog.set_level: the progress logger logs at INFO by itself."""
    X, y = make_rings(200, 4, seed=5)
    fit_spsvm(LocalEngine(X, y, n_partitions=2), max_basis=20, lam=0.1, kernel=KernelSpec(gamma=0.5), kappa=5)
    lines = _lines(caplog)
    assert [int(re.match(r"SpSVM-2: (\d+) of 20 basis functions", line).group(1)) for line in lines] == \
        list(range(2, 21, 2))
    assert "objective" in lines[-1] and "left" in lines[-1]
    assert not [r for r in caplog.records if r.getMessage().startswith("SpSVM stage")]
