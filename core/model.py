"""The one model type of the project: a kernel expansion with bias.

    f(x) = sum_j coef_j K(s_j, x) + b,      prediction = classes[f(x) > 0]

Every method (C-SVC, the budget SVMs, SpSVM, the slant sparsifier, EBSVM,
L0-SVM) produces one.  ``coef_j`` is signed (a_j y_j for dual methods).
"""

import io
import json
from dataclasses import dataclass, field, replace

import numpy as np

from core.atomic_file import atomic_write
from core.kernels import KernelSpec, kernel_times
from core.labels import decode_labels
from core.rows import as_rows, csr_from_arrays, is_sparse, n_rows, squared_norms, take_rows
from core.validation import check_integer

FORMAT_VERSION = 2  # 1: the whole metadata in the JSON header (``from_bytes`` still reads it)
READABLE_VERSIONS = (1, 2)
# the metadata of a fit's path through smaller support sizes: SpSVM-2's beta at every size
# (``core.spsvm.truncate``), the slant sparsifier's steps (``core.slant.slant_model_at``)
RECORDED_PATH_KEYS = ("path", "steps")
# the metadata of Platt's sigmoid, (A, B), fitted on the expansion's own decision values (``spark_bsvm``'s
# calibration): no model derived from it (``derived_metadata``) scores as it does, so none keeps it
CALIBRATION_KEY = "platt"


