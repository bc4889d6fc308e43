"""The ``nets`` command line."""
import argparse
import sys


def _info(args):
    """Print versions, numba's threading layer and cache folder."""
    import os
    import platform

    import numpy
    import scipy

    import nets
    lines = [("nets", nets.__version__), ("python", platform.python_version()),
             ("numpy", numpy.__version__), ("scipy", scipy.__version__)]
    try:
        import numba
        from numba.core.config import NUMBA_NUM_THREADS
        layer = numba.config.THREADING_LAYER
        lines += [("numba", numba.__version__), ("numba threads", NUMBA_NUM_THREADS),
                  ("numba threading layer", layer)]
    except ImportError:
        lines.append(("numba", "not installed"))
    lines.append(("numba cache dir", os.environ.get("NUMBA_CACHE_DIR")
                  or "(default: __pycache__ beside each module)"))
    lines.append(("cpu count", os.cpu_count()))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    return 0


def build_parser():
    """The argument parser of ``nets`` (one sub-command per job)."""
    import nets
    parser = argparse.ArgumentParser(prog="nets", description="Fast sparse training on a CPU.")
    parser.add_argument("--version", action="version", version=f"nets {nets.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="print versions, numba threading layer and cache dir")
    p.set_defaults(func=_info)
    return parser


def main(argv=None):
    """Entry point of the ``nets`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
