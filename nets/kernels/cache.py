"""Numba's disk cache of the kernels: where it is, and which kernels it holds.

A kernel compiles on its first call in a process unless numba's cache holds it for this
machine and for the kernel's current code; ``nets warmup`` fills the cache ahead, and
``nets info`` reports it through ``location`` and ``status``, which read numba's cache index
files without compiling or loading any kernel (through ``_numba_internals``, on either
compile path; where numba's internals are not the ones nets is tested with, they report
what they cannot read as unknown). ``compile_ahead`` has a second process compile kernels a
command will need while this one compiles others (both cores at work on a cold cache).
"""
import atexit
import importlib
import os
import pkgutil
import signal
import sys
import threading

from . import _jit, _numba_internals

# numba's cache locators (numba.core.caching), by the folder each one picks
_ORIGINS = {"UserProvidedCacheLocator": "NUMBA_CACHE_DIR",
            "InTreeCacheLocator": "__pycache__ beside the kernel modules",
            "UserWideCacheLocator": "numba's user-wide folder: the kernels' own folder is "
                                    "not writable"}


def kernels():
    """Every kernel (each function compiled through ``_jit.jit``), their modules imported:
    imports numba, compiles nothing."""
    package = os.path.dirname(__file__)
    for info in pkgutil.iter_modules([package]):
        if not info.name.startswith("_") and info.name != "cache":
            importlib.import_module(f"{__package__}.{info.name}")
    return list(_jit.KERNELS)


def name(kernel):
    """``module.function`` of a kernel, e.g. ``csr.csr_dense``."""
    fn = getattr(kernel, "py_func", kernel)
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__qualname__}"


def location():
    """``(folder, origin)``: the folder numba caches the kernels in, as numba chose it for
    this process (``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the kernel modules when
    writable, else a user-wide folder), and which of these it is. ``(None, reason)`` when
    numba does not compile (``NUMBA_DISABLE_JIT=1``), or when numba's internals are not the
    ones nets reads and ``NUMBA_CACHE_DIR`` is unset (``(NUMBA_CACHE_DIR, ...)`` when set)."""
    compiled = [k for k in kernels() if k is not getattr(k, "py_func", k)]
    if not compiled:
        return None, "NUMBA_DISABLE_JIT is set: kernels run as Python"
    found = _numba_internals.cache_location(compiled[0])
    if found is None:
        folder = os.environ.get("NUMBA_CACHE_DIR", "").strip()
        if folder:
            return folder, "NUMBA_CACHE_DIR"
        return None, f"unknown: {_numba_internals.MISMATCH}"
    folder, kind = found
    return folder, _ORIGINS.get(kind, kind)


def status():
    """``{kernel name: variants}``: for every kernel, how many compiled variants (argument
    types) numba's cache holds that it would load in this process: compiled for this CPU,
    from the kernel's current code, by this process's compile path (the fast path and the
    plain one keep separate entries). 0: the kernel compiles on its first call, or the
    count is unknown (numba's internals are not the ones nets reads: ``location`` says
    so)."""
    return {name(kernel): _numba_internals.cached_variants(kernel) or 0
            for kernel in kernels()}


def set_notice(enabled):
    """Turn the one-line notice printed at a process's first kernel compile on or off
    (``nets warmup`` shows a progress bar instead)."""
    _jit.NOTICE["enabled"] = bool(enabled)


def compile_ahead(argv):
    """Run the command ``argv`` in a child process from this process's first kernel
    compile on: a command that calls, and so compiles into the same cache, kernels this
    process will need later, while this process compiles the ones it needs first (the
    locks of ``_numba_internals.Kernel.compile`` make each kernel compile once, in whichever
    process reaches it first; the other loads it). Nothing starts when every kernel this
    process calls is cached, nor on the plain compile path (``_jit``), which has no
    first-compile hook. The child never outlives this process: it is killed when this
    process exits, and the child's stdin is a pipe from this process that ``watch_parent``
    (which the child must call) turns into an exit when this process ends otherwise.
    Once this process has compiled a kernel, its first compile is past: nothing starts.
    """
    if not _jit.COMPILED["any"]:
        _jit.FIRST_COMPILE.append(lambda: _start_child(list(argv)))


def _start_child(argv):
    """Start ``compile_ahead``'s child; if it cannot start, this process compiles alone.
    (``subprocess`` is imported here: a process whose kernels are cached starts none.)"""
    import subprocess
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    except OSError:
        return None

    def end():
        child.kill()
        child.wait()
    atexit.register(end)
    return child


def watch_parent():
    """In a child started by ``compile_ahead``: end this process as soon as its stdin (the
    parent's pipe) closes, i.e. when the parent ends, however it ends."""
    def watch():
        sys.stdin.buffer.read()  # returns at end of file
        os.kill(os.getpid(), signal.SIGKILL)  # (now, whatever the main thread is doing)
    threading.Thread(target=watch, daemon=True).start()
