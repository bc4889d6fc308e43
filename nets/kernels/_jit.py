"""The one way kernels are compiled (lazily, cached on disk, GIL released), and the
intrinsics kernels use: ``prefetch_row`` to hide the memory latency of scattered row
reads (``csr``, ``embedding``, ``optim``), ``popcount`` to rank ids in a bitmap
(``embedding.unique_slots``), ``load_word`` and ``trailing_zeros`` to read eight bytes of
text at once (``libsvm``). Kernels never share work among themselves: ``nets.parallel``
splits a call into row ranges, and ``nogil=True`` lets its threads run them at once.

``KERNELS`` lists every function compiled through ``jit`` (``nets.kernels.cache`` reports
which of them numba's disk cache holds); the first compile in a process prints a one-line
notice on stderr (``NOTICE``), since it takes seconds where a cached kernel loads at once,
and runs the ``FIRST_COMPILE`` hooks (``cache.compile_ahead`` starts a second process there).

Processes share the cache safely: a process compiles a kernel called from Python only
while it holds that kernel's lock file in the cache folder, and looks in the cache again
once it has it, so a kernel another process is compiling is waited for and loaded, never
compiled twice (``_KernelCache.lock``)."""
import contextlib
import os
import sys
import threading

import numpy as np

from llvmlite import ir
from numba import types
from numba.core import cgutils, config, event, sigutils
from numba.core.caching import FunctionCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys
from numba.extending import intrinsic, overload


