"""Elastic budget SVM (EBSVM): stochastic subgradient steps on the primal, a threshold theta holding
the number of support vectors at a budget B.

The paper (``../shared/papers/002_...``, sections 2-2.1) solves the primal
kernel SVM without bias (eq. 1), f(x) = sum_j a_j K(x, s_j),

    min_a  lambda/2 ||a||^2 + sum_i xi_i
    s.t.   y_i f(x_i) >= 1 - xi_i,   a_j = 0 unless |a_j| >= theta,

jointly with theta, adding the cost (B - f(theta))^2 where f(theta) =
||a||_0 is the number of support vectors (eq. 2).  Block coordinate descent
by stochastic subgradient steps; the paper's Algorithm 1 (missing from our
copy) written down from the text of section 2.1:

    S = {} (support vectors s_j with coefficients a_j), theta = 0, t = 0
    for each epoch, for each example (x_i, y_i, w_i) in a fresh random order:
        t = t + 1,  eta = 1 / (lambda t)                    (Pegasos' step)
        1. margin of the current model: m = y_i sum_{j in S} a_j K(x_i, s_j)
        2. alpha step: the subgradient of lambda/2 ||a||^2 + w_i hinge_i in
           a_j is lambda a_j - [m < 1] y_i w_i K(x_i, s_j), so
               a_j <- (1 - eta lambda) a_j + eta [m < 1] y_i w_i K(x_i, s_j)
           for every j in S; "if [the gradient of x_i's own coefficient] is
           non-zero", i.e. m < 1, x_i joins S with a_i = eta y_i w_i K(x_i, x_i)
        3. theta step, eq. 3:  theta <- max(0, theta - eta' (B - |S|))
        4. projection: among the violators {j in S : |a_j| < theta} remove
           only the one with the smallest |a_j| (the paper: removing more
           than one per sampled point is too harsh); on a tie, the oldest
    finally, while |S| > B, remove the smallest |a_j| (theta raised just
    enough that f(theta) <= B: the model always meets the budget)

Reading of eq. 1: its regulariser is ||a||^2 on the coefficients (not the
RKHS norm a^T K a), so in step 2 "the other coefficients are updated" by
their own subgradient, not only shrunk; each step needs only the kernel
values K(x_i, s_j) of the |S| (about B) support vectors.

Choices the text leaves open, and ours:
- eta' of eq. 3 "subsumes the slope b" of the linear surrogate f(theta) =
  b (a - theta).  We take eta'_t = eta_theta / (lambda t), theta's step in
  proportion to the coefficients' step (``eta_theta`` dimensionless; the
  default 1.0 was chosen on a validation split of ijcnn1's training file,
  where 0.05 to 30 all came within half a point of each other).
- The sampling: epochs of random permutations (each example once per
  epoch), each the order of seeded hashes of the examples' content
  (``core.partition.ebsvm``): the same visiting order, hence the same
  model, for any row order and partitioning of the same examples.
- The returned coefficients: with ``average_fraction`` = r > 0 the
  average of a_j over the last ceil(r T) of the T steps (suffix averaging,
  as analysed for SGD with step 1/(lambda t) by Rakhlin, Shamir and
  Sridharan, 2012), zero while j was not in S; r = 0 returns the last
  iterate.  The default r = 0.1 was chosen on validation splits of the
  training files (two epochs, B = 200, lambda = 1e-5, five sampling seeds):
  on ijcnn1 (gamma = 0.07) the mean validation error was 4.0% with r = 0.1,
  4.1% with r = 0.5 and 5.0% for the last iterate; on a8a (gamma = 0.05)
  16.3% (sd 0.2) against 17.3% (sd 2.0) with r = 0.5.  S keeps changing,
  and a long window averages in coefficients of support vectors that are no
  longer in S.
- Instance weights w_i scale the hinge term of example i.

Cost per step.  Pegasos' scale trick: after step t, a_j = beta_j / (lambda
t) with beta_j = sum of y_i w_i K(x_i, s_j) over the steps with m < 1 since
j joined, so the shrink (1 - eta lambda) of every coefficient is the
increment of t, O(1); a step costs |S| kernel values, plus an O(|S|) update
when m < 1.  The running sums for the average are added lazily, when the
betas change.  The driver holds the support vectors dense, as the columns
of a p x |S| array, and the rows served and not yet stepped on (at most
``batch_size`` per partition).  A step's dot products x_i . s_j add the
stored entries of x_i to all |S| sums in loops that vectorise, four entries
a pass (``core.kernels.add_entries_times_rows``; the same sums, in the same
order, as one s_j at a time): on 200,000 Forest-shaped rows (12 of 54
entries) with B = 500, the fit's steps took 0.71-0.89 s with one entry a
pass against 2.59-3.67 s with one s_j at a time, and 0.60-0.67 s four
entries a pass against 0.65-0.67 s one (``LocalEngine``, throw-away timings
in alternating processes).  CSR rows of many features (text, hashed features:
a million of them, tens stored a row) would make those columns gigabytes,
and clearing a column for the row stepped on a pass over every feature:
there the driver holds each s_j's stored entries (``_SupportBuffer``)
and sums x_i . s_j over them, x_i scattered into a vector of the features
(``core.kernels.add_scattered_dots``, as ``_pair_dots`` sums pairs of CSR
rows); both sums add the products of the features x_i and s_j share, in the
features' order (the others add x 0.0), so both stores give the same bits.
"""

