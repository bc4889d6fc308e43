"""Numba kernels: pure functions over numpy arrays, nothing else from nets.

Each submodule imports numba, so submodules load on first attribute access
(``kernels.csr``): ``import nets`` neither imports numba nor compiles. Kernels
are compiled lazily on first call and cached on disk (``NUMBA_CACHE_DIR``), through
``_jit.jit``: numba's internals, which its fast start-up path uses, are in
``_numba_internals`` alone, and plain ``numba.njit`` compiles the kernels where they are
not what that module expects, or under ``NETS_PLAIN_NUMBA=1``.
Kernels trust their inputs; the operator layer validates before calling them.
"""
import importlib

__all__ = ["load_runtime"]


def load_runtime():
    """Import numba and the compile machinery now (seconds in a fresh process), so that a
    caller about to run kernels pays for it before its first call rather than inside it;
    this chooses the compile path (``_jit``). Compiles nothing; idempotent."""
    importlib.import_module(f"{__name__}._jit")


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"nets.kernels has no module {name!r}") from e
    globals()[name] = module
    return module