@dataclass
class KernelExpansion:
    """Support vectors, signed coefficients, bias, kernel and label mapping.

    ``classes``: the two original label values, ``classes[0]`` mapped to -1
    and ``classes[1]`` to +1.  ``metadata``: JSON-able training record
    (method, parameters, iterations, objective, ...).  ``support_ids``: the
    training-set ids of the support vectors when known.
    """

    support_vectors: object
    coef: np.ndarray
    bias: float
    kernel: KernelSpec
    classes: list
    n_features: int
    metadata: dict = field(default_factory=dict)
    support_ids: np.ndarray = None

    def __post_init__(self):
        self.support_vectors = as_rows(self.support_vectors, n_features=self.n_features)
        self.coef = np.ascontiguousarray(self.coef, dtype=np.float64)
        if self.coef.shape != (n_rows(self.support_vectors),):
            raise ValueError(f"{n_rows(self.support_vectors)} support vectors but {self.coef.shape} coefficients")
        if len(self.classes) != 2:
            raise ValueError(f"a binary model needs two class values, got {self.classes}")
        self.bias = float(self.bias)
        self._sv_sq_norms = squared_norms(self.support_vectors)

    @property
    def n_support(self):
        return self.coef.shape[0]

    def decision_function(self, X, precision="float64"):
        """f(x) for every row of X (dense or sparse); the kernel values are never stored.  ``precision``:
        "float32" takes the dot products and rbf's exponentials in float32 (``core.kernels.PRECISIONS``: less
        CPU; f moved by up to 1.2e-3 on covtype-20k, ``bench/bench_precision.py``)."""
        X = as_rows(X, n_features=self.n_features)
        if self.n_support == 0:
            return np.full(n_rows(X), self.bias)
        return kernel_times(X, self.support_vectors, self.kernel, self.coef, z_sq_norms=self._sv_sq_norms,
                            precision=precision) + self.bias

    def predict(self, X):
        """Predicted labels, in the original label values."""
        return decode_labels(self.decision_function(X), self.classes)

    def for_scoring(self):
        """The same function without the training record (``metadata``, ``support_ids``): what a scoring task
        needs.  A recorded path (SpSVM-2's, the slant sparsifier's) can be far larger than the support
        vectors, and Spark ships a scoring function to every task."""
        return replace(self, metadata={}, support_ids=None)

    def pruned(self, s):
        """The same expansion keeping only the s largest |coef| (Dekel & Singer's pruning, section 5).

        A recorded path (``RECORDED_PATH_KEYS``) is dropped: it describes the support vectors in the order
        the fit added them, which the pruned model no longer holds; so is a calibration (``derived_metadata``)."""
        (s,) = check_integer(0, **{"the number of weights to keep": s})
        if s >= self.n_support:
            return self
        keep = np.sort(np.argsort(-np.abs(self.coef), kind="stable")[:s])
        meta = derived_metadata(self.metadata, RECORDED_PATH_KEYS, pruned_to=int(s))
        ids = None if self.support_ids is None else self.support_ids[keep]
        return KernelExpansion(take_rows(self.support_vectors, keep), self.coef[keep], self.bias,
                               self.kernel, list(self.classes), self.n_features, meta, ids)

    # ---- persistence: one .npz file, no pickle -------------------------------------------

    def to_bytes(self):
        """The model as bytes (an .npz archive: a JSON header and arrays, no pickle).

        The metadata's long lists of numbers (a recorded path: SpSVM-2's coefficients at every size, d (d + 1)
        / 2 of them, the slant sparsifier's steps) are stored as arrays of their own and named in the header
        (``_metadata_arrays``): in the JSON header they took ~19 characters a float, stored as 4-byte
        characters, ~76 bytes against 8.  An SpSVM-2 model of 1,000 basis functions (covtype-15k): 41.7 MB in
        format 1, 4.5 MB now; ``to_bytes`` 316-317 ms against 25-26 ms, ``from_bytes`` 246-248 ms against
        15 ms (``bench/bench_model_io.py``, alternating with the code before)."""
        arrays = {}
        header = {"format_version": FORMAT_VERSION, "bias": self.bias, "kernel": self.kernel.to_dict(),
                  "classes": _plain(self.classes), "n_features": self.n_features,
                  "metadata": _metadata_arrays(self.metadata, arrays), "sparse": is_sparse(self.support_vectors)}
        arrays.update(header=np.array(json.dumps(header)), coef=self.coef)
        if self.support_ids is not None:
            arrays["support_ids"] = np.asarray(self.support_ids, np.int64)
        sv = self.support_vectors
        if is_sparse(sv):
            arrays.update(sv_data=sv.data, sv_indices=sv.indices, sv_indptr=sv.indptr)
        else:
            arrays["sv_dense"] = sv
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, payload):
        """The model serialised by ``to_bytes`` (of this version or of format 1)."""
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            header = json.loads(str(z["header"]))
            if header.get("format_version") not in READABLE_VERSIONS:
                raise ValueError(f"unsupported model format version {header.get('format_version')}: this "
                                 f"spark-bsvm reads versions {READABLE_VERSIONS}; load a model saved by a newer "
                                 "one with that version")
            n_features = header["n_features"]
            if header["sparse"]:
                sv = csr_from_arrays(z["sv_data"], z["sv_indices"], z["sv_indptr"],
                                     (z["sv_indptr"].shape[0] - 1, n_features))
            else:
                sv = z["sv_dense"]
            ids = z["support_ids"] if "support_ids" in z.files else None
            return cls(sv, z["coef"], header["bias"], KernelSpec.from_dict(header["kernel"]),
                       header["classes"], n_features, _metadata_lists(header["metadata"], z), ids)

    def save(self, path):
        """Write the model to ``path`` (a .npz file) atomically: a crash leaves the old file intact."""
        payload = self.to_bytes()
        with atomic_write(path) as f:
            f.write(payload)

    @classmethod
    def load(cls, path):
        """Read a model written by ``save``."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())


def derived_metadata(metadata, dropped=(), **changes):
    """The metadata of a model derived from one with ``metadata`` (pruned, ``core.spsvm.truncate``,
    ``core.slant.slant_model_at``): without the keys ``dropped`` nor the calibration (``CALIBRATION_KEY``),
    whose sigmoid was fitted on the other model's decision values (calibrate the derived model again for
    probabilities), with ``changes`` set."""
    kept = {k: v for k, v in metadata.items() if k != CALIBRATION_KEY and k not in dropped}
    return dict(kept, **changes)


def _plain(values):
    """Label values as JSON-able Python scalars."""
    return [v.item() if hasattr(v, "item") else v for v in values]


_ARRAY_KEY = "__array__"  # {"__array__": name} in a saved header: the list stored as the array ``name``
_ARRAY_MIN = 16  # lists of numbers at least this long are stored as arrays
_ARRAY_KINDS = ((bool, np.bool_), (int, np.int64), (float, np.float64))  # a list's one element type: its dtype


def _metadata_arrays(value, arrays):
    """``value`` (JSON-able metadata) with every list of at least ``_ARRAY_MIN`` numbers of one type (bool, int
    or float) replaced by ``{_ARRAY_KEY: name}``, the list added to ``arrays`` under that name.  numpy scalars
    and arrays become Python numbers and lists first (a parameter taken from ``np.logspace``, a flag from a
    comparison of numpy floats), which JSON could not write."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _metadata_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) >= _ARRAY_MIN:
            for kind, dtype in _ARRAY_KINDS:
                if all(type(v) is kind for v in value):  # exact types: bool is no int here, 1 no float
                    try:
                        array = np.array(value, dtype)
                    except OverflowError:  # ints beyond int64 stay in the header
                        break
                    name = f"metadata_{len(arrays)}"
                    arrays[name] = array
                    return {_ARRAY_KEY: name}
        return [_metadata_arrays(v, arrays) for v in value]
    return value


def _metadata_lists(value, archive):
    """The metadata ``_metadata_arrays`` stored, its arrays read back from ``archive`` as lists."""
    if isinstance(value, dict):
        if set(value) == {_ARRAY_KEY}:
            return archive[value[_ARRAY_KEY]].tolist()
        return {k: _metadata_lists(v, archive) for k, v in value.items()}
    if isinstance(value, list):
        return [_metadata_lists(v, archive) for v in value]
    return value