import copy
import logging
import time

import numba
import numpy as np

from core.config import NJIT
from core.kernels import KernelSpec, add_entries_times_rows, add_scattered_dots, finish_tile
from core.model import KernelExpansion
from core.partition.ebsvm import ebsvm_batch, ebsvm_describe
from core.partition.validation import validate_expansion
from core.progress import Progress
from core.rows import as_rows, csr_from_arrays, is_sparse, squared_norms, stack_rows, take_rows, to_csr
from core.selection import check_selection, summed, validation_record
from core.threads import one_blas_thread
from core.validation import check_integer, check_positive

log = logging.getLogger("spark_bsvm")

# slots of the state arrays the numba loop updates in place
_T, _N_SV, _HITS, _REMOVED, _AVG_FROM = range(5)  # int64: step, |S|, margin hits, removals, first averaged step
_THETA, _H, _H_FLUSHED = range(3)  # float64: theta, sum of 1/s over averaged steps so far, that sum at the last flush
_BUFFER_ARRAYS = ("columns", "spans", "sq_norms", "beta", "acc", "ids", "born")
# dense values of the support vectors' columns, p x (B + 1), from which CSR rows are held by their entries
_SPARSE_SUPPORT_VALUES = 1 << 23


class _SupportBuffer:
    """The driver's support set S: the rows s_j, beta_j, the running sums of a_j, ids, the step that added each.

    The rows are held as the columns of a (p, capacity) array (a step's dot products read each feature of every
    s_j contiguously), or, ``by_entries``, by the stored entries of CSR rows: s_j's are ``data[a:b]`` at
    features ``indices[a:b]``, (a, b) = ``spans[:, j]``; entries of support vectors removed stay in that
    pool until it fills, and are then dropped (``_make_room``), and ``scattered`` holds the row stepped on as a
    vector of the features.  The other form's arrays have no rows, so that ``_remove_smallest`` and ``grow``
    move both alike."""

    def __init__(self, capacity, n_features, by_entries):
        self.n_features, self.by_entries = n_features, by_entries
        self.columns = np.zeros((0 if by_entries else n_features, capacity))
        self.spans = np.zeros((2 if by_entries else 0, capacity), np.int64)
        self.sq_norms = np.zeros(capacity)
        self.beta = np.zeros(capacity)
        self.acc = np.zeros(capacity)
        self.ids = np.zeros(capacity, np.int64)
        self.born = np.zeros(capacity, np.int64)
        pool = 16 * capacity if by_entries else 0
        self.data, self.indices = np.zeros(pool), np.zeros(pool, np.int32)
        self.end = np.zeros(1, np.int64)  # the pool's entries in use: data[:end[0]]
        self.scattered = np.zeros(n_features if by_entries else 0)

    def arrays(self):
        return tuple(getattr(self, name) for name in _BUFFER_ARRAYS)

    def grow(self, n):
        """Double the capacity, keeping the first ``n`` entries."""
        for name in _BUFFER_ARRAYS:
            old = getattr(self, name)
            new = np.zeros(old.shape[:-1] + (2 * old.shape[-1],), old.dtype)
            new[..., :n] = old[..., :n]
            setattr(self, name, new)

    def steps(self, csr, x_sq, y, weight, ids, counters, reals, *settings):
        """``_steps`` on every row of the CSR batch (its squared norms, labels, weights and ids; the learner's
        ``counters``, ``reals`` and ``settings``: lambda, B, eta_theta and the kernel's), the buffer grown
        whenever it fills, and its pool of entries given room."""
        done = 0
        while done < y.shape[0]:
            done = _steps(csr.data, csr.indices, csr.indptr, x_sq, y, weight, ids, done, *self.arrays(), self.data,
                          self.indices, self.end, self.scattered, counters, reals, *settings)
            if done == y.shape[0]:
                break
            if counters[_N_SV] == self.beta.shape[0]:
                self.grow(counters[_N_SV])
            else:
                self._make_room(counters[_N_SV], csr.indptr[done + 1] - csr.indptr[done])

    def _make_room(self, n, entries):
        """Room in the pool for a row of ``entries`` more: the entries of the ``n`` support vectors moved to its
        front, in a pool twice as large when that leaves less than half of it free."""
        lengths = self.spans[1, :n] - self.spans[0, :n]
        live = int(lengths.sum())
        size = self.data.size if 2 * (live + entries) <= self.data.size else 2 * (live + entries)
        at = _pool_places(self.spans[0, :n], lengths)
        data, indices = np.zeros(size), np.zeros(size, np.int32)
        data[:live], indices[:live] = self.data[at], self.indices[at]
        self.spans[1, :n] = np.cumsum(lengths)
        self.spans[0, :n] = self.spans[1, :n] - lengths
        self.data, self.indices, self.end[0] = data, indices, live

    def rows(self, order):
        """The rows of the support vectors ``order``: a CSR block when held by entries, else a dense one."""
        if not self.by_entries:
            return np.ascontiguousarray(self.columns[:, order].T)
        starts = self.spans[0, order]
        lengths = self.spans[1, order] - starts
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        at = _pool_places(starts, lengths)
        return as_rows(csr_from_arrays(self.data[at], self.indices[at], indptr, (order.size, self.n_features)))


