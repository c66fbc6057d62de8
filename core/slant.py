"""The slant-loss sparsifier of Cotter, Shalev-Shwartz & Srebro: a sparse SVM from any reference model.

Given a reference g(x) = <w, phi(x)> + b, find a sparse w~ (keeping b) for problem 4.1 with the bias of
section 4.6:

    minimise f(w~) = max_{i: y_i g(x_i) > 0} h_i - c~_i,   h_i = min(1, y_i g(x_i)) - y_i b,
                                                           c~_i = y_i <w~, phi(x_i)>

by subgradient steps w~ += eta y_k phi(x_k) from w~ = 0 (section 4.2): the basic method steps on the
index k maximising v_k = h_k - c~_k and stops when f(w~) <= epsilon.  The aggressive variant (section
6.1) steps on the most violating current support vector while one has v_k > epsilon (the text prints
<=; the violated ones are meant) and takes a new index only when none has.  Every step is on an index
with v_k > epsilon, so with |K(x, z)| <= Kmax over the data (1 for rbf)

    ||w~_{t+1} - w||^2 <= ||w~_t - w||^2 - eta (2 epsilon - eta Kmax)

(because h_k - y_k <w, phi(x_k)> <= 0), and either method stops within ||w||^2 / (eta (2 epsilon -
eta Kmax)) steps when 2 epsilon > eta Kmax: Lemma 4.2's 4 ||w||^2 for eta = epsilon = 1/2 and rbf.
That bound is the default step limit.

Batched, exactly.  A step moves every response by at most eta Kmax, and for a
kernel with K >= 0 (rbf, poly of even degree) it can only raise the violations of the other class.
Each round the partitions apply the steps taken since the last round and report the responses of the
support vectors and, per class, their top-q violators with rows, plus the best violation they did
not report.  The driver then steps on what it holds for as long as its best example provably beats
every unreported one (reported bound + accumulated drift, exact ties broken by the smaller content key
of the example, then id, ``PartitionData.keys``): the step sequence is that of the one-step-at-a-time
algorithm, in far fewer rounds, and the same for any row order and partitioning.  Steps on support vectors
in the aggressive variant need no proof at all.

The whole path is recorded: ``metadata["steps"]`` lists the id of every step and the support vectors
are ordered by first appearance, so the model at any support size is a prefix (``slant_model_at``).
Validation rows on the engine are scored after every step by the rounds that apply the steps, so the
validation error at every support size comes with the path (``core.selection``).

Small support sets.  The guarantee (Lemma 4.1: slant loss <= the reference's hinge loss) holds once
f(w~) <= epsilon, which the path reaches within the step bound above, of order ||w||^2: the paper ties the
support size to the reference's norm (section 4.4 trains the reference for it).  A path cut earlier by
``max_support`` (or ``max_steps``) is an iterate without that guarantee, and with the reference's fixed bias
it is lopsided: h_i = min(1, m_i) - y_i b puts the targets of one class up to 2 |b| above the other's, so
the first steps are all on that class, and until they meet, the model is b plus bumps of one sign, each at
most eta Kmax high: sign(b) wherever they do not reach, everywhere while |b| > eta Kmax.  Measured on
covtype-20k (C-SVC reference, rbf gamma = 16, C = 10: ||w||^2 = 19,780, b = 0.216; eta = epsilon = 1/2):
the first 252 support vectors are all of class -1, and the model at 50 predicts +1 for 97% of the test
rows (48.8% test error; f(w~) = 1.22 still at 1,000).  A reference of smaller norm on the same rows (gamma = 1,
C = 0.1: ||w||^2 = 155) converges at 160 support vectors, 29.2% test error at 50 (SpSVM-2, gamma = 1: 28.1%).  So a fit
cut before f(w~) <= epsilon logs a warning with these figures (``metadata["converged"]`` is False), and
for small sizes the reference (its C and gamma) and eta are chosen on validation rows
(``bench.bench_slant_curves``), as section 7 chooses eta per support size.  Inside one fit, ``fit_grid``
of ``core.grid`` with settings ``[{"eta": e}, ...]`` (the estimator's ``etaGrid``) runs one path per eta on
the same engine and keeps the one whose kept size (``max_support`` with ``select="end"``) validates best;
the reference's C and gamma are chosen outside it (a reference per setting).

The stopping rule stays section 4.2's f(w~) <= epsilon: a path that ends before ``max_support`` has
converged (a smaller epsilon goes on; section 7 tries 2^-4 ... 1).  The bias stays section 4.6's, chosen by
measurement on a validation split (a seeded 20% of the training rows, the reference trained on the rest;
never the test rows).  Section 6's alternative, a bias learned with w~ (Appendix D; the authors' code steps on the
most violating example of each class in turn and takes the bias (kappa+ - kappa-) / 2 of the two classes'
largest violations), balances the classes of the support vectors but is no better overall: validation
error at 50 / 200 support vectors, best over eta in {1/4, 1} and the references tried, fixed bias against
learned: covtype-20k 28.4 / 24.1% against 29.6 / 27.7%, ijcnn1 16.0 / 5.4% against 12.0 / 8.9% (ijcnn1's
constant classifier: 9.6%).  It is not offered.
"""

