"""Every use nets makes of numba's internals: the fast start-up path of the kernels, and the
check that this numba has those internals as this module uses them.

Numba's public API (``numba.njit``, ``numba.extending``, ``numba.types``) is what ``_jit``
uses itself; this module is the rest, written against numba's private classes and members
(``CPUDispatcher`` and ``FunctionCache`` subclassed, their underscored methods, the cache
index, the ``_nrt`` and ``forceinline`` options, the compile events, the code generator's
helpers), which numba may change in any release. ``check(numba)`` runs when this module
loads, i.e. when the first kernel module loads, before any kernel compiles or loads from
the cache; it compares numba's version with ``TESTED`` and the names and parameters this
module uses with ``EXPECTED``, and ``MISMATCH`` holds its answer: None, or what differs.
``_jit`` compiles kernels through ``kernel`` only when ``MISMATCH`` is None, and through
plain ``numba.njit`` otherwise; the cache queries (``cache_location``,
``cached_variants``) answer None where ``MISMATCH`` is not None.

What the fast path adds to plain ``numba.njit(cache=True, nogil=True)``:

- ``Kernel``, a dispatcher that compiles a callee once for a constant argument's type, not
  once per constant; that loads from the disk cache without numba's typing and lowering
  registries (``_KernelCache``), without compiling numba's runtime functions
  (``_load_runtime``) and without importing the modules of numba's own functions a kernel
  calls (``_rebuild_env``); that skips the entry-point scan of the installed packages
  when it only loads; that types array arguments without importing ``numpy.ma``
  (``Kernel.typeof_pyval``); and that compiles under a lock file in the cache folder, so
  processes sharing a cache compile each kernel once;
- helpers compiled without the wrappers that let Python call them, inlined into their
  callers by LLVM, and without numba's reference counting (``kernel``'s options);
- the first-compile hook (``on_first_compile``) behind the first-compile notice and
  ``cache.compile_ahead``;
- LLVM intrinsics (``intrinsics``): prefetch, popcount, count-trailing-zeros and an
  unaligned 8-byte load.

On either path numba itself is imported here (``_import_numba``), without the modules it
imports as it loads but uses only to compile or to read a config file (``_DEFERRED``).
"""
import contextlib
import importlib
import importlib.util
import inspect
import os
import pickle
import sys
import threading
import types as pytypes


class _Deferred(pytypes.ModuleType):
    """A stand-in for the module of its name: the first use of one of its attributes
    imports that module (replacing the stand-in in ``sys.modules``), and every use reads
    the attribute there."""

    def __getattr__(self, attr):
        if sys.modules.get(self.__name__) is self:
            sys.modules.pop(self.__name__, None)
        return getattr(importlib.import_module(self.__name__), attr)


# What numba imports as it loads but uses only to compile or to read a config file, with
# what ``_import_numba`` puts in its place for numba's import: PyYAML (read where a
# ``.numba_config.yaml`` is) and importlib.metadata (the installed packages' entry points,
# read before a compile) as ``_Deferred`` stand-ins; scipy, whose version numba checks as
# it loads (nets requires a newer one than numba's minimum) and which it imports again
# where a compile uses it, as None (numba's import of it fails, and numba skips the check).
_DEFERRED = {"yaml": _Deferred, "importlib.metadata": _Deferred, "scipy": None}


def _import_numba():
    """Import numba without executing the modules of ``_DEFERRED`` (those not imported
    already): for numba's import alone, ``sys.modules`` holds their stand-ins; after it,
    a module is imported as usual by whatever imports it, and numba's stand-ins import it
    on first use. A numba release that needs scipy as it loads is imported again with it."""
    if "numba" in sys.modules:
        return sys.modules["numba"]
    standing = {}
    for name, stand_in in _DEFERRED.items():  # (a stand-in only for an installed module)
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            standing[name] = sys.modules[name] = stand_in and stand_in(name)
    try:
        import numba
    except ImportError as e:
        if e.name not in standing:
            raise
        numba = None
    finally:
        for name, stand_in in standing.items():
            if name in sys.modules and sys.modules[name] is stand_in:
                del sys.modules[name]
    if numba is None:
        import numba
    return numba


