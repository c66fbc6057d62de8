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


def test_a_result_offered_by_a_fit_serves_the_others_and_never_replaces_one():
    shared = SharedResults()
    assert shared.known("checks") is None  # nothing computed: the fit checks on its own, and offers
    shared.offer("checks", "judged by the first fit's tasks")
    shared.offer("checks", "judged by a fit beside it")  # a second offer changes nothing
    assert shared.known("checks") == "judged by the first fit's tasks"
    assert shared.once("checks", lambda: pytest.fail("computed again")) == "judged by the first fit's tasks"
    shared.once("rows", lambda: "computed")
    shared.offer("rows", "offered")
    assert shared.known("rows") == "computed"