import logging
import math
import time

import numpy as np

from core.kernels import kernel_block
from core.model import KernelExpansion
from core.partition.slant import NEG, POS, add_steps, slant_round
from core.progress import Progress
from core.rows import stack_rows, take_rows
from core.selection import check_selection, summed, validation_record
from core.threads import one_blas_thread
from core.validation import check_positive

log = logging.getLogger("spark_bsvm")

_SLACK = 1e-12  # relative margin on a drift bound, for the rounding of the responses the driver cannot see


@one_blas_thread
def fit_slant(engine, reference, *, eta=0.5, epsilon=0.5, max_support=None, max_steps=None, aggressive=False,
              candidates_per_class=64, select="end", tolerance=0.0):
    """Sparsify ``reference`` (a ``KernelExpansion`` trained on the same labels) on ``engine``'s data.

    ``eta``: step size; ``epsilon``: stop when f(w~) <= epsilon (the paper's analysis uses 1/2 for
    both); ``max_support``: stop before a step would add support vector ``max_support + 1``;
    ``max_steps``: at most this many steps (default: the convergence bound of the module doc, which
    then must exist); ``aggressive``: section 6.1's variant; ``candidates_per_class``: top violators
    each partition reports per class and round (more: fewer rounds, more driver work per step).
    The result keeps the reference's kernel and bias; its metadata holds the step path.  With validation
    rows on the engine, ``metadata["validation"]`` holds their error at every support size, and
    ``select``, ``tolerance`` choose the size kept (``core.selection``; the model is then
    ``slant_model_at`` of it).
    """
    _check(engine, reference, eta, epsilon, max_support, max_steps, candidates_per_class)
    check_selection(select, tolerance, engine.n_validation)
    kernel = reference.kernel
    sq_norm = float(reference.coef @ (reference.decision_function(reference.support_vectors) - reference.bias))
    path = _Path(engine.n_features)
    base = {"kernel": kernel.to_dict(), "eta": float(eta), "n_select": int(candidates_per_class)}
    reset = dict(base, reset=True, ref_rows=reference.support_vectors, ref_coef=reference.coef,
                 ref_bias=reference.bias)
    before = path.model(eta)  # the partitions' model before the round's steps, which a lost task rebuilds

    def rebuild():
        return dict(request, **reset, sv_ids=before[0], sv_rows=before[1], sv_coef=before[2])

    request = dict(reset, sv_ids=before[0], sv_rows=before[1], sv_coef=before[2], step_order=np.zeros(0, np.int64))
    start = time.perf_counter()
    rounds, stopped, limit = 0, None, max_steps
    validation = {"error": [], "loss": []}  # after each step
    progress = Progress("slant sparsifier", max_support, "support vectors") if max_support \
        else Progress("slant sparsifier", max_steps, "steps")
    while True:
        answers = engine.run(slant_round, request, rebuild=rebuild)
        rounds += 1
        if rounds == 1:
            kmax = max(a["kmax"] for a in answers)
            limit = _step_limit(max_steps, sq_norm, eta, epsilon, kmax)
            nonnegative = _nonnegative(kernel)
        for key, values in zip(("error", "loss"), summed(answers)):
            validation[key].extend(np.atleast_1d(values).tolist())
        held = _Held(answers, path)
        if stopped:  # the last round only brought the partitions up to date: f is now exact
            break
        before = path.model(eta)
        stopped, pending = _step_locally(held, path, kernel, eta, epsilon, kmax, nonnegative, aggressive,
                                         max_support, limit)
        log.info("slant round %d: %d steps, support %d, %.1fs", rounds, len(path.steps), len(path.ids),
                 time.perf_counter() - start)
        progress.update(len(path.ids) if max_support else len(path.steps), f"{len(path.ids)} support vectors")
        if stopped and not pending:
            break
        request = dict(base, reset=False, **_step_request(held, pending))
    meta = {"method": "slant_aggressive" if aggressive else "slant_basic",
            "params": {"eta": eta, "epsilon": epsilon, "max_support": max_support, "max_steps": max_steps,
                       "aggressive": aggressive, "candidates_per_class": candidates_per_class,
                       "kernel": kernel.to_dict(), "select": select, "tolerance": tolerance},
            "steps": [int(i) for i in path.steps], "eta": eta, "stopped": stopped, "rounds": rounds,
            "objective": held.objective(), "step_limit": limit, "kmax": kmax, "n_train": engine.n_examples,
            "reference": {"method": reference.metadata.get("method"), "n_support": reference.n_support,
                          "sq_norm": sq_norm, "bias": reference.bias},
            "converged": stopped == "objective"}
    if not meta["converged"]:
        _warn_cut(meta, path, reference, epsilon)
    ids, rows, coef = path.model(eta)
    model = KernelExpansion(rows, coef, reference.bias, kernel, list(reference.classes), engine.n_features,
                            meta, ids)
    if not (engine.n_validation and model.n_support):
        return model
    meta["validation"] = _validation_path(model, validation, select, tolerance)
    kept = meta["validation"]["kept_size"]
    return model if kept == model.n_support else slant_model_at(model, kept)


