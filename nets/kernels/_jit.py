"""The one way kernels are compiled (lazily, cached on disk, GIL released), and the
intrinsics kernels use: ``prefetch_row`` to hide the memory latency of scattered row
reads (``csr``, ``embedding``, ``optim``), ``popcount`` to rank ids in a bitmap
(``embedding.unique_slots``), ``load_word`` and ``trailing_zeros`` to read eight bytes of
text at once (``libsvm``). Kernels never share work among themselves: ``nets.parallel``
splits a call into row ranges, and ``nogil=True`` lets its threads run them at once.

Two paths compile the same kernels to the same results, chosen once per process when
this module loads (the first kernel module's import, before any kernel compiles):

- the fast start-up path (``_numba_internals``, the one module that uses numba's
  internals), taken when ``_numba_internals.check`` finds numba's internals as that module
  expects them: kernels load from the cache without numba's compiler registries, helpers
  carry no Python wrappers and no reference counting, processes sharing a cache compile
  each kernel once (a lock file per kernel), and the intrinsics are single LLVM
  instructions;
- the plain path: ``numba.njit(cache=True, nogil=True)`` with the same ``error_model`` and
  ``fastmath`` as the fast path, and the intrinsics written in numba-compiled Python; taken
  when the internals differ (another numba release) or under ``NETS_PLAIN_NUMBA=1``, and
  announced by one line on stderr (``PLAIN_NOTICE``). It uses numba's public API only.

``KERNELS`` lists every function compiled through ``jit`` (``nets.kernels.cache`` reports
which of them numba's disk cache holds); on the fast path the first compile in a process
prints a one-line notice on stderr (``NOTICE``), since it takes seconds where a cached
kernel loads at once, and runs the ``FIRST_COMPILE`` hooks (``cache.compile_ahead``
starts a second process there). The plain path has no compile hook: neither runs there.
"""
import os
import sys

from ..base import NetsError
from . import _numba_internals as internals  # (first: it imports numba, see there)

import numba
import numpy as np
from numba import types
from numba.extending import overload

PLAIN_ENV = "NETS_PLAIN_NUMBA"
PLAIN_NOTICE = ("nets: fast kernel start-up is off ({reason}); kernels compile through "
                "plain numba.njit")


def plain_forced(environ=None):
    """Whether ``NETS_PLAIN_NUMBA`` (of ``environ``, default ``os.environ``) forces the plain
    path: ``1`` forces it; ``0``, blank or unset leave the choice to the internals check;
    any other value raises ``NetsError`` naming the variable and the value."""
    text = (os.environ if environ is None else environ).get(PLAIN_ENV, "").strip()
    if text in ("", "0"):
        return False
    if text == "1":
        return True
    raise NetsError(f"{PLAIN_ENV}={text!r}: expected 1 (compile every kernel through plain "
                    f"numba.njit) or 0 (the default: the fast path where numba allows)")


def select(mismatch, environ=None):
    """``(fast, reason)``: whether kernels take the fast path, given ``mismatch`` (the
    answer of ``_numba_internals.check``) and ``NETS_PLAIN_NUMBA`` (of ``environ``); when
    not, ``reason`` says why in a few words (for ``PLAIN_NOTICE``)."""
    if plain_forced(environ):
        return False, f"{PLAIN_ENV}=1"
    if mismatch is not None:
        return False, mismatch
    return True, None


FAST, PLAIN_REASON = select(internals.MISMATCH)
if not FAST and not numba.config.DISABLE_JIT:
    print(PLAIN_NOTICE.format(reason=PLAIN_REASON), file=sys.stderr, flush=True)

KERNELS = []  # every function decorated with ``jit``, in the order the modules define them
NOTICE = {"enabled": True, "shown": False}  # the first-compile notice (``cache.set_notice``)
NOTICE_TEXT = "nets: compiling kernels for first use (once; `nets warmup` does it ahead)"
FIRST_COMPILE = []  # callables, each run once, at the process's first kernel compile
COMPILED = {"any": False}  # this process has compiled a kernel (``FIRST_COMPILE`` has run)


def _first_compile():
    """At the start of a kernel compile on the fast path: at the process's first, print
    ``NOTICE_TEXT`` (once) and run (and empty) ``FIRST_COMPILE``."""
    if COMPILED["any"]:
        return
    COMPILED["any"] = True
    if NOTICE["enabled"] and not NOTICE["shown"]:
        NOTICE["shown"] = True
        print(NOTICE_TEXT, file=sys.stderr, flush=True)
    while FIRST_COMPILE:
        FIRST_COMPILE.pop(0)()


if FAST:
    internals.on_first_compile(_first_compile)


