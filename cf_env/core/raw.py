"""Arrays without reference counting, for the compiled core, through numba's public extension API.

`raw(x)` turns a numba array (or a tuple / NamedTuple of arrays, such as `KernelState`) into
`RawArray` values: a data pointer, the shape (and the strides, unless contiguous), and no owner. numba counts
references only of values whose data model holds an owner, so passing a `RawArray`, or a state
tuple of them, to a compiled helper costs no incref/decref pair per array, which with plain
arrays cost many times the rules' own work (docs/speed/kernel.md). The caller keeps the arrays
alive: the entry points of the core take plain arrays, and `raw` their arguments once at the top.

A `RawArray` supports what the core does with its arrays: integer indexing (one index per
dimension reads or writes an element; fewer give a view of lower rank), negative indices
counted from the end as numpy does, `shape`, `ndim`, `size` and `len`. Out-of-bounds indices
raise IndexError where numba's bounds checking is on (`NUMBA_BOUNDSCHECK=1`), as array
indexing does. As plain Python (`NUMBA_DISABLE_JIT=1`) `raw` returns its argument.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import (
    intrinsic,
    make_attribute_wrapper,
    models,
    overload,
    overload_attribute,
    register_model,
)


class RawArray(types.Type):
    """The numba type of an unowned, strided view: `RawArray(dtype, ndim, layout)`, layout "C"
    (contiguous, row-major: addresses follow from the shape, as numba's own arrays compute them,
    which lets LLVM see unit strides) or "A" (any strides)."""

    def __init__(self, dtype: types.Type, ndim: int, layout: str):
        self.dtype, self.ndim, self.layout = dtype, ndim, layout
        super().__init__(name=f"RawArray({dtype}, {ndim}d, {layout})")

    @property
    def key(self):
        return self.dtype, self.ndim, self.layout


@register_model(RawArray)
class _RawArrayModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [
            ("data", types.CPointer(fe_type.dtype)),
            ("shape", types.UniTuple(types.intp, fe_type.ndim)),
        ]
        if fe_type.layout != "C":  # a contiguous view's addresses follow from its shape
            members.append(("strides", types.UniTuple(types.intp, fe_type.ndim)))  # bytes
        super().__init__(dmm, fe_type, members)


make_attribute_wrapper(RawArray, "shape", "shape")


def raw(x):
    """`x` as RawArray values (arrays, and arrays in a tuple or NamedTuple; other members as
    they are). As plain Python, `x` itself."""
    return x


def _raw_type(ty):
    if isinstance(ty, types.Array):
        return RawArray(ty.dtype, ty.ndim, "C" if ty.layout == "C" else "A")
    if isinstance(ty, types.BaseNamedTuple):
        return types.NamedTuple([_raw_type(t) for t in ty], ty.instance_class)
    if isinstance(ty, types.BaseTuple):
        return types.Tuple([_raw_type(t) for t in ty])
    return ty


def _raw_value(context, builder, ty, value):
    if isinstance(ty, types.Array):
        array = context.make_array(ty)(context, builder, value)
        out_type = _raw_type(ty)
        out = cgutils.create_struct_proxy(out_type)(context, builder)
        out.data = array.data
        out.shape = array.shape
        if out_type.layout != "C":
            out.strides = array.strides
        return out._getvalue()
    if isinstance(ty, types.BaseTuple):
        members = [_raw_value(context, builder, t, builder.extract_value(value, k))
                   for k, t in enumerate(ty)]
        return context.make_tuple(builder, _raw_type(ty), members)
    return value


@intrinsic
def _raw(typingctx, x):
    def codegen(context, builder, sig, args):
        return _raw_value(context, builder, sig.args[0], args[0])

    return _raw_type(x)(x), codegen


@overload(raw)
def _raw_overload(x):
    return lambda x: _raw(x)


def _shape_values(context, builder, shape_type, shape):
    return [context.cast(builder, v, t, types.intp)
            for v, t in zip(cgutils.unpack_tuple(builder, shape), shape_type)]


def view(buffer, word, dtype, shape):
    """The contiguous `shape` array of `dtype` that starts at word `word` of a 1-D int64
    buffer (compiled: of a RawArray, as a RawArray)."""
    size = math.prod(shape)
    words = (size * np.dtype(dtype).itemsize + 7) // 8
    return buffer[word : word + words].view(dtype)[:size].reshape(shape)


def reshape(a, shape):
    """A contiguous array `a` seen with another shape of the same size (compiled: a RawArray,
    unchecked)."""
    return a.reshape(shape)


@overload(view)
def _view_overload(buffer, word, dtype, shape):
    return lambda buffer, word, dtype, shape: _view(buffer, word, dtype, shape)


@overload(reshape)
def _reshape_overload(a, shape):
    return lambda a, shape: _reshape(a, shape)


@intrinsic
def _view(typingctx, buffer, word, dtype, shape):
    if not (isinstance(buffer, RawArray) and buffer.ndim == 1 and buffer.dtype == types.int64
            and isinstance(word, types.Integer) and isinstance(dtype, types.NumberClass)
            and isinstance(shape, types.BaseTuple)
            and all(isinstance(t, types.Integer) for t in shape)):
        return None
    out_type = RawArray(dtype.dtype, len(shape), "C")

    def codegen(context, builder, sig, args):
        source = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        start = context.cast(builder, args[1], sig.args[1], types.intp)
        pointer = builder.gep(source.data, [start])
        extents = _shape_values(context, builder, sig.args[3], args[3])
        out = cgutils.create_struct_proxy(out_type)(context, builder)
        out.data = builder.bitcast(pointer, context.get_data_type(out_type.dtype).as_pointer())
        out.shape = cgutils.pack_array(builder, extents)
        return out._getvalue()

    return out_type(buffer, word, dtype, shape), codegen


@intrinsic
def _reshape(typingctx, a, shape):
    if not (isinstance(a, RawArray) and a.layout == "C" and isinstance(shape, types.BaseTuple)
            and all(isinstance(t, types.Integer) for t in shape)):
        return None
    out_type = RawArray(a.dtype, len(shape), "C")

    def codegen(context, builder, sig, args):
        source = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        extents = _shape_values(context, builder, sig.args[1], args[1])
        out = cgutils.create_struct_proxy(out_type)(context, builder)
        out.data = source.data
        out.shape = cgutils.pack_array(builder, extents)
        return out._getvalue()

    return out_type(a, shape), codegen


def _element_pointer(context, builder, aty, value, index_types, indices):
    """The address of value[indices] (len(indices) <= ndim), counting negative indices from the
    end and checking bounds where numba's bounds checking is on."""
    view = cgutils.create_struct_proxy(aty)(context, builder, value=value)
    shape = cgutils.unpack_tuple(builder, view.shape)
    strides = cgutils.unpack_tuple(builder, view.strides) if aty.layout != "C" else None
    zero = context.get_constant(types.intp, 0)
    checked = []
    for axis, (ity, index) in enumerate(zip(index_types, indices)):
        index = context.cast(builder, index, ity, types.intp)
        if ity.signed:
            negative = builder.icmp_signed("<", index, zero)
            index = builder.select(negative, builder.add(index, shape[axis]), index)
        if context.enable_boundscheck:
            cgutils.do_boundscheck(context, builder, index, shape[axis], axis)
        checked.append(index)
    if aty.layout == "C":  # element offset ((i0 * s1 + i1) * s2 + ...), the rest of the axes 0
        offset = zero
        for axis in range(aty.ndim):
            offset = builder.mul(offset, shape[axis]) if axis else offset
            if axis < len(checked):
                offset = builder.add(offset, checked[axis])
        pointer = builder.gep(view.data, [offset])
        pointer = builder.bitcast(pointer, context.get_data_type(aty.dtype).as_pointer())
        return pointer, shape, strides
    offset = zero
    for axis, index in enumerate(checked):
        offset = builder.add(offset, builder.mul(index, strides[axis]))
    byte = builder.bitcast(view.data, cgutils.voidptr_t)
    return builder.gep(byte, [offset]), shape, strides