def _validation_path(model, validation, select, tolerance):
    """``metadata["validation"]`` of a slant fit: at each support size s, the error and loss of the path's
    last model with s support vectors (``slant_model_at``), from ``validation``'s values after each step."""
    positions = _step_positions(model)
    sizes = np.arange(1, model.n_support + 1)
    last = np.array([_prefix_length(positions, s) for s in sizes]) - 1  # the step after which size s ends
    error, loss = (np.array(validation[key])[last] for key in ("error", "loss"))
    return validation_record(sizes, error, loss, select, tolerance)


def slant_model_at(model, n_support):
    """The model of ``fit_slant``'s path with at most ``n_support`` support vectors.

    It is the longest prefix of the recorded steps that uses no more than ``n_support`` distinct
    examples: the last iterate of the path at that support size.
    """
    positions = _step_positions(model)
    k = min(int(n_support), model.n_support)
    coef = slant_path_coef(model, [k])[0][:k]
    meta = dict(model.metadata, steps=model.metadata["steps"][:_prefix_length(positions, k)],
                n_support_limit=int(n_support))
    return KernelExpansion(take_rows(model.support_vectors, np.arange(k)), coef, model.bias, model.kernel,
                           list(model.classes), model.n_features, meta, model.support_ids[:k])


def slant_path_coef(model, sizes):
    """Coefficients of the path's models at the given support sizes, one row per size.

    Row r is aligned with ``model.support_vectors`` (zeros beyond the first ``sizes[r]``), so that
    ``K(X, model.support_vectors) @ rows.T + model.bias`` evaluates every size at once.
    """
    positions = _step_positions(model)
    sign = np.sign(model.coef)
    out = np.zeros((len(sizes), model.n_support))
    for r, size in enumerate(sizes):
        if size < 0:
            raise ValueError(f"a support size must be >= 0, got {size}")
        prefix = positions[:_prefix_length(positions, size)]
        out[r] = model.metadata["eta"] * np.bincount(prefix, minlength=model.n_support) * sign
    return out


def _step_positions(model):
    """Every step of the recorded path as a position in ``model.support_vectors`` (first-appearance order)."""
    if "steps" not in model.metadata or model.support_ids is None:
        raise ValueError("this model holds no slant path: use a model returned by fit_slant")
    position = {i: p for p, i in enumerate(model.support_ids.tolist())}
    return np.array([position[i] for i in model.metadata["steps"]], np.int64)


def _prefix_length(positions, size):
    """Steps before the first step on support vector number ``size`` + 1 (that is, at position ``size``)."""
    beyond = np.flatnonzero(positions >= size)
    return int(beyond[0]) if beyond.size else positions.size


def check_reference(reference, n_features, classes):
    """A ValueError unless ``reference`` was trained on data of ``n_features`` features and labels ``classes``."""
    if reference.n_features != n_features:
        raise ValueError(f"the reference model has {reference.n_features} features but the data has "
                         f"{n_features}: sparsify on the data the reference was trained on")
    if [str(c) for c in reference.classes] != [str(c) for c in classes]:
        raise ValueError(f"the reference model's label values {list(reference.classes)} differ from the data's "
                         f"{list(classes)}: use the labels the reference was trained with")


