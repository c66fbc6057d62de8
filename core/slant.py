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

Batched, exactly, by speculation.  The driver holds values (h, c~ and the row) for the support vectors and
for every example a partition has reported; the partitions report, besides, the best violation among the
examples they did not (the "open" ones).  Each round the driver runs the one-step algorithm on what it
holds, as if nothing else existed, for up to ``SPECULATED_STEPS`` steps, and sends those steps; each
partition answers, for every state along them, its best open example per class (with its row and
response) and the runner-up, without applying them.  The steps stand up to the first one that some open
example beats (larger violation, exact ties to the smaller content key of the example, then id,
``PartitionData.keys``), or the stop that some open example above epsilon refutes; the next request
commits them, and each partition's best open examples at every state up to there become held (the ones
its steps pushed up: those that may be stepped on soon), the runner-ups bounding the rest.  So the first
step of every round stands, the step sequence is that of the one-step-at-a-time algorithm, and the same
for any row order and partitioning, while a round takes as many steps as the held examples predict.  (The
driver steps what it holds with kernel columns of its own, whose values are a partition's to the bit
(``KernelColumns``: a dense row's dot products the same chains of fused multiply-adds from the rows'
transpose as from ``kernel_block``'s tiles, a CSR row's summed in its entries' order).)
On ijcnn1 to 1,000 support vectors: 2,093 steps in 274 rounds (310 when the first round reported 64 examples
per class instead of ``_first_report``'s 1,024); with the bound of the steps the driver could prove alone (the
reported bound plus eta Kmax per step on the other class) that replaced it, 2,087.
Steps on support vectors in the aggressive variant need no check at all.

The whole path is recorded: ``metadata["steps"]`` lists the id of every step and the support vectors
are ordered by first appearance, so the model at any support size is a prefix (``slant_model_at``).
Validation rows on the engine are scored after every step by the rounds that speculate, so the
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

import numba
import numpy as np

from core.config import NJIT
from core.kernel_columns import KernelColumns
from core.model import KernelExpansion, derived_metadata
from core.partition.common import content_key, ranks_before, unique_inverse
from core.partition.slant import COLUMN_BYTES, NEG, POS, add_steps, slant_round, stepped_response
from core.progress import Progress
from core.rows import stack_rows, take_rows
from core.selection import check_selection, summed, validation_record
from core.threads import one_blas_thread
from core.validation import check_integer, check_positive

log = logging.getLogger("spark_bsvm")

@one_blas_thread
def fit_slant(engine, reference, *, eta=0.5, epsilon=0.5, max_support=None, max_steps=None, aggressive=False,
              candidates_per_class=None, select="end", tolerance=0.0):
    """Sparsify ``reference`` (a ``KernelExpansion`` trained on the same labels) on ``engine``'s data.

    ``eta``: step size; ``epsilon``: stop when f(w~) <= epsilon (the paper's analysis uses 1/2 for
    both); ``max_support``: stop before a step would add support vector ``max_support + 1``;
    ``max_steps``: at most this many steps (default: the convergence bound of the module doc, which
    then must exist); ``aggressive``: section 6.1's variant; ``candidates_per_class``: top violators
    each partition reports per class in the first round (and after a lost task), which the driver's
    speculation starts from (default: ``_first_report``, the examples the driver holds besides the
    support vectors shared by the partitions' classes).
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
    base = {"kernel": kernel.to_dict(), "eta": float(eta), "n_select": _first_report(engine, candidates_per_class)}
    reset = dict(base, reset=True, ref_rows=reference.support_vectors, ref_coef=reference.coef,
                 ref_bias=reference.bias, ref_key=content_key(kernel, reference.support_vectors, reference.coef),
                 ref_screen=reference.n_support <= SCREENED_SUPPORT * engine.n_examples)

    def rebuild():  # the partitions rebuilt from the driver's model: the steps that stood so far
        ids, rows, coef = path.model(eta)
        return dict(reset, sv_ids=ids, sv_rows=rows, sv_coef=coef)

    start = time.perf_counter()
    answers = engine.run(slant_round, rebuild(), rebuild=rebuild)
    rounds, stood, length, released, most = 1, None, 4, np.zeros(0, np.int64), _most_steps(engine)
    kmax = max(a["kmax"] for a in answers)
    limit = _step_limit(max_steps, sq_norm, eta, epsilon, kmax)
    held = _Held(answers, path, kernel)
    unstepped = summed(answers)  # the validation error and loss of the reference's bias alone
    validation = {"error": [], "loss": []}  # after each step
    progress = Progress("slant sparsifier", max_support, "support vectors") if max_support \
        else Progress("slant sparsifier", max_steps, "steps")
    while True:
        steps, claims, stop, responses = _speculate(held, path, eta, epsilon, aggressive, max_support, limit, length)
        if not steps:  # a stop at the state the last round made exact
            break
        request = dict(base, reset=False, commit=stood, release=released, **_step_request(held, steps, claims))
        answers = engine.run(slant_round, request, rebuild=rebuild)
        rounds += 1
        if "sv_ids" in answers[0]:  # a task was lost: the partitions were rebuilt from the driver's model
            held, stood, released = _Held(answers, path, kernel), None, np.zeros(0, np.int64)
            continue
        refuted = min(a["refuted"] for a in answers)
        stood = min(refuted, len(steps))
        length = _next_length(length, stood, len(steps), most)
        _commit(held, path, steps[:stood], responses[stood - 1] if stood else held.c, answers, eta)
        released = held.release(HELD_OTHERS)
        for key, values in zip(("error", "loss"), summed(answers)):
            validation[key].extend(np.atleast_1d(values)[:stood].tolist())
        log.info("slant round %d: %d of %d steps stood, support %d, %.1fs", rounds, stood, len(steps),
                 len(path.ids), time.perf_counter() - start)
        progress.update(len(path.ids) if max_support else len(path.steps), f"{len(path.ids)} support vectors")
        if refuted == len(claims) and stop:
            break
    meta = {"method": "slant_aggressive" if aggressive else "slant_basic",
            "params": {"eta": eta, "epsilon": epsilon, "max_support": max_support, "max_steps": max_steps,
                       "aggressive": aggressive, "candidates_per_class": candidates_per_class,
                       "kernel": kernel.to_dict(), "select": select, "tolerance": tolerance},
            "steps": [int(i) for i in path.steps], "eta": eta, "stopped": stop, "rounds": rounds,
            "objective": held.objective(), "step_limit": limit, "kmax": kmax, "n_train": engine.n_examples,
            "reference": {"method": reference.metadata.get("method"), "n_support": reference.n_support,
                          "sq_norm": sq_norm, "bias": reference.bias},
            "converged": stop == "objective"}
    if not meta["converged"]:
        _warn_cut(meta, path, reference, epsilon)
    ids, rows, coef = path.model(eta)
    model = KernelExpansion(rows, coef, reference.bias, kernel, list(reference.classes), engine.n_features,
                            meta, ids)
    if not engine.n_validation:
        return model
    if not model.n_support:  # no step taken (every violation was within epsilon): the path is its start alone
        meta["validation"] = validation_record([0], [unstepped[0]], [unstepped[1]], select, tolerance)
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
    examples: the last iterate of the path at that support size.  The model's calibration is not kept
    (``core.model.derived_metadata``).
    """
    (n_support,) = check_integer(0, n_support=n_support)
    positions = _step_positions(model)
    k = min(n_support, model.n_support)
    coef = slant_path_coef(model, [k])[0][:k]
    meta = derived_metadata(model.metadata, steps=model.metadata["steps"][:_prefix_length(positions, k)],
                            n_support_limit=n_support)
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
        if "pruned_to" in model.metadata:
            raise ValueError("a pruned model holds no slant path (pruning drops it): use the model fit_slant "
                             "returned")
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
    # equal values (1 and 1.0: a reference trained on int labels, data read as doubles) or equal texts
    if len(reference.classes) != len(classes) or any(a != b and str(a) != str(b)
                                                     for a, b in zip(reference.classes, classes)):
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
    optional = {"max_support": max_support, "max_steps": max_steps, "candidates_per_class": candidates_per_class}
    check_integer(1, **{name: value for name, value in optional.items() if value is not None})


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
    """What the driver holds values for: the support vectors and every example a partition reported, with
    their rows, h and responses c (violation v = h - c) at the state of the steps that stood; ``bound[slot]``
    and ``bound_rank[slot]`` are the best violation among the examples it does not hold, per class slot, and
    that example's (content key, id), by which exact ties go to the smaller.

    Built from a reset's full answer; then ``_commit`` steps it and adds what each speculation found.
    """

    def __init__(self, answers, path, kernel):
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
        rows = stack_rows([take_rows(path.rows(), at)] + [a["cand_rows"] for a in answers])
        values = np.stack([a["next_value"] for a in answers])
        ranks = [[(int(a["next_key"][slot]), int(a["next_id"][slot])) for a in answers] for slot in (NEG, POS)]
        self.bound = np.full(2, -np.inf)
        self.bound_rank = [_LAST] * 2
        for slot in (NEG, POS):
            for value, rank in zip(values[:, slot], ranks[slot]):
                self._raise_bound(slot, value, rank)
        self._columns = KernelColumns(rows, kernel, DRIVER_COLUMN_BYTES, min_columns=4 * SPECULATED_STEPS)

    @property
    def rows(self):
        """The rows held, in the order of ``ids``."""
        return self._columns.rows

    def _raise_bound(self, slot, value, rank):
        if value > self.bound[slot] or (value == self.bound[slot] and rank < self.bound_rank[slot]):
            self.bound[slot], self.bound_rank[slot] = value, rank

    def ranked(self, c, is_sv):
        """Positions of the largest violation h - c held, overall and among the entries ``is_sv`` (ties to the
        smaller (key, id); None where there is none)."""
        return _positions(_step_and_rank(c, self.y, self.h, self.keys, self.ids, self._columns.K, -1, 0.0, is_sv))

    def rank(self, k):
        """(content key, id) of held entry ``k``: the order of exact ties."""
        return int(self.keys[k]), int(self.ids[k])

    def step(self, c, k, eta, is_sv):
        """c += eta y_k y K(., x_k) on everything held (``add_steps``' arithmetic, as the partitions step), and
        ``ranked`` after it, in one pass."""
        row = self._column_row(k)
        return _positions(_step_and_rank(c, self.y, self.h, self.keys, self.ids, self._columns.K, row,
                                         eta * self.y[k], is_sv))

    def begin_round(self):
        """Columns used from now on are kept until the next call (``KernelColumns``)."""
        self._columns.begin_round()

    def _column_row(self, k):
        """The row of the column store holding K(held rows, x_k) (``KernelColumns``: computed once, completed as
        examples are added)."""
        return self._columns.column(int(self.ids[k]), lambda _: take_rows(self.rows, [k]))

    def add_open_best(self, answers, state, steps, eta):
        """Hold each partition's best open examples per class at the speculation's states up to ``state``
        (``steps``: the steps before it), each brought to ``state`` by the steps after the last state it was
        best at; the runner-ups at ``state`` become the bound."""
        self.bound, self.bound_rank = np.full(2, -np.inf), [_LAST] * 2
        rows, new, since = [], {"ids": [], "keys": [], "y": [], "h": [], "c": []}, []
        for a in answers:
            for slot in (NEG, POS):
                self._raise_bound(slot, a["runner_up_value"][state, slot],
                                  (int(a["runner_up_key"][state, slot]), int(a["runner_up_id"][state, slot])))
            t, slot = _last_best(a["best_ids"][:state + 1].tolist())
            for key, value in (("ids", a["best_ids"]), ("keys", a["best_keys"]), ("h", a["best_h"]),
                               ("c", a["best_c"])):
                new[key].append(value[t, slot])
            new["y"].append(2.0 * np.array(slot, np.float64) - 1.0)  # NEG, POS = 0, 1
            rows.append(take_rows(a["best_rows"], a["best_row"][t, slot]))
            since.extend(t)
        since = np.array(since, np.int64)
        if not since.size:
            return
        old = self.ids.size
        for key, dtype in (("ids", np.int64), ("keys", np.uint64), ("y", np.float64), ("h", np.float64),
                           ("c", np.float64)):
            setattr(self, key, np.concatenate([getattr(self, key)] + [np.asarray(v, dtype) for v in new[key]]))
        self.is_sv = np.concatenate([self.is_sv, np.zeros(since.size, bool)])
        self._columns.add_rows(stack_rows(rows))
        if state:  # examples best at an earlier state: the steps since
            at = [self._column_row(k) for k in steps]  # the store's rows once all are there (it may grow)
            add_steps(self.c[old:], self.y[old:], self._columns.K[at, old:self.ids.size], np.arange(state),
                      self.y[steps], eta, first=since)

    def release(self, most):
        """Once more than ``most`` of the examples held are not support vectors, stop holding those of least
        violation among them, down to half as many; their ids, which the partitions count as open again (the
        best violation held stays held, so it still beats every open example)."""
        others = np.flatnonzero(~self.is_sv)
        if others.size <= most:
            return np.zeros(0, np.int64)
        keep = np.ones(self.ids.size, bool)
        keep[others[np.argsort(self.c[others] - self.h[others], kind="stable")[most // 2:]]] = False
        released = self.ids[~keep]
        self.ids, self.keys, self.y, self.h, self.c, self.is_sv = (
            a[keep] for a in (self.ids, self.keys, self.y, self.h, self.c, self.is_sv))
        self._columns.keep_rows(keep)
        return released

    def objective(self):
        """max(best held violation, best unheld): f(w~), exact at the state of the steps that stood."""
        k, _ = self.ranked(self.c, self.is_sv)
        return float(max(self.bound.max(), -np.inf if k is None else self.h[k] - self.c[k]))


def _last_best(best_ids):
    """The (state, slot) pairs at which each example of ``best_ids`` (a list over the states of [NEG id, POS id],
    -1 for none) was last its class's best, as two lists: the slots in turn, the states from the last one down,
    which index a partition's answer for both slots at once (a partition's answer of 13 states gathered in 12.8
    against 16.1 us a slot at a time)."""
    states, slots = [], []
    for slot in (NEG, POS):
        seen = set()
        for t in range(len(best_ids) - 1, -1, -1):
            example = best_ids[t][slot]
            if example >= 0 and example not in seen:
                seen.add(example)
                states.append(t)
                slots.append(slot)
    return states, slots


def _positions(ranked):
    """``_step_and_rank``'s answer with None for -1."""
    return tuple(None if k < 0 else int(k) for k in ranked)


@numba.njit(**NJIT)
def _step_and_rank(c, y, h, keys, ids, K, row, scale, is_sv):
    """c[i] += (scale y[i]) K[row, i] (``stepped_response``; no step for row -1), then the positions of the
    largest h - c overall and among ``is_sv``, ties to the smaller (key, id) (``ranks_before``; -1 for none).

    The positions are those of a scan that keeps the first entry and takes each later one that ranks before it
    (``ranks_before``; a NaN never does, and a NaN first entry stays), found in two passes: the largest values
    (``_largest_violations``), then the entries that equal them, few, ranked.  A step over 4,500 entries (about
    what the driver holds on ijcnn1's path to 1,000 support vectors) took 7.3 against 20.2 us as the one scan."""
    if row >= 0:
        for i in range(c.shape[0]):
            c[i] = stepped_response(c[i], scale, y[i], K[row, i])
    top, top_sv = _largest_violations(h, c, is_sv)
    best, best_sv, first_sv = -1, -1, -1
    for i in range(c.shape[0]):
        v = h[i] - c[i]
        if v == top and (best < 0 or ranks_before(v, keys[i], ids[i], top, keys[best], ids[best])):
            best = i
        if is_sv[i]:
            if first_sv < 0:
                first_sv = i
            if v == top_sv and (best_sv < 0 or ranks_before(v, keys[i], ids[i], top_sv, keys[best_sv],
                                                           ids[best_sv])):
                best_sv = i
    if c.shape[0] and np.isnan(h[0] - c[0]):
        best = 0
    if first_sv >= 0 and np.isnan(h[first_sv] - c[first_sv]):
        best_sv = first_sv
    return best, best_sv


@numba.njit(**NJIT)
def _largest_violations(h, c, is_sv):
    """The largest h - c overall and among ``is_sv``, NaNs passed over (-inf for none), in four running maxima
    a pass (one chained maximum waits on the one before; the compiler does not vectorise these)."""
    n = c.shape[0]
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = -np.inf
    i = 0
    while i + 4 <= n:
        v0, v1, v2, v3 = h[i] - c[i], h[i + 1] - c[i + 1], h[i + 2] - c[i + 2], h[i + 3] - c[i + 3]
        a0, a1 = (v0 if v0 > a0 else a0), (v1 if v1 > a1 else a1)
        a2, a3 = (v2 if v2 > a2 else a2), (v3 if v3 > a3 else a3)
        b0 = v0 if is_sv[i] and v0 > b0 else b0
        b1 = v1 if is_sv[i + 1] and v1 > b1 else b1
        b2 = v2 if is_sv[i + 2] and v2 > b2 else b2
        b3 = v3 if is_sv[i + 3] and v3 > b3 else b3
        i += 4
    top, top_sv = max(max(a0, a1), max(a2, a3)), max(max(b0, b1), max(b2, b3))
    for i in range(i, n):
        v = h[i] - c[i]
        top = v if v > top else top
        top_sv = v if is_sv[i] and v > top_sv else top_sv
    return top, top_sv


_LAST = (2**64, 0)  # a (key, id) after every example's
_FIRST = (0, -1)  # a (key, id) before every example's: a claim (value, _FIRST) is beaten by larger values only
_UNBEATABLE = (np.inf, _FIRST)  # the claim of a step no open example can refute (the aggressive variant's steps
# on support vectors: the rule looks at those alone)
SPECULATED_STEPS = 32  # most steps the driver sends in one round
HELD_OTHERS = 4096  # most examples the driver holds besides the support vectors (``_Held.release``)
DRIVER_COLUMN_BYTES = 8 << 20  # the kernel columns the driver keeps (``_Held._column_row``)
# the partitions screen the reference's margins in float32 (``core.partition.slant.reference_margins``) when its
# support vectors, whose margins the float64 pass must give, are at most this share of the training rows
SCREENED_SUPPORT = 0.2


def _first_report(engine, candidates_per_class):
    """Examples per class each partition reports in the first round: ``candidates_per_class``, or by default
    the ``HELD_OTHERS`` examples the driver holds besides the support vectors shared by the partitions' two
    classes (at least 64).  To 1,000 support vectors on two partitions (1,024): ijcnn1 274 rounds against
    310 with 64, covtype-20k 362 against 442, fewer round trips on Spark; the CPU on ``LocalEngine`` the same
    within the noise (ijcnn1, alternating processes: 1.37-1.62 s against 1.40-1.52 s).  Holding more
    (2,048 per class, 8,192 held) made the driver's steps dearer: 1.45-1.57 s against 1.32-1.42 s."""
    if candidates_per_class is not None:
        return int(candidates_per_class)
    return max(64, HELD_OTHERS // (2 * engine.n_partitions))


def _next_length(length, stood, sent, most):
    """How many steps to speculate next, after ``stood`` of the ``sent`` last time stood: twice as many after a
    round whose steps all stood, else twice the steps that stood (at least 4), and at most ``most``."""
    return min(most, 2 * length) if stood == sent else min(most, max(4, 2 * stood))


def _most_steps(engine):
    """``SPECULATED_STEPS``, or fewer for large partitions: as many as their kept kernel columns hold (a
    speculation whose steps all stand computes a column per step; at least 4)."""
    rows = -(-engine.n_examples // engine.n_partitions)
    return int(min(SPECULATED_STEPS, max(4, COLUMN_BYTES // (8 * max(rows, 1)))))


def _speculate(held, path, eta, epsilon, aggressive, max_support, limit, length):
    """The steps the one-step-at-a-time algorithm takes if the examples held were all there were: up to
    ``length`` of them (positions in ``held``), each with its claim (violation, (key, id)) that an
    open example must beat to refute it, the stop reason after them (None: go on), and the responses of
    everything held after each step (``_commit`` takes those after the steps that stood).

    Nothing is changed: the steps are taken on a copy of the responses.  The first step, or a stop before
    it, is exact: the driver holds each partition's best open example of each class, and the bound is the
    best of the rest.  A stop for "max_support" or "max_steps" is exact wherever it comes: an open example
    that beat the step it replaces would not be a support vector either.
    """
    held.begin_round()
    c, is_sv = held.c.copy(), held.is_sv.copy()
    n_support, n_steps = len(path.ids), len(path.steps)
    steps, claims, responses = [], [], []
    best, best_sv = held.ranked(c, is_sv)
    while True:
        if n_steps + len(steps) >= limit:
            return steps, claims, "max_steps", responses
        if len(steps) == length:
            return steps, claims, None, responses
        k = best_sv if aggressive and best_sv is not None and held.h[best_sv] - c[best_sv] > epsilon else None
        claim = _UNBEATABLE
        if k is None:  # the basic rule, or no support vector violates: the overall most violating index
            k = best
            value = -np.inf if k is None else held.h[k] - c[k]
            if value <= epsilon:
                if steps:  # refuted by any open example above epsilon
                    claims.append((epsilon, _FIRST))
                return steps, claims, "objective", responses
            if not is_sv[k] and n_support == max_support:
                return steps, claims, "max_support", responses
            claim = (value, held.rank(k))
        n_support += not is_sv[k]
        is_sv[k] = True
        best, best_sv = held.step(c, k, eta, is_sv)
        responses.append(c.copy())
        steps.append(k)
        claims.append(claim)


def _commit(held, path, steps, responses, answers, eta):
    """Take ``steps`` (those that stood) on ``held`` and the path, ``responses`` those of everything held after
    them (``_speculate`` stepped them so), and hold the partitions' best open examples at the state after them
    (``_Held.add_open_best``)."""
    held.c = responses
    for k in steps:
        held.is_sv[k] = True
        path.add(int(held.ids[k]), float(held.y[k]), take_rows(held.rows, [k]))
    held.add_open_best(answers, len(steps), steps, eta)


def _step_request(held, steps, claims):
    """The steps for the partitions: each stepped example once, the order of the steps, and the claims."""
    unique, order = unique_inverse(np.asarray(steps, np.int64))
    return {"step_ids": held.ids[unique], "step_rows": take_rows(held.rows, unique), "step_y": held.y[unique],
            "step_order": order, "claim_value": np.array([value for value, _ in claims]),
            "claim_key": np.array([key for _, (key, _) in claims], np.uint64),
            "claim_id": np.array([i for _, (_, i) in claims], np.int64)}