def _index_types(aty, idx):
    """The integer index types of `aty[idx]`, or None where idx is not 1..ndim integers."""
    if not isinstance(aty, RawArray):
        return None
    index_types = tuple(idx) if isinstance(idx, types.BaseTuple) else (idx,)
    if not 0 < len(index_types) <= aty.ndim:
        return None
    if not all(isinstance(ity, types.Integer) for ity in index_types):
        return None
    return index_types


@intrinsic
def _get(typingctx, a, idx):
    index_types = _index_types(a, idx)
    if index_types is None:
        return None
    rest = a.ndim - len(index_types)
    out_type = a.dtype if rest == 0 else RawArray(a.dtype, rest, a.layout)

    def codegen(context, builder, sig, args):
        aty, ity = sig.args
        indices = (cgutils.unpack_tuple(builder, args[1]) if isinstance(ity, types.BaseTuple)
                   else [args[1]])
        pointer, shape, strides = _element_pointer(context, builder, aty, args[0], index_types,
                                                   indices)
        if rest == 0:
            typed = builder.bitcast(pointer, context.get_data_type(aty.dtype).as_pointer())
            return context.unpack_value(builder, aty.dtype, typed)
        view = cgutils.create_struct_proxy(out_type)(context, builder)
        view.data = builder.bitcast(pointer, context.get_data_type(aty.dtype).as_pointer())
        view.shape = cgutils.pack_array(builder, shape[len(index_types):])
        if aty.layout != "C":
            view.strides = cgutils.pack_array(builder, strides[len(index_types):])
        return view._getvalue()

    return out_type(a, idx), codegen


@intrinsic
def _set(typingctx, a, idx, value):
    index_types = _index_types(a, idx)
    if index_types is None or len(index_types) != a.ndim:
        return None

    def codegen(context, builder, sig, args):
        aty, ity, vty = sig.args
        indices = (cgutils.unpack_tuple(builder, args[1]) if isinstance(ity, types.BaseTuple)
                   else [args[1]])
        pointer, _, _ = _element_pointer(context, builder, aty, args[0], index_types, indices)
        typed = builder.bitcast(pointer, context.get_data_type(aty.dtype).as_pointer())
        context.pack_value(builder, aty.dtype, context.cast(builder, args[2], vty, aty.dtype),
                           typed)
        return context.get_dummy_value()

    return types.none(a, idx, value), codegen


@overload(operator.getitem)
def _getitem(a, idx):
    if _index_types(a, idx) is not None:
        return lambda a, idx: _get(a, idx)
    return None


@overload(operator.setitem)
def _setitem(a, idx, value):
    index_types = _index_types(a, idx)
    if index_types is not None and len(index_types) == a.ndim:
        return lambda a, idx, value: _set(a, idx, value)
    return None


@overload(len)
def _len(a):
    if isinstance(a, RawArray):
        return lambda a: a.shape[0]
    return None


@overload_attribute(RawArray, "ndim")
def _ndim(a):
    ndim = a.ndim
    return lambda a: ndim


@overload_attribute(RawArray, "size")
def _size(a):
    def size(a):
        total = 1
        for extent in a.shape:
            total *= extent
        return total

    return size