def jit(fn=None, *, reassoc=False, helper=False, inline=False, allocates=True):
    """``numba.njit(cache=True, nogil=True)`` on either path (the module's docstring),
    recorded in ``KERNELS``; ``@jit``, ``@jit(reassoc=True)``, ``@jit(helper=True)``,
    ``@jit(helper=True, inline=True)``, ``@jit(allocates=False)``. Under
    ``NUMBA_DISABLE_JIT=1`` the function itself (recorded too).

    No explicit signatures: those would compile at import. ``error_model='numpy'``: a float
    division by zero gives inf/nan as in numpy instead of raising, which also drops the
    zero-check branch that keeps LLVM from vectorising loops with a division.
    ``reassoc=True`` lets LLVM reorder float additions (only that: NaN and inf behave as
    in numpy), so a sum loop is vectorised into one running sum per SIMD lane, as
    numpy's own pairwise sum keeps 8.

    The other three options change how a function compiles on the fast path, never what it
    computes; the plain path compiles it as any other kernel.
    ``helper=True``: a function only kernels call, compiled without the wrappers that let
    Python (or C) call it: numba compiles every function a kernel calls on its own before
    inlining it, and the wrappers, which unbox and check every argument, are a large part
    of a small function's compile. Calling a helper from Python raises numba's error on the
    fast path.
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
    array in such a function fails to compile on the fast path.
    """
    options = {"nogil": True, "error_model": "numpy",
               "fastmath": {"reassoc"} if reassoc else False}

    def wrap(fn):
        if numba.config.DISABLE_JIT:
            kernel = fn
        elif FAST:
            kernel = internals.kernel(fn, options, helper=helper, inline=inline,
                                      allocates=allocates)
        else:
            kernel = numba.njit(cache=True, **options)(fn)
        KERNELS.append(kernel)
        return kernel
    return wrap if fn is None else wrap(fn)


# The intrinsics: each a Python function (what runs under NUMBA_DISABLE_JIT=1) with an
# overload for compiled code: the fast path's LLVM intrinsic, else the plain
# implementation below it (numba-compiled Python computing the same value).
if FAST:
    _fast_prefetch_row, _fast_popcount, _fast_trailing_zeros, _fast_load_word = \
        internals.intrinsics()


# -- memory prefetching for kernels that gather scattered rows ------------------------
PREFETCH_AHEAD = 8  # rows requested ahead of use: enough to cover DRAM latency


def prefetch_row(a, row):
    """Hint the CPU to bring row ``row`` of 2-D C-contiguous ``a`` into cache (compiled on
    the fast path: one prefetch per 64-byte line; a no-op in Python, e.g. under
    ``NUMBA_DISABLE_JIT=1``, and on the plain path). A prefetch never faults, so it needs
    no bounds check."""


def _plain_prefetch_row(a, row):
    return None  # a hint only: the row is read when it is used


@overload(prefetch_row)
def _(a, row):
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(row, types.Integer)):
        return None
    if FAST:
        return lambda a, row: _fast_prefetch_row(a, row)
    return _plain_prefetch_row


# -- bit counting ---------------------------------------------------------------------
def popcount(x):
    """The number of set bits of ``x`` (a 64-bit unsigned integer; compiled on the fast
    path: one ``llvm.ctpop``, a single instruction on x86-64 with POPCNT)."""
    return int(x).bit_count()


_M1, _M2, _M4 = (np.uint64(0x5555555555555555), np.uint64(0x3333333333333333),
                 np.uint64(0x0F0F0F0F0F0F0F0F))
_H01 = np.uint64(0x0101010101010101)


def _plain_popcount(x):
    # bits summed in pairs, nibbles, bytes, then the bytes by one multiplication
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@overload(popcount)
def _(x):
    if not isinstance(x, types.Integer):
        return None
    if FAST:
        return lambda x: _fast_popcount(x)
    return _plain_popcount


def trailing_zeros(x):
    """The number of trailing zero bits of ``x`` (a 64-bit unsigned integer; 64 for 0;
    compiled on the fast path: one ``llvm.cttz``, a single instruction on x86-64 with
    BMI)."""
    x = int(x)
    return (x & -x).bit_length() - 1 if x else 64


def _plain_trailing_zeros(x):
    # the bits below the lowest set bit, counted (x = 0: all 64 bits, by wrap-around)
    x = np.uint64(x)
    return popcount((x & (~x + np.uint64(1))) - np.uint64(1))


@overload(trailing_zeros)
def _(x):
    if not isinstance(x, types.Integer):
        return None
    if FAST:
        return lambda x: _fast_trailing_zeros(x)
    return _plain_trailing_zeros


# -- eight bytes at once --------------------------------------------------------------
def load_word(a, i):
    """Bytes ``a[i:i + 8]`` of the 1-D uint8 array ``a`` as one little-endian uint64 (byte
    ``i`` lowest), at any ``i`` (compiled on the fast path: one unaligned load, byte-swapped
    on a big-endian host). The caller guarantees ``0 <= i`` and ``i + 8 <= len(a)``: the
    load is not bounds checked."""
    return np.uint64(int.from_bytes(bytes(a[i:i + 8]), "little"))


def _plain_load_word(a, i):
    word = np.uint64(0)
    for k in range(8):
        word |= np.uint64(a[i + k]) << np.uint64(8 * k)
    return word


@overload(load_word)
def _(a, i):
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.uint8
            and isinstance(i, types.Integer)):
        return None
    if FAST:
        return lambda a, i: _fast_load_word(a, i)
    return _plain_load_word
