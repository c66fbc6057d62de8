"""A 512-bit vector of float lanes as one value inside njit code: LLVM's <8 x double> or <16 x float>, for
loops that numba's own vectoriser leaves in memory.

A matrix product's micro-kernel keeps its accumulators in registers across the sum over the features; numba
has no such values, and LLVM, given loops over arrays, vectorises the innermost one and loads and stores its
accumulators at every feature.  ``Lanes`` values are SSA values of the vector type, which LLVM keeps in
registers (a 512-bit one where the CPU has AVX-512, two 256-bit ones where it has AVX2): eight lanes of
float64, or sixteen of float32, the dtype of the array they come from.  The operations:

    lanes_load(a, start, count)       a[start:start + count] in lanes 0..count-1, zeros above
    lanes_store(a, start, count, v)   lanes 0..count-1 of v into a[start:start + count]
    lanes_width(like)                 the lanes of a vector (8 or 16), a compile-time constant
    lanes_splat(like, x)              x, rounded to the lanes' dtype, in every lane
    lanes_zeros(like)                 0 in every lane
    lanes_fma(x, z, acc)              x z + acc in each lane, rounded once (LLVM's llvm.fma)
    lanes_add_where(bits, i, z, acc)  z + acc in the lanes whose bit of the byte bits[i] is set (lane l: bit l),
                                      acc in the others (float64 lanes): lanes_fma(x, z, acc) for lanes x of
                                      0.0 and 1.0, to the bit, from one bit a lane instead of eight bytes
    a + b, a - b, a * b               lane by lane for two vectors of the same lanes, each rounded once, as
                                      numba's scalar operators round: a function written for floats (the
                                      slant path's ``stepped_response``) takes vectors and gives the same bits
    lanes_not_below(a, b)             the lanes where not a < b (a >= b, or either is NaN), as the bits of an
                                      int (lane l: bit l), for a loop to visit those lanes alone
    lanes_positive(a)                 the lanes where a > 0, as the bits of an int
    flags_set(flags, start, count)    the nonzero ones of the bools flags[start:start + count] (count <= 8), as
                                      the bits of an int: the float64 lanes' mask of a bool array

and, beside them, ``prefetch(a, start)``: a hint that a[start] will be read soon (LLVM's llvm.prefetch), which
changes no value.

``a`` is a 1-d C-contiguous float64 or float32 array, ``like`` such an array or a vector, whose dtype picks
the lanes; ``count`` is between 0 and the vector's lanes, and no bounds are checked (the callers' loops keep
within them).  Loads and stores of fewer lanes than a vector holds are masked, so the lanes past ``count``
touch no memory.
"""

import operator

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, models, overload, register_model


class Lanes(types.Type):
    """numba's type of a 512-bit vector of ``dtype`` lanes (types.float64: 8, types.float32: 16).  Keep its name:
    numba's cache index pickles the argument types of cached functions, and an index naming a type that no longer
    exists fails to load instead of counting as a miss (``bench/HISTORY.md``)."""

    def __init__(self, dtype):
        self.dtype, self.count = dtype, 512 // dtype.bitwidth
        super().__init__(name=f"Lanes({dtype}x{self.count})")


LANES = {dtype: Lanes(dtype) for dtype in (types.float64, types.float32)}


def _vector(lanes):
    """The LLVM vector type of ``lanes``."""
    return ir.VectorType(ir.DoubleType() if lanes.dtype == types.float64 else ir.FloatType(), lanes.count)


def _name(lanes):
    """LLVM's suffix for intrinsics over ``lanes``: v8f64, v16f32."""
    return f"v{lanes.count}f{lanes.dtype.bitwidth}"


@register_model(Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _vector(fe_type))


def _lanes_of(like):
    """The ``Lanes`` of an array's dtype, or of a vector; None for any other type."""
    if isinstance(like, Lanes):
        return like
    if isinstance(like, types.Array) and like.ndim == 1 and like.layout == "C":
        return LANES.get(like.dtype)
    return None


def _address(context, builder, array_type, array, start, lanes):
    """The address of ``array[start]`` as a pointer to a vector of ``lanes``."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [start]), _vector(lanes).as_pointer())


def _mask(builder, lanes, count):
    """Lanes 0..count-1 set."""
    index_type = ir.VectorType(ir.IntType(64), lanes.count)
    return builder.icmp_unsigned("<", ir.Constant(index_type, list(range(lanes.count))),
                                 _splat(builder, index_type, count))


def _splat(builder, vector_type, value):
    """``value`` in every lane of a vector of ``vector_type``."""
    one = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    count = vector_type.count
    return builder.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), count), [0] * count))


def _intrinsic_function(builder, name, return_type, argument_types):
    """The LLVM intrinsic ``name`` of that signature, declared in the module being built."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(return_type, argument_types), name)