class Kernel(CPUDispatcher):
    """A kernel's dispatcher: numba's, except that a call from another kernel compiles for
    the argument types without their constant values. Numba types a constant argument
    (``_at(pos, 0, k)``) as a literal and compiles the callee once per distinct constant;
    LLVM still folds the constant once it inlines the callee."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(map(types.unliteral, args)),
                                         {k: types.unliteral(v) for k, v in kws.items()})

    def _compilation_chain_init_hook(self):
        """Nothing. Numba's runs the ``numba_extensions`` entry points of the installed
        packages (``entrypoints.init_all``: a read of every installed distribution's
        metadata) before it types a call's arguments, so that an extension's types are
        known. Kernels take numpy arrays and numbers, which no extension types, and a
        compile (a cache miss) runs the entry points anyway, before typing the kernel (the
        CPU context's ``refresh``): so a process whose kernels all load from the cache never
        reads that metadata."""

    def enable_caching(self):
        self._cache = _KernelCache(self.py_func)

    def compile(self, sig):
        """Numba's ``compile`` (an overload compiled or loaded from the cache), under the
        kernel's lock file when called from Python. Numba's own compiler lock is taken
        first (one thread of a process compiles at a time), and the kernels a kernel calls
        compile inside its compile without locks of their own: so a process holds one
        lock file at a time, and two processes never wait for each other in a cycle."""
        args, _ = sigutils.normalize_signature(sig)
        if _LOCKED.held or tuple(args) in self.overloads:
            return super().compile(sig)
        with global_compiler_lock, self._cache.lock():
            _LOCKED.held = True
            try:
                return super().compile(sig)
            finally:
                _LOCKED.held = False


class _Held(threading.local):
    held = False  # this thread holds a kernel's lock (compiling under it)


_LOCKED = _Held()


class _KernelCache(FunctionCache):
    """Numba's disk cache of a kernel, loading without first loading every typing and
    lowering registry of numba (``target_context.refresh()``, which also imports scipy's
    BLAS): cached machine code needs only the code generator and numba's runtime (the
    allocator kernels call), and a compile loads the registries itself. A process whose
    kernels are all cached never pays for them. (So kernels stick to arrays, numbers and C
    math: no typed dict, set or string hashing, whose symbols those registries install.)"""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    @contextlib.contextmanager
    def lock(self):
        """Hold the kernel's lock file (``<index file>.lock`` in the cache folder; an
        exclusive ``flock``, waiting while another process holds it). The system releases
        it when its holder ends, even killed; numba writes cache files whole (a temporary
        file renamed), so a process killed while compiling leaves nothing half written.
        Where the lock file cannot be opened (a read-only cache folder) or ``flock`` does
        not exist (Windows), the compile runs unlocked: at worst two processes compile
        the same kernel."""
        try:
            import fcntl
            fd = os.open(self._cache_file._index_path + ".lock", os.O_RDWR | os.O_CREAT,
                         0o666)
        except (ImportError, OSError):
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


KERNELS = []  # every function decorated with ``jit``, in the order the modules define them
NOTICE = {"enabled": True, "shown": False}  # the first-compile notice (``cache.set_notice``)
NOTICE_TEXT = "nets: compiling kernels for first use (once; `nets warmup` does it ahead)"
FIRST_COMPILE = []  # callables, each run once, at the process's first kernel compile
COMPILED = {"any": False}  # this process has compiled a kernel (``FIRST_COMPILE`` has run)


class _FirstCompile(event.Listener):
    """At the first kernel compile of a process (a cache miss: numba raises no compile event
    for a kernel it loads from its cache): prints ``NOTICE_TEXT`` once, and runs (and
    empties) ``FIRST_COMPILE``."""

    def on_start(self, ev):
        if not isinstance(ev.data.get("dispatcher"), Kernel):
            return
        if COMPILED["any"]:
            return
        COMPILED["any"] = True
        if NOTICE["enabled"] and not NOTICE["shown"]:
            NOTICE["shown"] = True
            print(NOTICE_TEXT, file=sys.stderr, flush=True)
        while FIRST_COMPILE:
            FIRST_COMPILE.pop(0)()

    def on_end(self, ev):
        pass


event.register("numba:compile", _FirstCompile())


def jit(fn=None, *, reassoc=False, helper=False, inline=False, allocates=True):
    """``numba.njit(cache=True, nogil=True)`` through the ``Kernel`` dispatcher, recorded in
    ``KERNELS``; ``@jit``, ``@jit(reassoc=True)``, ``@jit(helper=True)``,
    ``@jit(helper=True, inline=True)``, ``@jit(allocates=False)``. Under
    ``NUMBA_DISABLE_JIT=1`` the function itself (recorded too).

    No explicit signatures: those would compile at import. ``error_model='numpy'``: a float
    division by zero gives inf/nan as in numpy instead of raising, which also drops the
    zero-check branch that keeps LLVM from vectorising loops with a division.
    ``reassoc=True`` lets LLVM reorder float additions (only that: NaN and inf behave as
    in numpy), so a sum loop is vectorised into one running sum per SIMD lane, as
    numpy's own pairwise sum keeps 8.
    ``helper=True``: a function only kernels call, compiled without the wrappers that let
    Python (or C) call it: numba compiles every function a kernel calls on its own before
    inlining it, and the wrappers, which unbox and check every argument, are a large part
    of a small function's compile. Calling a helper from Python raises numba's error.
    ``inline=True``: LLVM inlines the function into every caller (its ``alwaysinline``
    attribute, numba's ``forceinline``): for a hot helper that LLVM's own cost model
    would leave as a call, e.g. the number parser inside the LibSVM parser's token loop.
    It costs little to compile (the function is still typed once, on its own).
    ``allocates=False``: the function creates no array (it reads and writes the arrays it
    is given), so it is compiled without numba's runtime (numba's ``_nrt=False``): its
    array arguments are borrowed for the call instead of reference counted. Numba counts a
    reference on entry to every function an array is passed to and releases it on exit,
    each an atomic operation on the array's counter that LLVM cannot remove even when it
    inlines the function: in a loop calling small helpers over one buffer, as the LibSVM
    parser's token loop does, that is several atomic operations per token. Creating an
    array in such a function fails to compile.
    """
    options = {"nopython": True, "nogil": True, "error_model": "numpy",
               "fastmath": {"reassoc"} if reassoc else False}
    if helper:
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    if inline:
        options.update(forceinline=True)
    if not allocates:
        options.update(_nrt=False)

    def wrap(fn):
        kernel = fn
        if not config.DISABLE_JIT:
            kernel = Kernel(py_func=fn, locals={}, targetoptions=options)
            kernel.enable_caching()
        KERNELS.append(kernel)
        return kernel
    return wrap if fn is None else wrap(fn)


# -- memory prefetching for kernels that gather scattered rows ------------------------
PREFETCH_AHEAD = 8  # rows requested ahead of use: enough to cover DRAM latency


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


def _bit_intrinsic(llvm_name, *flags):
    """An intrinsic ``int64 f(x)`` for an integer ``x``: the LLVM bit-counting intrinsic
    ``llvm_name`` (``i64 (i64[, i1...])``) on ``x`` cast to 64 unsigned bits, with
    ``flags`` as its i1 constant arguments."""
    @intrinsic
    def bits(typingctx, x):
        if not isinstance(x, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            i64, i1 = ir.IntType(64), ir.IntType(1)
            value = context.cast(builder, args[0], sig.args[0], types.uint64)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i64] + [i1] * len(flags)), llvm_name)
            return builder.call(fn, [value] + [ir.Constant(i1, f) for f in flags])
        return types.int64(x), codegen
    bits.__name__ = bits.__qualname__ = llvm_name.replace(".", "_")  # one name each
    return intrinsic(bits)


_popcount = _bit_intrinsic("llvm.ctpop.i64")
_trailing_zeros = _bit_intrinsic("llvm.cttz.i64", 0)  # 0: defined at 0 (64)


@overload(popcount)
def _(x):
    return lambda x: _popcount(x)


def trailing_zeros(x):
    """The number of trailing zero bits of ``x`` (a 64-bit unsigned integer; 64 for 0;
    compiled: one ``llvm.cttz``, a single instruction on x86-64 with BMI)."""
    x = int(x)
    return (x & -x).bit_length() - 1 if x else 64


@overload(trailing_zeros)
def _(x):
    return lambda x: _trailing_zeros(x)


# -- eight bytes at once --------------------------------------------------------------
def load_word(a, i):
    """Bytes ``a[i:i + 8]`` of the 1-D uint8 array ``a`` as one little-endian uint64 (byte
    ``i`` lowest), at any ``i`` (compiled: one unaligned load, byte-swapped on a big-endian
    host). The caller guarantees ``0 <= i`` and ``i + 8 <= len(a)``: the load is not
    bounds checked."""
    return np.uint64(int.from_bytes(bytes(a[i:i + 8]), "little"))


@intrinsic
def _load_word(typingctx, a, i):
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.uint8
            and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        offset = context.cast(builder, args[1], sig.args[1], types.int64)
        address = builder.gep(arr.data, [offset])
        word = builder.load(builder.bitcast(address, i64.as_pointer()), align=1)
        if sys.byteorder == "big":
            swap = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]),
                                                  "llvm.bswap.i64")
            word = builder.call(swap, [word])
        return word
    return types.uint64(a, i), codegen


@overload(load_word)
def _(a, i):
    return lambda a, i: _load_word(a, i)