numba = _import_numba()

# The numba releases (major, minor), first and last, whose internals this module is tested
# with: every release between them has the names and parameters of EXPECTED.
TESTED = ((0, 62), (0, 68))

# (dotted name under the numba package, the parameters it must take first, or None for
# an attribute that is not called): what this module uses of numba's internals.
EXPECTED = (
    ("core.registry.CPUDispatcher.__init__", ("self", "py_func", "locals", "targetoptions")),
    ("core.registry.CPUDispatcher.get_call_template", ("self", "args", "kws")),
    ("core.registry.CPUDispatcher.compile", ("self", "sig")),
    ("core.registry.CPUDispatcher._compilation_chain_init_hook", ("self",)),
    ("core.registry.CPUDispatcher.enable_caching", ("self",)),
    ("core.registry.CPUDispatcher.typeof_pyval", ("self", "val")),
    ("core.caching.FunctionCache.__init__", ("self", "py_func")),
    ("core.caching.FunctionCache.load_overload", ("self", "sig", "target_context")),
    ("core.caching.FunctionCache._load_overload", ("self", "sig", "target_context")),
    ("core.caching.FunctionCache._guard_against_spurious_io_errors", ("self",)),
    ("core.caching.FunctionCache._index_key", ("self", "sig", "codegen")),
    ("core.caching.IndexDataCacheFile.__init__",
     ("self", "cache_path", "filename_base", "source_stamp")),
    ("core.caching.IndexDataCacheFile._load_index", ("self",)),
    ("core.caching.IndexDataCacheFile._load_data", ("self", "name")),
    ("core.caching.IndexDataCacheFile._data_path", ("self", "name")),
    ("core.environment._rebuild_env", ("modname", "consts", "env_name")),
    ("core.environment.lookup_environment", ("env_name",)),
    ("core.environment.Environment._memo", None),
    ("core.caching._CacheLocator.get_cache_path", ("self",)),
    ("core.runtime.rtsys.initialize", ("ctx",)),
    ("core.runtime._nrt_python.c_helpers", None),
    ("core.errors.NumbaNotImplementedError", None),
    ("np.numpy_support.from_dtype", ("dtype",)),
    ("np.numpy_support.map_layout", ("val",)),
    ("core.sigutils.normalize_signature", ("sig",)),
    ("core.compiler_lock.global_compiler_lock", None),
    ("core.event.register", ("kind", "listener")),
    ("core.event.Listener.on_start", ("self", "event")),
    ("core.event.Listener.on_end", ("self", "event")),
    ("core.options.DefaultOptions._nrt", None),
    ("core.options.DefaultOptions.forceinline", None),
    ("core.options.DefaultOptions.no_cpython_wrapper", None),
    ("core.options.DefaultOptions.no_cfunc_wrapper", None),
    ("core.cgutils.get_or_insert_function", ("module", "fnty", "name")),
    ("core.cgutils.for_range_slice", ("builder", "start", "stop", "step")),
    ("core.cgutils.unpack_tuple", ("builder", "tup", "count")),
    ("core.base.BaseContext.make_array", ("self", "typ")),
    ("core.base.BaseContext.cast", ("self", "builder", "val", "fromty", "toty")),
    ("core.base.BaseContext.get_dummy_value", ("self",)),
    ("extending.intrinsic", None),
)


def _resolve(root, dotted):
    """Attribute ``dotted`` (``a.b.c``) of ``root``, importing a submodule of a package
    where the attribute is not yet set (``numba.core.caching`` loads on import only)."""
    obj = root
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if not (isinstance(obj, pytypes.ModuleType) and hasattr(obj, "__path__")):
                raise
            obj = importlib.import_module(f"{obj.__name__}.{part}")
    return obj


def _release(version):
    """``(major, minor)`` of a version string (``0.68.1``, ``0.69.0rc1``), or None."""
    try:
        return tuple(int(p) for p in str(version).split(".")[:2])
    except ValueError:
        return None


