"""Eight float64 lanes as one value inside njit code: LLVM's <8 x double>, for loops that numba's own
vectoriser leaves in memory.

A matrix product's micro-kernel keeps its accumulators in registers across the sum over the features; numba
has no such values, and LLVM, given loops over arrays, vectorises the innermost one and loads and stores its
accumulators at every feature.  ``Lanes8`` values are SSA values of the vector type, which LLVM keeps in
registers (a 512-bit one where the CPU has AVX-512, two 256-bit ones where it has AVX2).  The operations:

    lanes_load(a, start, count)       a[start:start + count] in lanes 0..count-1 (count <= 8), zeros above
    lanes_store(a, start, count, v)   lanes 0..count-1 of v into a[start:start + count]
    lanes_splat(x)                    x in every lane
    lanes_zeros()                     0.0 in every lane
    lanes_fma(x, z, acc)              x z + acc in each lane, rounded once (LLVM's llvm.fma)

``a`` is a 1-d C-contiguous float64 array; no bounds are checked (the callers' loops keep within them).  Loads
and stores of fewer than 8 lanes are masked, so the lanes past ``count`` touch no memory.
"""

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, models, register_model

_VECTOR = ir.VectorType(ir.DoubleType(), 8)
_MASK = ir.VectorType(ir.IntType(1), 8)
_LANE_INDEX = ir.Constant(ir.VectorType(ir.IntType(64), 8), list(range(8)))


class Lanes8(types.Type):
    """numba's type of eight float64 lanes."""

    def __init__(self):
        super().__init__(name="Lanes8")


lanes8 = Lanes8()


@register_model(Lanes8)
class _Lanes8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _address(context, builder, array_type, array, start):
    """The address of ``array[start]`` as a pointer to eight lanes."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [start]), _VECTOR.as_pointer())


def _mask(builder, count):
    """Lanes 0..count-1 set."""
    return builder.icmp_unsigned("<", _LANE_INDEX, _splat(builder, _LANE_INDEX.type, count))


def _splat(builder, vector_type, value):
    """``value`` in every lane of a vector of ``vector_type``."""
    one = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))


def _intrinsic_function(builder, name, return_type, argument_types):
    """The LLVM intrinsic ``name`` of that signature, declared in the module being built."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(return_type, argument_types), name)


def _flat_float64(array):
    """Whether numba's type ``array`` is a 1-d C-contiguous float64 array, which the loads and stores take."""
    return isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.float64 and \
        array.layout == "C"


@intrinsic
def lanes_load(typingctx, array, start, count):
    """Lanes 0..count-1 from ``array[start:start + count]``, zeros in the others (module doc)."""
    if not _flat_float64(array):
        return None

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        load = _intrinsic_function(builder, "llvm.masked.load.v8f64.p0v8f64", _VECTOR,
                                   [_VECTOR.as_pointer(), ir.IntType(32), _MASK, _VECTOR])
        return builder.call(load, [address, ir.Constant(ir.IntType(32), 8), _mask(builder, args[2]),
                                   ir.Constant(_VECTOR, [0.0] * 8)])

    return lanes8(array, types.intp, types.intp), codegen


@intrinsic
def lanes_store(typingctx, array, start, count, value):
    """Lanes 0..count-1 of ``value`` into ``array[start:start + count]`` (module doc)."""
    if not _flat_float64(array) or value != lanes8:
        return None

    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        store = _intrinsic_function(builder, "llvm.masked.store.v8f64.p0v8f64", ir.VoidType(),
                                    [_VECTOR, _VECTOR.as_pointer(), ir.IntType(32), _MASK])
        builder.call(store, [args[3], address, ir.Constant(ir.IntType(32), 8), _mask(builder, args[2])])
        return context.get_dummy_value()

    return types.void(array, types.intp, types.intp, lanes8), codegen


@intrinsic
def lanes_splat(typingctx, x):
    """``x`` in every lane."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return _splat(builder, _VECTOR, args[0])

    return lanes8(types.float64), codegen


@intrinsic
def lanes_zeros(typingctx):
    """0.0 in every lane."""

    def codegen(context, builder, signature, args):
        return ir.Constant(_VECTOR, [0.0] * 8)

    return lanes8(), codegen


@intrinsic
def lanes_fma(typingctx, x, z, acc):
    """x z + acc in each lane, with one rounding."""
    if not x == z == acc == lanes8:
        return None

    def codegen(context, builder, signature, args):
        return builder.call(_intrinsic_function(builder, "llvm.fma.v8f64", _VECTOR, [_VECTOR] * 3), args)

    return lanes8(lanes8, lanes8, lanes8), codegen

