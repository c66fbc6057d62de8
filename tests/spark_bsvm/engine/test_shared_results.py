"""SharedResults: one computation per key, whatever the number of fits asking and their threads."""

import threading
import time

import pytest

from spark_bsvm.engine.shared_results import SharedResults


def test_fits_asking_at_once_wait_for_one_computation_per_key():
    shared, calls, results = SharedResults(), [], []

    def compute(key):
        calls.append(key)
        time.sleep(0.05)  # the others arrive while it runs
        return f"checked {key}"

    def fit(key):
        results.append(shared.once(key, lambda: compute(key)))

    threads = [threading.Thread(target=fit, args=(key,)) for key in ["a", "b", "a", "a", "b"]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(calls) == ["a", "b"]
    assert sorted(results) == ["checked a"] * 3 + ["checked b"] * 2


def test_a_failed_computation_is_run_again_by_the_next_fit():
    shared, calls = SharedResults(), []

    def bad_rows():
        calls.append(1)
        raise ValueError("label column 'label' has 1 null value(s)")

    for _ in range(2):
        with pytest.raises(ValueError, match="null value"):
            shared.once("rows", bad_rows)
    assert len(calls) == 2
    assert shared.once("rows", lambda: None) is None  # None is a result like any other
    assert shared.once("rows", lambda: "never run") is None


def test_a_result_a_fit_computed_its_own_way_serves_the_others_and_never_replaces_one():
    """A fit whose tasks judged the checks holds their result with ``once`` (a lambda that returns it);
    ``known`` gives what is held, without waiting."""
    shared = SharedResults()
    assert shared.known("checks") is None  # nothing computed: the fit checks on its own, and holds its result
    shared.once("checks", lambda: "judged by the first fit's tasks")
    shared.once("checks", lambda: "judged by a fit beside it")  # a second one changes nothing
    assert shared.known("checks") == "judged by the first fit's tasks"
    assert shared.once("checks", lambda: pytest.fail("computed again")) == "judged by the first fit's tasks"
    shared.once("rows", lambda: "computed")
    shared.once("rows", lambda: "held by another fit")
    assert shared.known("rows") == "computed"