def _check(engine, reference, eta, epsilon, max_support, max_steps, candidates_per_class):
    if not isinstance(reference, KernelExpansion):
        raise ValueError(f"reference must be a KernelExpansion (a trained model's expansion), got "
                         f"{type(reference).__name__}")
    check_reference(reference, engine.n_features, engine.classes)
    check_positive(eta=eta)
    if not (np.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    for name, value in (("max_support", max_support), ("max_steps", max_steps),
                        ("candidates_per_class", candidates_per_class)):
        if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _step_limit(max_steps, sq_norm, eta, epsilon, kmax):
    """``max_steps``, or the convergence bound of the module doc (``_step_bound``)."""
    if max_steps is not None:
        return int(max_steps)
    bound = _step_bound(sq_norm, eta, epsilon, kmax)
    if bound is None:
        raise ValueError(f"with eta={eta:g}, epsilon={epsilon:g} and max |K(x, z)|={kmax:g}, 2 epsilon <= eta Kmax: "
                         "the method has no step bound, so give max_steps (or lower eta)")
    return bound


def _step_bound(sq_norm, eta, epsilon, kmax):
    """The convergence bound ||w||^2 / (eta (2 epsilon - eta Kmax)) on the steps (at least 1), or None when
    2 epsilon <= eta Kmax leaves the method without one."""
    rate = eta * (2.0 * epsilon - eta * kmax)
    return max(1, math.ceil(sq_norm / rate)) if rate > 0 else None


def _warn_cut(meta, path, reference, epsilon):
    """One warning line for a path cut before f(w~) <= epsilon (see "Small support sets" in the module doc)."""
    labels = np.array(path.y)
    one_class = ""
    if labels.size and np.all(labels == labels[0]):
        one_class = (f" All {labels.size} support vectors are of class {reference.classes[int(labels[0] > 0)]!r}: "
                     f"the model is the reference's bias {reference.bias:.3g} plus bumps of one sign, at most "
                     f"eta Kmax = {meta['eta'] * meta['kmax']:.3g} high each, so it predicts "
                     f"{reference.classes[int(reference.bias > 0)]!r} wherever they do not reach.")
    steps = _step_bound(meta["reference"]["sq_norm"], meta["eta"], epsilon, meta["kmax"])
    bound = f"up to {steps:,} steps" if steps is not None else "unboundedly many steps"
    log.warning("slant sparsifier stopped by %s at %d support vectors with f(w~) = %.3g > epsilon = %g: the "
                "paper's guarantee holds once f(w~) <= epsilon, which this reference (||w||^2 = %.4g) may take %s "
                "to reach.%s For a small support set, sparsify a reference of smaller norm (smaller C or gamma) "
                "and choose eta on validation rows.", meta["stopped"], len(path.ids), meta["objective"], epsilon,
                meta["reference"]["sq_norm"], bound, one_class)


def _nonnegative(kernel):
    """True when K(x, z) >= 0 for all x, z: a step then only raises the other class's violations."""
    return kernel.name == "rbf" or (kernel.name == "poly" and kernel.degree % 2 == 0)


class _Path:
    """The driver's record: every step's id, the support vectors in first-appearance order, their counts."""

    def __init__(self, n_features):
        self.n_features = n_features
        self.steps = []
        self.ids = []
        self.y = []
        self.count = []
        self._position = {}
        self._rows = []
        self._block = np.zeros((0, n_features))

    def add(self, i, label, row):
        """Record one step on example ``i`` (label, 1-row block)."""
        self.steps.append(i)
        p = self._position.get(i)
        if p is None:
            self._position[i] = len(self.ids)
            self.ids.append(i)
            self.y.append(label)
            self.count.append(1)
            self._rows.append(row)
        else:
            self.count[p] += 1

    def position(self, ids):
        return np.array([self._position[i] for i in ids.tolist()], np.int64)

    def rows(self):
        """The support vectors' rows as one block, in first-appearance order."""
        if self._rows:
            self._block = stack_rows([self._block] + self._rows)
            self._rows = []
        return self._block

    def model(self, eta):
        """(ids, rows, signed coefficients eta * count * y) of the current sparse model."""
        return (np.array(self.ids, np.int64), self.rows(),
                eta * np.array(self.count, np.float64) * np.array(self.y, np.float64))


class _Held:
    """What the driver sees after a round: all support vectors and the partitions' candidates.

    Values are kept as h, c (violation v = h - c) with rows for kernel columns; ``bound[c]`` and
    ``bound_rank[c]`` are the best unreported violation of class slot c and its (content key, id), by which
    exact ties go to the smaller.
    """

    def __init__(self, answers, path):
        def joined(key):
            return np.concatenate([a[key] for a in answers])

        sv_ids = joined("sv_ids")
        at = path.position(sv_ids)  # the driver holds the support vectors' labels and rows
        self.ids = np.concatenate([sv_ids, joined("cand_ids")])
        self.keys = np.concatenate([joined("sv_keys"), joined("cand_keys")])
        self.y = np.concatenate([np.array(path.y, np.float64)[at], joined("cand_y")])
        self.h = np.concatenate([joined("sv_h"), joined("cand_h")])
        self.c = np.concatenate([joined("sv_c"), joined("cand_c")])
        self.is_sv = np.arange(self.ids.size) < sv_ids.size
        self.rows = stack_rows([take_rows(path.rows(), at)] + [a["cand_rows"] for a in answers])
        values = np.stack([a["next_value"] for a in answers])
        ranks = [[(int(a["next_key"][slot]), int(a["next_id"][slot])) for a in answers] for slot in (NEG, POS)]
        self.bound = np.full(2, -np.inf)
        self.bound_rank = [(2**64, 0)] * 2  # after every (key, id)
        for slot in (NEG, POS):
            for value, rank in zip(values[:, slot], ranks[slot]):
                if value > self.bound[slot] or (value == self.bound[slot] and rank < self.bound_rank[slot]):
                    self.bound[slot], self.bound_rank[slot] = value, rank
        self._columns = {}

    def best(self, mask):
        """Position of the largest violation where ``mask`` holds, ties to the smaller (key, id) (None if
        empty)."""
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return None
        v = self.h[idx] - self.c[idx]
        top = idx[v == v.max()]
        return int(top[np.lexsort((self.ids[top], self.keys[top]))[0]])

    def rank(self, k):
        """(content key, id) of held entry ``k``: the order of exact ties."""
        return int(self.keys[k]), int(self.ids[k])

    def drift_bound(self, drift):
        """Per class slot, the largest violation an unreported example can have after ``drift``."""
        slack = np.where((drift > 0) & np.isfinite(self.bound), _SLACK * (1.0 + np.abs(self.bound)), 0.0)
        return self.bound + drift * (1.0 + _SLACK) + slack

    def violation(self, k):
        return self.h[k] - self.c[k]

    def step(self, k, eta, kernel):
        """c~ += eta y_k y K(., x_k) on everything held."""
        column = self._columns.get(k)
        if column is None:
            column = self._columns[k] = kernel_block(self.rows, take_rows(self.rows, [k]), kernel)
        add_steps(self.c, self.y, column, [0], [self.y[k]], eta)

    def objective(self):
        """max(best held violation, best unreported): f(w~), exact right after a round."""
        k = self.best(np.ones(self.ids.size, bool))
        return float(max(self.bound.max(), -np.inf if k is None else self.violation(k)))


def _step_locally(held, path, kernel, eta, epsilon, kmax, nonnegative, aggressive, max_support, limit):
    """Take every step provably equal to the one-step-at-a-time algorithm's; returns (stop reason, steps).

    The stop reason is None when a round is needed to go on.  ``raised[c]`` counts the steps taken
    since the round that can have raised the unreported violations of class slot c, each by at most
    eta Kmax; with none, the reported (value, key, id) is exact and ties go to the smaller (key, id).
    """
    pending = []
    raised = np.zeros(2)
    everything = np.ones(held.ids.size, bool)
    while True:
        if len(path.steps) >= limit:
            return "max_steps", pending
        k = held.best(held.is_sv & (held.h - held.c > epsilon)) if aggressive else None
        if k is None:  # the basic rule, or no support vector violates: the overall most violating index
            k = held.best(everything)
            value = -np.inf if k is None else held.violation(k)
            bound = held.drift_bound(eta * kmax * raised)
            if value <= epsilon:
                if np.all(bound <= epsilon):
                    return "objective", pending
                return None, pending
            for slot in (NEG, POS):
                exact_tie_won = raised[slot] == 0 and value == bound[slot] and held.rank(k) < held.bound_rank[slot]
                if not (value > bound[slot] or exact_tie_won):
                    return None, pending
            if not held.is_sv[k] and len(path.ids) == max_support:
                return "max_support", pending
        held.step(k, eta, kernel)
        held.is_sv[k] = True
        path.add(int(held.ids[k]), float(held.y[k]), take_rows(held.rows, [k]))
        pending.append(k)
        slot = POS if held.y[k] > 0 else NEG
        if nonnegative:
            raised[1 - slot] += 1
        else:
            raised += 1


def _step_request(held, pending):
    """The steps for the partitions: each stepped example once, and the order of the steps."""
    unique, order = np.unique(np.asarray(pending, np.int64), return_inverse=True)
    return {"step_ids": held.ids[unique], "step_rows": take_rows(held.rows, unique), "step_y": held.y[unique],
            "step_order": order.astype(np.int64)}