def check(numba_package):
    """None when ``numba_package`` (the ``numba`` module, or a stand-in with the same
    attributes) is a release in ``TESTED`` and has every name of ``EXPECTED`` taking the
    parameters listed there; else what differs, in a few words (the first difference)."""
    version = getattr(numba_package, "__version__", "?")
    release = _release(version)
    (lo, hi) = TESTED
    if release is None or len(release) != 2 or not lo <= release <= hi:
        return (f"numba {version} is not a release nets is tested with "
                f"({lo[0]}.{lo[1]} to {hi[0]}.{hi[1]})")
    for dotted, params in EXPECTED:
        try:
            obj = _resolve(numba_package, dotted)
        except Exception:  # missing, or a module that no longer imports
            return f"numba {version} has no numba.{dotted}"
        if params is None:
            continue
        try:
            names = tuple(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            return f"numba {version}: numba.{dotted} is not a function"
        if names[:len(params)] != params:
            return f"numba {version}: numba.{dotted} takes ({', '.join(names)})"
    return None


MISMATCH = check(numba)

if MISMATCH is None:  # every name imported here is one EXPECTED lists
    import numpy as np
    from llvmlite import binding as ll
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils, environment, event, sigutils
    from numba.core.caching import FunctionCache as _FunctionCache
    from numba.core.caching import IndexDataCacheFile as _IndexDataCacheFile
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import CPUDispatcher as _CPUDispatcher
    from numba.core.runtime import _nrt_python, rtsys
    from numba.extending import intrinsic
    from numba.np import numpy_support
else:  # the classes below are defined but never instantiated: _jit takes the plain path
    _CPUDispatcher = _FunctionCache = _IndexDataCacheFile = object


def kernel(fn, options, helper=False, inline=False, allocates=True):
    """``fn`` compiled lazily through ``Kernel`` with numba's public ``options`` (``nogil``,
    ``error_model``, ``fastmath``), cached on disk. ``helper``: no Python or C wrappers
    (only kernels call it); ``inline``: LLVM's ``alwaysinline`` (numba's
    ``forceinline``); ``allocates=False``: compiled without numba's runtime (``_nrt``)."""
    options = {"nopython": True, **options}
    if helper:
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    if inline:
        options.update(forceinline=True)
    if not allocates:
        options.update(_nrt=False)
    dispatcher = Kernel(py_func=fn, locals={}, targetoptions=options)
    dispatcher.enable_caching()
    return dispatcher


class Kernel(_CPUDispatcher):
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

    def typeof_pyval(self, val):
        """Numba's type of the argument ``val``, found here for an array of the exact class
        ``numpy.ndarray`` (as numba's own rule finds it): that rule first checks whether the
        array is masked (``numpy.ma.MaskedArray``, a subclass), and that check imports
        ``numpy.ma`` at a process's first kernel call."""
        if type(val) is not np.ndarray:
            return super().typeof_pyval(val)
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except numba.core.errors.NumbaNotImplementedError:  # (numba's error for it)
            return super().typeof_pyval(val)
        tp = types.Array(dtype, val.ndim, numpy_support.map_layout(val),
                         readonly=not val.flags.writeable)
        self._types_active_call.add(tp)  # (numba keeps the call's types alive so)
        return tp

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
# Added to the cache index key of every overload the fast path saves: numba's key leaves
# out the compile options, so without it a process on the plain path would load the fast
# path's helpers (no Python wrapper, no reference counting) and the fast path the plain
# path's slower code, from the same index file.
_FAST_KEY = "nets-fast-path"


class _KernelCache(_FunctionCache):
    """Numba's disk cache of a kernel, loading without first loading every typing and
    lowering registry of numba (``target_context.refresh()``, which also imports scipy's
    BLAS): cached machine code needs only the code generator and the C functions of
    numba's runtime (``_load_runtime``), and a compile loads the registries itself. A
    process whose kernels are all cached never pays for them. (So kernels stick to arrays,
    numbers and C math: no typed dict, set or string hashing, whose symbols those
    registries install.) Its files are read through ``_KernelCacheFile``."""

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file.__class__ = _KernelCacheFile  # (numba's, reading as below)

    def load_overload(self, sig, target_context):
        _load_runtime(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def _index_key(self, sig, codegen):
        sig, magic, stamp = super()._index_key(sig, codegen)
        return sig, magic, stamp + (_FAST_KEY,)

    @property
    def lock_path(self):
        """``<the kernel's index file>.lock``, in the cache folder."""
        return self._cache_file.lock_path

    @contextlib.contextmanager
    def lock(self):
        """Hold the kernel's lock file (``lock_path``; an exclusive ``flock``, waiting
        while another process holds it). The system releases it when its holder ends, even
        killed; numba writes cache files whole (a temporary file renamed), so a process
        killed while compiling leaves nothing half written. Where the lock file cannot be
        opened (a read-only cache folder) or ``flock`` does not exist (Windows), the
        compile runs unlocked: at worst two processes compile the same kernel."""
        try:
            import fcntl
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except (ImportError, OSError):
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


_RUNTIME = {"loaded": False}  # this process has registered numba's runtime functions


def _load_runtime(target_context):
    """What kernels loaded from the cache need of numba's runtime (NRT), once per process:
    the addresses of its C functions (allocation, arrays to and from Python), registered
    with LLVM as numba's ``rtsys.initialize`` registers them. The rest of that
    initialization compiles numba's few reference-counting functions with LLVM, for a
    compile to link into each kernel it compiles: a cached kernel's machine code holds them
    already, and a compile (a cache miss) initializes the runtime in full first (the CPU
    context's ``refresh``). With numba's allocation statistics on (``NUMBA_NRT_STATS``),
    which that initialization switches on, numba initializes it here."""
    if _RUNTIME["loaded"]:
        return
    if numba.core.config.NRT_STATS:
        rtsys.initialize(target_context)
    else:
        for name, address in _nrt_python.c_helpers.items():
            ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    _RUNTIME["loaded"] = True


class _KernelCacheFile(_IndexDataCacheFile):
    """Numba's index and data files of a kernel, its data read with ``_CacheUnpickler``."""

    @property
    def lock_path(self):
        """``<the index file>.lock`` (``_KernelCache.lock``)."""
        return self._index_path + ".lock"

    def _load_data(self, name):
        with open(self._data_path(name), "rb") as f:
            return _CacheUnpickler(f).load()


class _CacheUnpickler(pickle.Unpickler):
    """Numba's cached data, unpickled with the environments of its functions rebuilt by
    ``_rebuild_env``."""

    def find_class(self, module, name):
        if (module, name) == ("numba.core.environment", "_rebuild_env"):
            return _rebuild_env
        return super().find_class(module, name)


def _rebuild_env(modname, consts, env_name):
    """Numba's ``environment._rebuild_env`` (a compiled function's environment: its
    module's globals and its constants), without importing the module where it is not
    imported yet: numba's own array functions (``np.empty`` in a kernel) have environments
    in its modules that the kernel's process does not otherwise import, such as
    ``numba.np.arrayobj``. Kernels compile in nopython mode, whose code reads only the
    constants; the globals are read by object mode alone, and by numba's cache, which
    names the module by the globals' ``__name__``: an environment rebuilt here holds just
    that."""
    if modname in sys.modules or environment.lookup_environment(env_name) is not None:
        return environment._rebuild_env(modname, consts, env_name)
    env = environment.Environment({"__name__": modname})
    env.consts[:] = consts
    env.env_name = env_name
    environment.Environment._memo[env_name] = env  # (numba finds it by name, as its own)
    return env


def lock_path(dispatcher):
    """The lock file a fast-path kernel compiles under (``_KernelCache.lock``)."""
    return dispatcher._cache.lock_path


def on_first_compile(callback):
    """Call ``callback()`` at the start of every compile of a ``Kernel`` (a cache miss:
    numba raises no compile event for an overload it loads from its cache)."""
    class FirstCompile(event.Listener):
        def on_start(self, ev):
            if isinstance(ev.data.get("dispatcher"), Kernel):
                callback()

        def on_end(self, ev):
            pass
    event.register("numba:compile", FirstCompile())


# -- numba's disk cache, read without compiling or loading -------------------------------
def _function_cache(dispatcher):
    """The ``FunctionCache`` of a kernel compiled with ``cache=True`` (either path), or
    None (a Python function under ``NUMBA_DISABLE_JIT``, or internals that differ)."""
    if MISMATCH is not None:
        return None
    cache = getattr(dispatcher, "_cache", None)
    return cache if isinstance(cache, _FunctionCache) else None


def cache_location(dispatcher):
    """``(folder, locator)``: the folder numba caches ``dispatcher`` in for this process and
    the name of numba's locator class that chose it (``UserProvidedCacheLocator``: from
    ``NUMBA_CACHE_DIR``, ...); None where unknown."""
    cache = _function_cache(dispatcher)
    if cache is None:
        return None
    locator = cache._impl.locator
    return locator.get_cache_path(), type(locator).__name__.lstrip("_")


def cached_variants(dispatcher):
    """How many compiled variants (argument types) of ``dispatcher`` numba's disk cache
    holds that this process would load: compiled for this CPU, from the kernel's current
    code, by the path ``dispatcher`` belongs to (the fast path's entries carry
    ``_FAST_KEY``). None where unknown."""
    cache = _function_cache(dispatcher)
    if cache is None:
        return None
    codegen = dispatcher.targetctx.codegen()
    magic, current = codegen.magic_tuple(), cache._index_key(None, codegen)[2]
    index = cache._cache_file._load_index()  # {} when missing or stale
    return sum(1 for key in index if key[1] == magic and key[2] == current)


# -- LLVM intrinsics ----------------------------------------------------------------------
def intrinsics():
    """``(prefetch_row, popcount, trailing_zeros, load_word)``: numba intrinsics, each
    typed for the arguments ``_jit``'s function of that name documents (None, a typing
    error, for others)."""
    return _prefetch_row, _popcount, _trailing_zeros, _load_word


if MISMATCH is None:
    @intrinsic
    def _prefetch_row(typingctx, a, row):
        """One ``llvm.prefetch`` per 64-byte line of row ``row`` of 2-D ``a``."""
        if not (isinstance(a, types.Array) and a.ndim == 2
                and isinstance(row, types.Integer)):
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
                "llvm.prefetch.p0")  # opaque pointers: LLVM >= 17 (numba >= 0.62)
            with cgutils.for_range_slice(builder, ir.Constant(i64, 0), nbytes,
                                         ir.Constant(i64, 64)) as (offset, _):
                address = builder.inttoptr(builder.add(start, offset), ptr)
                # read, keep in all cache levels, data cache
                builder.call(fn, [address, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                  ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return types.void(a, row), codegen

    def _bit_intrinsic(llvm_name, *flags):
        """An intrinsic ``int64 f(x)`` for an integer ``x``: the LLVM bit-counting
        intrinsic ``llvm_name`` (``i64 (i64[, i1...])``) on ``x`` cast to 64 unsigned bits,
        with ``flags`` as its i1 constant arguments."""
        def bits(typingctx, x):
            if not isinstance(x, types.Integer):
                return None

            def codegen(context, builder, sig, args):
                i64, i1 = ir.IntType(64), ir.IntType(1)
                value = context.cast(builder, args[0], sig.args[0], types.uint64)
                fn = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(i64, [i64] + [i1] * len(flags)),
                    llvm_name)
                return builder.call(fn, [value] + [ir.Constant(i1, f) for f in flags])
            return types.int64(x), codegen
        bits.__name__ = bits.__qualname__ = llvm_name.replace(".", "_")  # one name each
        return intrinsic(bits)

    _popcount = _bit_intrinsic("llvm.ctpop.i64")
    _trailing_zeros = _bit_intrinsic("llvm.cttz.i64", 0)  # 0: defined at 0 (64)

    @intrinsic
    def _load_word(typingctx, a, i):
        """One unaligned little-endian 8-byte load from 1-D uint8 ``a`` at ``i``."""
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
                swap = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(i64, [i64]), "llvm.bswap.i64")
                word = builder.call(swap, [word])
            return word
        return types.uint64(a, i), codegen
