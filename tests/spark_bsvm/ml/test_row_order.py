"""On Spark too, the same rows in another order and partitioning give the same model (issue 18, item 4)."""

import numpy as np
import pytest

from core.synthetic import make_rings
from spark_bsvm import CSVC, SpSVM
from tests.conftest import assert_same_model_by_rows, to_df

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("estimator", [
    SpSVM(maxBasis=12, regParam=1e-3, kappa=8, gamma=0.5, seed=3),
    CSVC(C=3.0, gamma=0.5, workingSetSize=16),  # many rounds, each with other partitions' candidates
    CSVC(C=3.0, workingSetSize=16),  # gamma="scale": the variance's aggregates per partition, rounded
], ids=["SpSVM", "CSVC", "CSVC-gamma-scale"])
def test_a_repartitioned_dataframe_gives_the_same_model(spark, estimator):
    X, y = make_rings(300, 4, seed=21)
    df = to_df(spark, X, np.where(y > 0, 1.0, 0.0))
    shuffled = df.repartition(3)  # round robin from a random start: other rows, in another order, per task
    model = estimator.fit(df)
    again = estimator.fit(shuffled)
    assert_same_model_by_rows(model.expansion, again.expansion, make_rings(200, 4, seed=22)[0])
