"""Matrix factorization written as a user writes it (issue 43 item 4), against PyTorch on
the same data in the same run.

The nets program is the one an MXNet Gluon user writes (renamed ``mx`` -> ``nets``):

- a ``HybridBlock`` with two ``Embedding(sparse_grad=True)`` tables (100,000 users x 32,
  50,000 items x 32) whose ``hybrid_forward`` is ``(U(u) * V(i)).sum(axis=1)``;
- ``net.hybridize()`` (``--imperative``: not), ``gluon.loss.L2Loss()``,
  ``Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.05})``;
- the ids as float32 arrays (``nd.array`` of the whole columns, the default dtype, as MXNet
  programs pass them), a batch as slices ``users[s:e]`` of them;
- per batch: ``autograd.record()``, forward, loss, ``loss.backward()``,
  ``trainer.step(1024)``, and the loss read back, ``loss.mean().asnumpy()``.

PyTorch's is the same model written as a PyTorch user writes it: two
``nn.Embedding(sparse=True)`` tables, int64 ids, ``0.5 * mse_loss``, ``optim.SGD``,
``loss.item()`` every batch, on torch's default threads.

Data: W3 of ``run.py`` (``workloads.w3_arrays``: 2M ratings, Zipf item popularity) cut in
batches of 1,024. Each framework runs in its own worker process; after a warm-up pass
(numba compiles) the two alternate reps (their order rotating), each rep ``--batches``
batches (default 600, ~0.6M ratings, a third of an epoch: the run takes ~20 s).
Reports each side's median samples/s (min-max), the ratio (goal: nets >= 1.5x torch), and
one JSON line.

    python benchmarks/bench_mf_user.py [--reps 7] [--batches 600] [--imperative]
"""
import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as wl

BATCH, LR = wl.W3["batch"], wl.W3["sgd_lr"]


def nets_program(arrays, args):
    """The user's program; returns ``run(first_batch, n_batches) -> samples``."""
    from nets import autograd, gluon, nd
    from nets.gluon import nn

    class MF(gluon.HybridBlock):
        def __init__(self, n_users, n_items, dim, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.U = nn.Embedding(n_users, dim, sparse_grad=True)
                self.V = nn.Embedding(n_items, dim, sparse_grad=True)

        def hybrid_forward(self, F, u, i):
            return (self.U(u) * self.V(i)).sum(axis=1)

    net = MF(wl.W3["users"], wl.W3["items"], wl.W3["dim"])
    net.initialize()
    if not args.imperative:
        net.hybridize()
    loss_fn = gluon.loss.L2Loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    users, items = nd.array(arrays["user"]), nd.array(arrays["item"])  # float32
    ratings = nd.array(arrays["rating"])
    assert users.dtype == np.float32

    def run(first, n):
        total = 0.0
        for b in range(first, first + n):
            s, e = b * BATCH, (b + 1) * BATCH
            u, i, r = users[s:e], items[s:e], ratings[s:e]
            with autograd.record():
                loss = loss_fn(net(u, i), r)
            loss.backward()
            trainer.step(BATCH)
            total += loss.mean().asnumpy().item()
        return n * BATCH, float(total)
    return run


def torch_program(arrays, args):
    import torch
    from torch import nn
    torch.manual_seed(0)
    U = nn.Embedding(wl.W3["users"], wl.W3["dim"], sparse=True)
    V = nn.Embedding(wl.W3["items"], wl.W3["dim"], sparse=True)
    with torch.no_grad():  # nets' default initializer, Uniform(-0.07, 0.07)
        U.weight.uniform_(-0.07, 0.07)
        V.weight.uniform_(-0.07, 0.07)
    opt = torch.optim.SGD([U.weight, V.weight], lr=LR)
    users, items = torch.from_numpy(arrays["user"]), torch.from_numpy(arrays["item"])
    ratings = torch.from_numpy(arrays["rating"])

    def run(first, n):
        total = 0.0
        for b in range(first, first + n):
            s, e = b * BATCH, (b + 1) * BATCH
            opt.zero_grad()
            pred = (U(users[s:e]) * V(items[s:e])).sum(1)
            loss = 0.5 * nn.functional.mse_loss(pred, ratings[s:e])
            loss.backward()
            opt.step()
            total += loss.item()
        return n * BATCH, total
    return run


def worker(name, args, conn):
    try:
        _work(name, args, conn)
    except BaseException as err:  # the parent waits on the pipe: tell it
        conn.send(f"error: {name}: {err!r}")
        raise


def _work(name, args, conn):
    arrays = wl.w3_arrays(args.data_dir, False)
    run = (nets_program if name == "nets" else torch_program)(arrays, args)
    n_batches = len(arrays["rating"]) // BATCH
    run(0, min(args.batches, n_batches))  # warm-up: compiles, touches the tables' pages
    conn.send("ready")
    first = 0
    while conn.recv() == "rep":
        if first + args.batches > n_batches:
            first = 0
        import gc
        gc.collect()
        t = time.perf_counter()
        samples, loss_sum = run(first, args.batches)
        conn.send((samples / (time.perf_counter() - t), loss_sum / args.batches))
        first += args.batches
    conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batches", type=int, default=600, help="batches of 1,024 per rep")
    parser.add_argument("--imperative", action="store_true", help="do not hybridize")
    wl.add_data_dir(parser)
    args = parser.parse_args()
    wl.w3_arrays(args.data_dir, False)  # made once, before the workers load it
    ctx = mp.get_context("spawn")
    workers = {}
    for name in ("nets", "torch"):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(name, args, child))
        proc.start()
        workers[name] = (proc, parent)
    for _, conn in workers.values():
        msg = conn.recv()
        if msg != "ready":
            raise SystemExit(msg)
    rates = {name: [] for name in workers}
    losses = {name: [] for name in workers}
    order = list(workers)
    for rep in range(args.reps):
        for name in order[rep % 2:] + order[:rep % 2]:
            workers[name][1].send("rep")
            rate, loss = workers[name][1].recv()
            rates[name].append(rate)
            losses[name].append(loss)
    for proc, conn in workers.values():
        conn.send("stop")
        proc.join()
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = med["nets"] / med["torch"]
    import nets
    import torch
    print(f"MF as a user writes it: {args.reps} reps of {args.batches} batches of {BATCH}, "
          f"{'imperative' if args.imperative else 'hybridized'}; nets threads "
          f"{nets.get_num_threads()}, torch {torch.__version__} threads {torch.get_num_threads()}")
    print("| program | samples/s (median) | min-max | mean loss, last rep |")
    print("| --- | --- | --- | --- |")
    for name, label in (("nets", "nets Embedding(sparse_grad) + SGD"),
                        ("torch", "torch nn.Embedding(sparse) + SGD")):
        print(f"| {label} | {med[name]:,.0f} | {min(rates[name]):,.0f}-{max(rates[name]):,.0f} "
              f"| {losses[name][-1]:.4f} |")
    print(f"| ratio nets / torch | {ratio:.2f}x | | goal >= 1.5x: "
          f"{'met' if ratio >= 1.5 else 'not met'} |")
    print(json.dumps({"bench": "mf_user", "reps": args.reps, "batches": args.batches,
                      "hybridized": not args.imperative, "machine": platform.machine(),
                      "nets_samples_s": round(med["nets"]), "torch_samples_s": round(med["torch"]),
                      "nets_all": [round(r) for r in rates["nets"]],
                      "torch_all": [round(r) for r in rates["torch"]],
                      "ratio": round(ratio, 3), "goal": 1.5, "met": ratio >= 1.5}))


if __name__ == "__main__":
    main()
