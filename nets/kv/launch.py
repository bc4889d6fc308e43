"""``python -m nets.kv.launch -n W [-s S] [--address ADDR] -- COMMAND ARGS...``

Runs ``COMMAND`` as ``W`` worker processes of one distributed store with ``S`` servers
(default ``W``): starts a Ray cluster on this machine bound to 127.0.0.1 and requiring a
fresh token (``RAY_AUTH_MODE=token``, set here, so Ray prints no notice about turning
authentication on), or joins the one at ``ADDR`` (the environment gives that cluster's
token: ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN``); creates the store's server and
coordinator actors in a namespace of their own, starts the workers with the environment
that ``nets.kv.create('dist_sync')`` reads, prints their output prefixed ``[rank]``, and
exits with the first non-zero return code of a worker (0 when all succeed). Every actor
and process it started ends with it, also on Ctrl-C: the actors belong to this process
(Ray ends them with it), a cluster it started is shut down, and workers still running are
terminated.
"""
import argparse
import os
import shutil
import sys

__all__ = ["main"]


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m nets.kv.launch",
        description="Run COMMAND as W workers of a nets.kv distributed store on Ray.")
    p.add_argument("-n", "--num-workers", type=int, required=True, help="worker processes")
    p.add_argument("-s", "--num-servers", type=int, default=None,
                   help="server actors (default: as many as workers)")
    p.add_argument("--address", default=None,
                   help="join the Ray cluster at this address (host:port of its GCS) "
                        "instead of starting one on 127.0.0.1 (with token authentication, "
                        "set RAY_AUTH_MODE=token and its RAY_AUTH_TOKEN)")
    p.add_argument("--object-store-memory", type=int, default=512 * 2**20,
                   help="bytes of Ray's object store for a cluster started here "
                        "(default 512 MiB)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- then the worker command and its arguments")
    return p


def main(argv=None):
    """Run the launcher (see the module's docstring); returns the exit code."""
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        _parser().error("give the worker command after --")
    if args.num_workers < 1 or (args.num_servers is not None and args.num_servers < 1):
        _parser().error("-n and -s must be >= 1")
    if shutil.which(command[0]) is None:  # (before a cluster is started for nothing)
        _parser().error(f"the worker command {command[0]!r} is not an executable file or a "
                        f"program on PATH")
    if args.address is None:  # a cluster of this machine: loopback only (read at Ray's import)
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ..base import NetsError
    from .cluster import timeout
    try:
        timeout()  # a bad NETS_KV_TIMEOUT is named here, not in every worker
    except NetsError as e:
        _parser().error(str(e))
    servers = args.num_servers or args.num_workers
    import ray

    from .cluster import Group, connect, run_workers, start_local
    group = None
    try:
        if args.address is None:
            address = start_local(args.object_store_memory)
        else:
            address = args.address
            connect(address, "nets-kv-launch")
        group = Group(args.num_workers, servers)
        codes = run_workers(command, [group.environment(r, address)
                                      for r in range(args.num_workers)])
        failed = [(r, c) for r, c in enumerate(codes) if c != 0]
        for rank, code in failed:
            print(f"nets.kv.launch: worker {rank} exited with code {code}", file=sys.stderr)
        return (failed[0][1] if failed[0][1] > 0 else 1) if failed else 0
    except KeyboardInterrupt:
        print("nets.kv.launch: interrupted; stopping the workers and the store",
              file=sys.stderr)
        return 130
    finally:
        if group is not None:
            group.close()
        if ray.is_initialized():
            ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