@intrinsic
def lanes_load(typingctx, array, start, count):
    """Lanes 0..count-1 from ``array[start:start + count]``, zeros in the others (module doc)."""
    lanes = _lanes_of(array)
    if lanes is None or isinstance(array, Lanes):
        return None

    def codegen(context, builder, signature, args):
        vector = _vector(lanes)
        address = _address(context, builder, signature.args[0], args[0], args[1], lanes)
        load = _intrinsic_function(builder, f"llvm.masked.load.{_name(lanes)}.p0{_name(lanes)}", vector,
                                   [vector.as_pointer(), ir.IntType(32), ir.VectorType(ir.IntType(1), lanes.count),
                                    vector])
        return builder.call(load, [address, ir.Constant(ir.IntType(32), lanes.dtype.bitwidth // 8),
                                   _mask(builder, lanes, args[2]), ir.Constant(vector, [0.0] * lanes.count)])

    return lanes(array, types.intp, types.intp), codegen


@intrinsic
def lanes_store(typingctx, array, start, count, value):
    """Lanes 0..count-1 of ``value`` into ``array[start:start + count]`` (module doc)."""
    lanes = _lanes_of(array)
    if lanes is None or isinstance(array, Lanes) or value != lanes:
        return None

    def codegen(context, builder, signature, args):
        vector = _vector(lanes)
        address = _address(context, builder, signature.args[0], args[0], args[1], lanes)
        store = _intrinsic_function(builder, f"llvm.masked.store.{_name(lanes)}.p0{_name(lanes)}", ir.VoidType(),
                                    [vector, vector.as_pointer(), ir.IntType(32),
                                     ir.VectorType(ir.IntType(1), lanes.count)])
        builder.call(store, [args[3], address, ir.Constant(ir.IntType(32), lanes.dtype.bitwidth // 8),
                             _mask(builder, lanes, args[2])])
        return context.get_dummy_value()

    return types.void(array, types.intp, types.intp, lanes), codegen


def _constant(like, result_type, value):
    """Typing and codegen of an intrinsic of ``like`` alone whose result, of ``result_type(lanes)``, is the
    constant ``value(context, lanes)`` (``lanes``: ``like``'s ``Lanes``)."""
    lanes = _lanes_of(like)
    if lanes is None:
        return None

    def codegen(context, builder, signature, args):
        return value(context, lanes)

    return result_type(lanes)(like), codegen


@intrinsic
def lanes_width(typingctx, like):
    """The lanes of ``like``'s vectors: 8 for float64, 16 for float32."""
    return _constant(like, lambda lanes: types.intp,
                     lambda context, lanes: context.get_constant(types.intp, lanes.count))


@intrinsic
def lanes_splat(typingctx, like, x):
    """``x``, rounded to ``like``'s dtype, in every lane."""
    lanes = _lanes_of(like)
    if lanes is None or not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[1], signature.args[1], lanes.dtype)
        return _splat(builder, _vector(lanes), value)

    return lanes(like, x), codegen


@intrinsic
def lanes_zeros(typingctx, like):
    """0 in every lane of ``like``'s vectors."""
    return _constant(like, lambda lanes: lanes, lambda context, lanes: ir.Constant(_vector(lanes), [0.0] * lanes.count))


@intrinsic
def lanes_fma(typingctx, x, z, acc):
    """x z + acc in each lane, with one rounding."""
    if not (isinstance(x, Lanes) and x == z == acc):
        return None

    def codegen(context, builder, signature, args):
        vector = _vector(x)
        return builder.call(_intrinsic_function(builder, f"llvm.fma.{_name(x)}", vector, [vector] * 3), args)

    return x(x, x, x), codegen


@intrinsic
def lanes_add_where(typingctx, bits, index, z, acc):
    """z + acc in the lanes of acc whose bit of the byte ``bits[index]`` is set (lane l: bit l), acc in the
    others; float64 lanes.  For x of 0.0 and 1.0 this is ``lanes_fma(x, z, acc)``: 1 z + acc is z + acc
    rounded once, to the bit, and 0 z + acc is acc for a finite z (to the bit but for the sign of a zero acc:
    fma gives +0.0 for -0.0 + 0 z with z > 0, which a sum from +0.0 reaches only through products below
    float64's subnormals)."""
    if not (isinstance(bits, types.Array) and bits.dtype == types.uint8 and bits.ndim == 1
            and isinstance(index, types.Integer) and isinstance(acc, Lanes) and acc.count == 8 and z == acc):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        mask = builder.bitcast(builder.load(builder.gep(data, [args[1]])), ir.VectorType(ir.IntType(1), 8))
        return builder.select(mask, builder.fadd(args[3], args[2]), args[3])

    return acc(bits, index, z, acc), codegen


def _arithmetic(operator_, instruction):
    """``operator_`` (+, -, *) on two vectors of the same lanes: the LLVM instruction ``instruction`` (``fadd``,
    ``fsub``, ``fmul``) lane by lane, with no fast-math flags (IEEE rounding, as numba's scalar operators)."""

    @intrinsic
    def lanewise(typingctx, a, b):
        if not (isinstance(a, Lanes) and a == b):
            return None

        def codegen(context, builder, signature, args):
            return getattr(builder, instruction)(args[0], args[1])

        return a(a, b), codegen

    @overload(operator_)
    def vectors(a, b):
        if isinstance(a, Lanes) and a == b:
            return lambda a, b: lanewise(a, b)
        return None


for _operator, _instruction in ((operator.add, "fadd"), (operator.sub, "fsub"), (operator.mul, "fmul")):
    _arithmetic(_operator, _instruction)


def _lane_bits(builder, mask, count):
    """The i1 vector ``mask`` of ``count`` lanes as the low bits of an int64 (lane l: bit l)."""
    return builder.zext(builder.bitcast(mask, ir.IntType(count)), ir.IntType(64))


@intrinsic
def lanes_not_below(typingctx, a, b):
    """The lanes where not a < b (a >= b, or a or b NaN) as the bits of an int64, lane l at bit l."""
    if not (isinstance(a, Lanes) and a == b):
        return None

    def codegen(context, builder, signature, args):
        return _lane_bits(builder, builder.fcmp_unordered(">=", args[0], args[1]), a.count)

    return types.int64(a, b), codegen


@intrinsic
def lanes_positive(typingctx, a):
    """The lanes where a > 0 (not NaN) as the bits of an int64, lane l at bit l."""
    if not isinstance(a, Lanes):
        return None

    def codegen(context, builder, signature, args):
        zero = ir.Constant(_vector(a), [0.0] * a.count)
        return _lane_bits(builder, builder.fcmp_ordered(">", args[0], zero), a.count)

    return types.int64(a), codegen


@intrinsic
def flags_set(typingctx, flags, start, count):
    """The nonzero ones of ``flags[start:start + count]`` (a 1-d bool array, count <= 8) as the bits of an int64,
    flag start + l at bit l; the bytes past count are not read."""
    if not (isinstance(flags, types.Array) and flags.ndim == 1 and flags.dtype == types.boolean):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        vector = ir.VectorType(ir.IntType(8), 8)
        address = builder.bitcast(builder.gep(data, [args[1]]), vector.as_pointer())
        index_type = ir.VectorType(ir.IntType(64), 8)
        mask = builder.icmp_unsigned("<", ir.Constant(index_type, list(range(8))), _splat(builder, index_type, args[2]))
        load = _intrinsic_function(builder, "llvm.masked.load.v8i8.p0v8i8", vector,
                                   [vector.as_pointer(), ir.IntType(32), ir.VectorType(ir.IntType(1), 8), vector])
        loaded = builder.call(load, [address, ir.Constant(ir.IntType(32), 1), mask, ir.Constant(vector, [0] * 8)])
        return _lane_bits(builder, builder.icmp_unsigned("!=", loaded, ir.Constant(vector, [0] * 8)), 8)

    return types.int64(flags, types.intp, types.intp), codegen


@intrinsic
def prefetch(typingctx, array, start):
    """Ask the CPU to bring the cache line of ``array[start]`` into its caches ahead of a read (module doc); no
    bounds are checked, and an address past the array's end is harmless (a hint never faults)."""
    if not (isinstance(array, types.Array) and isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte = ir.IntType(8).as_pointer()
        word = ir.IntType(32)
        function = _intrinsic_function(builder, "llvm.prefetch.p0i8", ir.VoidType(), [byte, word, word, word])
        # a read (0), kept in every cache level (3), of data (1)
        builder.call(function, [builder.bitcast(builder.gep(data, [args[1]]), byte), ir.Constant(word, 0),
                                ir.Constant(word, 3), ir.Constant(word, 1)])
        return context.get_dummy_value()

    return types.none(array, start), codegen