def _pool_places(starts, lengths):
    """The places in the pool of the entries starts[j]..starts[j] + lengths[j] - 1, one span after the other."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1] if ends.size else 0)


class EBSVMLearner:
    """The sequential part of EBSVM: one step per example, in the order the examples are given.

    ``total_steps``: how many steps the fit will make (the average covers
    the last ``average_fraction`` of them).  Feed rows with ``steps``, then take ``model``.
    """

    def __init__(self, n_features, *, budget, lam, kernel, eta_theta=1.0, average_fraction=0.1, total_steps):
        self.budget, self.lam, self.kernel, self.eta_theta = budget, lam, kernel, eta_theta
        self.n_averaged = int(np.ceil(average_fraction * total_steps))
        self.n_features = n_features
        self.buffer = None  # a store of S for the rows' kind, at the first steps (``_buffer_for``)
        self.counters = np.array([0, 0, 0, 0, total_steps - self.n_averaged + 1], np.int64)
        self.reals = np.zeros(3)
        self.sparse_input = False

    def steps(self, rows, y, weight, ids):
        """One step per row (dense or CSR block) with labels +-1, weights and unique ids, in order."""
        rows = as_rows(rows, n_features=self.n_features)
        self.sparse_input = self.sparse_input or is_sparse(rows)
        if self.buffer is None:
            self.buffer = self._buffer_for(rows)
        x_sq = squared_norms(rows)
        kernel = (self.kernel.code, self.kernel.gamma, self.kernel.coef0, self.kernel.degree)
        y, weight, ids = (np.ascontiguousarray(v, dtype) for v, dtype in
                          ((y, np.float64), (weight, np.float64), (ids, np.int64)))
        self.buffer.steps(to_csr(rows), x_sq, y, weight, ids, self.counters, self.reals, self.lam, self.budget,
                          self.eta_theta, *kernel)

    def _buffer_for(self, rows):
        """An empty store of S, of B + 1 support vectors: by their stored entries for CSR rows whose dense columns
        would hold at least ``_SPARSE_SUPPORT_VALUES`` values, else as dense columns."""
        capacity = self.budget + 1
        wide = is_sparse(rows) and self.n_features * capacity >= _SPARSE_SUPPORT_VALUES
        return _SupportBuffer(capacity, self.n_features, by_entries=wide)

    def progress(self):
        """(steps, |S|, theta, margin hits, removals) so far."""
        c = self.counters
        return int(c[_T]), int(c[_N_SV]), float(self.reals[_THETA]), int(c[_HITS]), int(c[_REMOVED])

    def model(self, classes, metadata):
        """The kernel expansion sum_j a_j K(s_j, x) after the final projection to at most B support vectors.

        a is the average or the last iterate (see the module doc); support
        vectors are sorted by id; ``metadata`` is extended with the run's record.
        """
        if self.buffer is None:
            self.buffer = _SupportBuffer(self.budget + 1, self.n_features, by_entries=False)
        buffer, counters = self.buffer, self.counters
        while counters[_N_SV] > self.budget:  # the final projection onto f(theta) <= B
            _remove_smallest(*buffer.arrays(), counters, np.inf)
        _flush_averages(buffer.beta, buffer.acc, counters, self.reals, self.lam)
        n, steps = int(counters[_N_SV]), int(counters[_T])
        order = np.argsort(buffer.ids[:n], kind="stable")
        rows = buffer.rows(order)
        if self.sparse_input:
            rows = to_csr(rows)
        if self.n_averaged > 0:
            coef = buffer.acc[:n][order] / max(1, steps - counters[_AVG_FROM] + 1)
        else:
            coef = buffer.beta[:n][order] / (self.lam * max(1, steps))
        steps, _, theta, hits, removed = self.progress()
        meta = dict(metadata, steps=steps, theta=theta, margin_hits=hits, removals=removed)
        return KernelExpansion(rows, coef, 0.0, self.kernel, list(classes), self.n_features, meta,
                               buffer.ids[:n][order])


@one_blas_thread
def fit_ebsvm(engine, *, budget, lam, kernel, epochs=1, batch_size=1024, eta_theta=1.0, average_fraction=0.1,
              seed=0, checkpoints=None, select="end", tolerance=0.0):
    """Train the elastic budget SVM on ``engine``; the model has at most ``budget`` support vectors.

    ``lam``: lambda of eq. 1 (the coefficients' step is 1 / (lambda t));
    ``epochs``: passes over the data, each in a new random order;
    ``batch_size``: rows stepped on per round (the steps stay one example
    at a time; the driver holds up to this many rows of each partition);
    ``eta_theta``: theta's step in eq. 3 relative to the coefficients' step
    (see the module doc);
    ``average_fraction``: return the coefficients averaged over this
    fraction of the steps, the last ones (0: the last iterate; see the
    module doc); ``seed``: the sampling seed (same seed, same model, on
    any engine, row order and partitioning).

    With validation rows on the engine, the fit takes ``checkpoints``
    (default: one per epoch) evenly spaced over its steps, at the end of a
    batch: the model it would return had it ended there (the average so
    far, or the last iterate before the averaging window, with the final
    projection to B applied to a copy), scored on the
    validation rows in one round each and recorded in
    ``metadata["validation"]`` (support size, steps, error, hinge loss).
    ``select``, ``tolerance`` choose the checkpoint returned
    (``core.selection``: the earliest of equal errors; the last checkpoint is
    the end of the fit).
    """
    budget, epochs, batch_size, seed = _check_args(budget, lam, kernel, epochs, batch_size, eta_theta,
                                                   average_fraction, seed)
    kernel = kernel.for_data(engine)
    check_selection(select, tolerance, engine.n_validation)
    if checkpoints is not None:
        check_integer(1, checkpoints=checkpoints)
    described = engine.run(ebsvm_describe, {})
    sizes = np.array([a["n"] for a in described], np.int64)
    keys = np.array([a["key"] for a in described], np.int64)
    total = epochs * int(sizes.sum())
    learner = EBSVMLearner(engine.n_features, budget=budget, lam=lam, kernel=kernel, eta_theta=eta_theta,
                           average_fraction=average_fraction, total_steps=total)
    params = {"budget": budget, "lam": lam, "kernel": kernel.to_dict(), "epochs": epochs, "batch_size": batch_size,
              "eta_theta": eta_theta, "average_fraction": average_fraction, "seed": seed, "checkpoints": checkpoints,
              "select": select, "tolerance": tolerance}
    meta = {"method": "ebsvm", "params": params, "n_train": engine.n_examples}
    marks = np.ceil(np.arange(1, (checkpoints or epochs) + 1) * total / (checkpoints or epochs))
    taken = []  # (steps, model, validation error, validation loss) at each checkpoint
    start = time.perf_counter()
    progress = Progress("elastic budget SVM", epochs * int(sizes.sum()), "steps")
    for epoch in range(epochs):
        for batch in _epoch_batches(engine, seed, epoch, sizes, keys, batch_size):
            learner.steps(*batch)
            steps, support, theta = learner.progress()[:3]
            if engine.n_validation and marks.size and steps >= marks[0]:
                taken.append(_checkpoint(engine, learner, meta))
                marks = marks[marks > steps]  # a batch that passed several marks makes one checkpoint
            progress.update(steps, f"epoch {epoch + 1} of {epochs}, support {support}, theta {theta:.3g}")
        log.info("ebsvm epoch %d: %d steps, support %d, theta %.3g, %d margin hits, %d removals, %.1fs",
                 epoch + 1, *learner.progress(), time.perf_counter() - start)
    if not taken:
        return learner.model(engine.classes, meta)
    steps, models, errors, losses = zip(*taken)
    record = validation_record([m.n_support for m in models], errors, losses, select, tolerance, steps=steps)
    kept = models[record["kept_index"]]
    kept.metadata["validation"] = record
    return kept


def _epoch_batches(engine, seed, epoch, sizes, keys, batch_size):
    """The (rows, y, weight, ids) of epoch ``epoch`` in batches of ``batch_size`` rows (the last one smaller), in
    the epoch's order of the whole training set: by the draw keys of ``core.partition.ebsvm``, then by id.

    ``sizes`` and ``keys``: the partitions' rows and keys (``ebsvm_describe``).  Each partition serves its
    rows in that order; the driver holds the rows served and not yet stepped on, and asks each partition for
    enough more that it holds ``batch_size`` of the partition's rows (or all the partition has left): then the
    next ``batch_size`` rows of the merged order are all held, whatever the partitioning.
    """
    served = np.zeros_like(sizes)
    held = None  # the rows served and not yet stepped on: {"rows", "y", "weight", "ids", "order_keys", "part"}
    left = int(sizes.sum())
    while left:
        per_part = np.zeros_like(sizes) if held is None else np.bincount(held["part"], minlength=sizes.size)
        counts = np.minimum(batch_size - per_part, sizes - served)
        request = {"seed": seed, "epoch": epoch, "keys": keys, "offsets": served, "counts": counts}
        answers = engine.run(ebsvm_batch, request, rebuild=lambda request=request: request)
        served = served + counts
        parts = [dict(a, part=np.full(len(a["ids"]), k)) for k, a in enumerate(answers)]
        parts = parts if held is None else [held] + parts
        merged = {k: np.concatenate([p[k] for p in parts]) for k in ("y", "weight", "ids", "order_keys", "part")}
        merged["rows"] = stack_rows([p["rows"] for p in parts])
        order = np.lexsort((merged["ids"], merged["order_keys"]))
        now, later = order[:min(batch_size, left)], order[min(batch_size, left):]
        yield take_rows(merged["rows"], now), merged["y"][now], merged["weight"][now], merged["ids"][now]
        held = {k: take_rows(v, later) if k == "rows" else v[later] for k, v in merged.items()}
        left -= now.size


def _checkpoint(engine, learner, metadata):
    """(steps, model, validation error, validation loss) of the model ``learner`` would return now: the
    last iterate while the averaging window has not begun."""
    now = copy.deepcopy(learner)
    if now.counters[_T] < now.counters[_AVG_FROM]:
        now.n_averaged = 0
    model = now.model(engine.classes, metadata)
    request = {"kernel": model.kernel.to_dict(), "rows": model.support_vectors, "coef": model.coef,
               "bias": model.bias}
    answers = engine.run(validate_expansion, request, rebuild=lambda: request)
    return (learner.progress()[0], model) + summed(answers)


def _check_args(budget, lam, kernel, epochs, batch_size, eta_theta, average_fraction, seed):
    """The integer arguments as ints; a ValueError naming any bad one."""
    if not isinstance(kernel, KernelSpec):
        raise ValueError(f"kernel must be a KernelSpec, got {type(kernel).__name__}")
    if not 0.0 <= average_fraction <= 1.0:
        raise ValueError(f"average_fraction must be in [0, 1] (0: the last iterate), got {average_fraction!r}")
    check_positive(lam=lam, eta_theta=eta_theta)
    return check_integer(1, budget=budget, epochs=epochs, batch_size=batch_size) + check_integer(0, seed=seed)


# One EBSVM step per example (the algorithm of the module doc), with a_j = beta_j / (lambda t):
#   k_j = K(x_i, s_j) for j in S, and k_i = K(x_i, x_i) (x_i sits in the buffer's next free slot); the dot
#   products x_i . s_j summed in the order of x_i's entries, four of them a pass over every s_j's sum (dense
#   columns), or in the order of s_j's entries (a store by entries): the same products in the same order
#   m = y_i sum_j beta_j k_j / (lambda (t - 1))                      (0 at t = 1: S is empty)
#   if m < 1: beta_j += y_i w_i k_j for j in S and for x_i (which joins S when absent)
#   theta <- max(0, theta - eta_theta / (lambda t) (B - |S|))        eq. 3
#   remove argmin {|beta_j| : |beta_j| / (lambda t) < theta}          the smallest violator (oldest on ties)
# Averages: acc_j = sum over averaged steps s of a_j(s) = beta_j / lambda * sum 1/s between changes of beta_j,
# added lazily (all of S at once) just before the betas change.
@numba.njit(**NJIT)
def _steps(data, indices, indptr, x_sq, y, weight, ids, first, sv_columns, spans, sv_sq, beta, acc, sv_ids, born,
           sv_data, sv_indices, end, scattered, counters, reals, lam, budget, eta_theta, code, gamma, coef0, degree):
    """Steps on rows first.. of a CSR batch, S as ``_SupportBuffer`` holds it (by entries when ``spans`` has
    rows: x_i's entries go to the pool's free end, where they stay when x_i joins S); returns the row it
    stopped at (all rows, or the buffer or its pool of entries is full)."""
    capacity = beta.shape[0]
    by_entries = spans.shape[0] > 0
    k = np.empty(capacity)
    for i in range(first, y.shape[0]):
        n, t = counters[_N_SV], counters[_T] + 1
        lo, hi = indptr[i], indptr[i + 1]
        if n == capacity or (by_entries and end[0] + hi - lo > sv_data.shape[0]):
            return i  # the caller makes room and calls again from this row
        for j in range(n + 1):
            k[j] = 0.0
        if by_entries:
            spans[0, n], spans[1, n] = end[0], end[0] + hi - lo
            for q in range(lo, hi):
                sv_data[end[0] + q - lo], sv_indices[end[0] + q - lo] = data[q], indices[q]
            # the products of the features x_i and s_j share, in the features' order
            add_scattered_dots(k[:n + 1], data, indices, lo, hi, sv_data, sv_indices, spans[0], spans[1], scattered)
        else:
            for feature in range(sv_columns.shape[0]):
                sv_columns[feature, n] = 0.0
            for q in range(lo, hi):
                sv_columns[indices[q], n] = data[q]
            # the sums of ``core.kernels._csr_dots``, into k itself (its new tile per call, on a strided view of
            # the buffer, made the steps 1.3x longer)
            add_entries_times_rows(k[:n + 1], data, indices, lo, hi, sv_columns)
        sv_sq[n] = x_sq[i]
        own, f = n, 0.0
        finish_tile(code, k[:n + 1].reshape((1, n + 1)), x_sq[i:i + 1], sv_sq[:n + 1], gamma, coef0, degree)
        for j in range(n):
            f += beta[j] * k[j]
            if sv_ids[j] == ids[i]:
                own = j
        margin = y[i] * f / (lam * (t - 1)) if n > 0 else 0.0
        if margin < 1.0:
            _flush_averages(beta, acc, counters, reals, lam)
            step = y[i] * weight[i]
            for j in range(n):
                beta[j] += step * k[j]
            if own == n:  # x_i joins S with the coefficient of its own gradient
                beta[n], acc[n], sv_ids[n], born[n] = step * k[n], 0.0, ids[i], t
                counters[_N_SV] = n + 1
                if by_entries:
                    end[0] += hi - lo
            counters[_HITS] += 1
        counters[_T] = t
        reals[_THETA] = max(0.0, reals[_THETA] - eta_theta / (lam * t) * (budget - counters[_N_SV]))
        _remove_smallest(sv_columns, spans, sv_sq, beta, acc, sv_ids, born, counters, reals[_THETA] * lam * t)
        if t >= counters[_AVG_FROM]:
            reals[_H] += 1.0 / t
    return y.shape[0]


@numba.njit(**NJIT)
def _flush_averages(beta, acc, counters, reals, lam):
    """Add to every acc_j the a_j(s) = beta_j / (lambda s) of the averaged steps since the last flush."""
    pending = reals[_H] - reals[_H_FLUSHED]
    if pending > 0.0:
        for j in range(counters[_N_SV]):
            acc[j] += beta[j] / lam * pending
    reals[_H_FLUSHED] = reals[_H]


@numba.njit(**NJIT)
def _remove_smallest(sv_columns, spans, sv_sq, beta, acc, sv_ids, born, counters, limit):
    """Remove the support vector of smallest |beta| below ``limit`` (the oldest on ties), if any."""
    n = counters[_N_SV]
    best = -1
    for j in range(n):
        b = abs(beta[j])
        if b < limit and (best < 0 or b < abs(beta[best]) or (b == abs(beta[best]) and born[j] < born[best])):
            best = j
    if best < 0:
        return
    last = n - 1
    for feature in range(sv_columns.shape[0]):  # a loop, not a slice assignment (``core.config``)
        sv_columns[feature, best] = sv_columns[feature, last]
    for r in range(spans.shape[0]):
        spans[r, best] = spans[r, last]
    sv_sq[best], beta[best], acc[best] = sv_sq[last], beta[last], acc[last]
    sv_ids[best], born[best] = sv_ids[last], born[last]
    counters[_N_SV] = last
    counters[_REMOVED] += 1
