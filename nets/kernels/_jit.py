"""The one way kernels are compiled (lazily, cached on disk, GIL released), and the
intrinsics kernels use: ``prefetch_row`` to hide memory latency, ``popcount`` to rank ids
in a bitmap, ``fetch_add``, ``compare_exchange``, ``load_acquire``, ``store_release`` and
``pause`` for threads that share one call's work (``nets.kernels.threads``)."""
import os
import platform

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

# NUMBA_BOUNDSCHECK does not reach inside prange loops, so the bounds-checked test run sets
# NETS_SERIAL_KERNELS=1 to compile parallel kernels serially (prange becomes range).
_SERIAL = os.environ.get("NETS_SERIAL_KERNELS") == "1"


def jit(fn=None, *, parallel=False, reassoc=False):
    """``numba.njit(cache=True, nogil=True)``; ``@jit``, ``@jit(parallel=True)``.

    No explicit signatures: those would compile at import. ``error_model='numpy'``: a float
    division by zero gives inf/nan as in numpy instead of raising, which also drops the
    zero-check branch that keeps LLVM from vectorising loops with a division.
    ``reassoc=True`` lets LLVM reorder float additions (only that: NaN and inf behave as
    in numpy), so a sum loop is vectorised into one running sum per SIMD lane, as
    numpy's own pairwise sum keeps 8.
    """
    wrap = numba.njit(cache=True, nogil=True, error_model="numpy",
                      parallel=parallel and not _SERIAL,
                      fastmath={"reassoc"} if reassoc else False)
    return wrap if fn is None else wrap(fn)


# -- memory prefetching for kernels that gather scattered rows ------------------------
PREFETCH_AHEAD = 8  # rows requested ahead of use: enough to cover DRAM latency (benchmarked)


def prefetch_row(a, row):
    """Hint the CPU to bring row ``row`` of 2-D C-contiguous ``a`` into cache (compiled: one
    prefetch per 64-byte line; a no-op in Python, e.g. under ``NUMBA_DISABLE_JIT=1``).
    A prefetch never faults, so it needs no bounds check."""


@intrinsic
def _prefetch_row(typingctx, a, row):
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(row, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        i64, i32, ptr = ir.IntType(64), ir.IntType(32), ir.IntType(8).as_pointer()
        r = context.cast(builder, args[1], sig.args[1], types.int64)
        stride = cgutils.unpack_tuple(builder, arr.strides, 2)[0]
        start = builder.add(builder.ptrtoint(arr.data, i64), builder.mul(r, stride))
        width = cgutils.unpack_tuple(builder, arr.shape, 2)[1]
        nbytes = builder.mul(width, ir.Constant(i64, sig.args[0].dtype.bitwidth // 8))
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr, i32, i32, i32]),
            "llvm.prefetch.p0")
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), nbytes,
                                     ir.Constant(i64, 64)) as (offset, _):
            address = builder.inttoptr(builder.add(start, offset), ptr)
            # read, keep in all cache levels, data cache
            builder.call(fn, [address, ir.Constant(i32, 0), ir.Constant(i32, 3),
                              ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(a, row), codegen


@overload(prefetch_row)
def _(a, row):
    return lambda a, row: _prefetch_row(a, row)


# -- bit counting ---------------------------------------------------------------------
def popcount(x):
    """The number of set bits of ``x`` (a 64-bit unsigned integer; compiled: one
    ``llvm.ctpop``, a single instruction on x86-64 with POPCNT)."""
    return int(x).bit_count()


@intrinsic
def _popcount(typingctx, x):
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        value = context.cast(builder, args[0], sig.args[0], types.uint64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]),
                                            "llvm.ctpop.i64")
        return builder.call(fn, [value])
    return types.int64(x), codegen


@overload(popcount)
def _(x):
    return lambda x: _popcount(x)


# -- atomics --------------------------------------------------------------------------
def fetch_add(a, i, v):
    """Add ``v`` to ``a[i]`` (int64) and return the old value (compiled: one atomic
    read-modify-write, sequentially consistent, so threads that each add see distinct old
    values and every write before it is visible to a thread that reads the sum)."""
    old = int(a[i])
    a[i] = old + v
    return old


def compare_exchange(a, i, expected, v):
    """Set ``a[i]`` (int64) to ``v`` if it holds ``expected``; whether it did (compiled: one
    atomic compare-and-swap, sequentially consistent)."""
    if a[i] != expected:
        return False
    a[i] = v
    return True


def load_acquire(a, i):
    """``a[i]`` (int64), read anew on every call (compiled: an atomic load, which the
    compiler cannot hoist out of a polling loop)."""
    return int(a[i])


def store_release(a, i, v):
    """``a[i] = v`` (int64; compiled: an atomic store that makes every write before it
    visible to a thread that reads ``v`` with ``load_acquire``)."""
    a[i] = v


def pause():
    """Tell the CPU this thread is polling (compiled: x86's ``pause``, which frees the
    core's resources for a hyper-thread sibling and saves power; nothing elsewhere)."""


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _int64_element(context, builder, sig, args):
    arr = context.make_array(sig.args[0])(context, builder, args[0])
    index = context.cast(builder, args[1], sig.args[1], types.int64)
    return cgutils.get_item_pointer(context, builder, sig.args[0], arr, [index])


def _int64_element_args(a, i, *values):
    """Whether ``a`` is a 1-D int64 array and the index and values integers."""
    return (isinstance(a, types.Array) and a.dtype == types.int64 and a.ndim == 1
            and all(isinstance(x, types.Integer) for x in (i, *values)))


@intrinsic
def _fetch_add(typingctx, a, i, v):
    if not _int64_element_args(a, i, v):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", _int64_element(context, builder, sig, args), value,
                                  "seq_cst")
    return types.int64(a, i, v), codegen


@intrinsic
def _compare_exchange(typingctx, a, i, expected, v):
    if not _int64_element_args(a, i, expected, v):
        return None

    def codegen(context, builder, sig, args):
        old, new = (context.cast(builder, x, t, types.int64)
                    for x, t in zip(args[2:], sig.args[2:]))
        pair = builder.cmpxchg(_int64_element(context, builder, sig, args), old, new,
                               "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(a, i, expected, v), codegen


@intrinsic
def _load_acquire(typingctx, a, i):
    if not _int64_element_args(a, i):
        return None

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_int64_element(context, builder, sig, args), "acquire", 8)
    return types.int64(a, i), codegen


@intrinsic
def _store_release(typingctx, a, i, v):
    if not _int64_element_args(a, i, v):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(value, _int64_element(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()
    return types.void(a, i, v), codegen


@intrinsic
def _pause(typingctx):
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@overload(fetch_add)
def _(a, i, v):
    return lambda a, i, v: _fetch_add(a, i, v)


@overload(compare_exchange)
def _(a, i, expected, v):
    return lambda a, i, expected, v: _compare_exchange(a, i, expected, v)


@overload(load_acquire)
def _(a, i):
    return lambda a, i: _load_acquire(a, i)


@overload(store_release)
def _(a, i, v):
    return lambda a, i, v: _store_release(a, i, v)


@overload(pause)
def _():
    return lambda: _pause()
