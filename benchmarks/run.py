"""nets against PyTorch (and scikit-learn) on sparse training, measured side by side.

    python benchmarks/run.py [--quick] [--reps 5] [--only W2,W3] [--json out.json]

Workloads (data: ``benchmarks/workloads.py``; README.md has the details and results):

- W0  Python overhead: one training step of a tiny dense model, us per step.
- W1  MXNet's Gluon sparse tutorial: 1M -> 128 -> 8 -> 1 with sigmoids, SGD, batches of 10
      read by ``LibSVMIter``; Dense / FullyConnectedSparse (dense gradient) / row_sparse
      gradient, against nn.Linear on the densified batch / torch.sparse.mm / EmbeddingBag.
- W2  click-through: FullyConnectedSparse(1M, 64) + ReLU + Dense(1), lazy Adam, batch 512,
      against EmbeddingBag + SparseAdam; and the dense-gradient variant of each; lazy AdaGrad
      and row-wise AdaGrad against EmbeddingBag + Adagrad.
- W3  matrix factorization: two Embedding(sparse_grad=True), dot-product model, L2 loss,
      batch 1024, SGD, lazy Adam, lazy AdaGrad and row-wise AdaGrad; against
      nn.Embedding(sparse=True) + SGD / SparseAdam / Adagrad and dense Adam.
- W4  LibSVM parsing of the W2 file: load_libsvm and LibSVMIter against scikit-learn's
      load_svmlight_file and a raw read(), in MB/s.
- W5  kernels: csr . dense and csr.T . dense -> row_sparse on W2 batches, a lazy Adam row
      update of 1M x 64, each against the time its bytes take at this machine's bandwidth
      (a numpy copy of 1 GB).

Every variant runs in its own worker process (so its peak RSS is its own), which builds
its data and model, warms up (numba compiles, memory is touched), then runs one timed
repetition each time the driver asks. The driver interleaves the variants of a workload
rep by rep (rotating their order) so that load from other jobs on the machine hits all of
them alike, and reports median/min/max over ``--reps`` plus each worker's peak RSS. Variants
whose framework is not installed are skipped. Dense-gradient variants are timed on the
first batches of the epoch only (marked ``*``): a full epoch of them would take minutes,
and their per-sample rate does not change along the epoch. The sparse torch references
also run on one thread (``-1t``); goals compare with the faster torch run. Every worker
gets the same glibc malloc thresholds (``MALLOC_ENV``; ``--no-malloc-tuning`` drops them).
"""
import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # nets from this checkout, not an installed one
import workloads as wl

# -- variants: (workload, key) -> framework, label, unit, batches per rep (None: the epoch) --

VARIANTS = [
    ("W0", "nets", "nets", "tiny step (Dense 16->1, L2, SGD)", "us/step", None),
    ("W0", "torch", "torch", "tiny step (Linear 16->1, MSE, SGD)", "us/step", None),
    ("W1", "nets-dense", "nets", "Dense (dense grad)", "samples/s", 5),
    ("W1", "nets-fcs", "nets", "FullyConnectedSparse, dense grad", "samples/s", 5),
    ("W1", "nets-rsp", "nets", "FullyConnectedSparse, row_sparse grad", "samples/s", None),
    ("W1", "torch-linear", "torch", "nn.Linear on dense batch", "samples/s", 5),
    ("W1", "torch-spmm", "torch", "torch.sparse.mm, dense grad", "samples/s", 5),
    ("W1", "torch-bag", "torch", "EmbeddingBag(sparse=True)", "samples/s", None),
    ("W1", "torch-bag-1t", "torch", "EmbeddingBag(sparse=True), 1 thread", "samples/s", None),
    ("W2", "nets-rsp", "nets", "row_sparse grad + lazy Adam", "samples/s", None),
    ("W2", "nets-dense", "nets", "dense grad + Adam", "samples/s", 4),
    ("W2", "torch-sparse", "torch", "EmbeddingBag(sparse) + SparseAdam", "samples/s", None),
    ("W2", "torch-sparse-1t", "torch", "EmbeddingBag(sparse) + SparseAdam, 1 thread",
     "samples/s", None),
    ("W2", "torch-dense", "torch", "EmbeddingBag + Adam", "samples/s", 4),
    ("W2", "nets-adagrad", "nets", "row_sparse grad + lazy AdaGrad", "samples/s", None),
    ("W2", "nets-rowwise", "nets", "row_sparse grad + lazy row-wise AdaGrad", "samples/s", None),
    ("W2", "torch-adagrad", "torch", "EmbeddingBag(sparse) + Adagrad", "samples/s", None),
    ("W3", "nets-sgd", "nets", "Embedding(sparse_grad) + SGD", "samples/s", None),
    ("W3", "nets-adam", "nets", "Embedding(sparse_grad) + lazy Adam", "samples/s", None),
    ("W3", "torch-sgd", "torch", "Embedding(sparse) + SGD", "samples/s", None),
    ("W3", "torch-sgd-1t", "torch", "Embedding(sparse) + SGD, 1 thread", "samples/s", None),
    ("W3", "torch-adam", "torch", "Embedding(sparse) + SparseAdam", "samples/s", None),
    ("W3", "torch-adam-1t", "torch", "Embedding(sparse) + SparseAdam, 1 thread", "samples/s",
     None),
    ("W3", "torch-dense-adam", "torch", "Embedding + Adam (dense)", "samples/s", 20),
    ("W3", "nets-adagrad", "nets", "Embedding(sparse_grad) + lazy AdaGrad", "samples/s", None),
    ("W3", "nets-rowwise", "nets", "Embedding(sparse_grad) + lazy row-wise AdaGrad",
     "samples/s", None),
    ("W3", "torch-adagrad", "torch", "Embedding(sparse) + Adagrad", "samples/s", None),
    ("W4", "nets-load", "nets", "load_libsvm", "MB/s", None),
    ("W4", "nets-iter", "nets", "LibSVMIter(batch 512) full pass", "MB/s", None),
    ("W4", "sklearn", "sklearn", "sklearn load_svmlight_file", "MB/s", None),
    ("W4", "read", "python", "raw read()", "MB/s", None),
    ("W5", "bandwidth", "numpy", "numpy copy of 1 GB", "GB/s", None),
    ("W5", "csr-dense", "nets", "dot(csr 512 x 1M, dense 1M x 64)", "ms", None),
    ("W5", "csr-t-dense", "nets", "dot(csr.T, dense 512 x 64) -> row_sparse", "ms", None),
    ("W5", "lazy-adam", "nets", "lazy Adam update, 1M x 64", "ms", None),
]
MODULES = {"nets": "nets", "torch": "torch", "sklearn": "sklearn", "numpy": "numpy",
           "python": "json"}
MXNET_LIBSVMITER_MBS = 110  # the top of MXNet's LibSVMIter figure (~90-110 MB/s)


# ============================================================================ workers =====
# A setup function builds everything a variant needs and returns ``rep(batches)``, which
# runs one timed repetition and returns ``(seconds, amount)`` for the ``samples/s`` and
# ``MB/s`` units (the worker divides), else ``(value, extra)`` in the variant's unit with
# an optional dict of details (W5: the bytes a kernel call must move).

def _timed(fn):
    gc.collect()
    start = time.perf_counter()
    amount = fn()
    return time.perf_counter() - start, amount


# -- nets --------------------------------------------------------------------------------

def _nets_csr(arrays, n_features):
    from nets.arrays.csr import CSRNDArray
    return CSRNDArray(arrays["data"], arrays["indices"], arrays["indptr"],
                      (len(arrays["indptr"]) - 1, n_features))


def _nets_train_step(args, net, loss_fn, trainer, batch_size):
    """One training step; the model and the loss are hybridized (each runs as its cached
    graph, as a Gluon user does for speed) unless ``--imperative``."""
    from nets import autograd
    if not args.imperative:
        net.hybridize()
        loss_fn.hybridize()

    def step(*inputs_and_label):
        *inputs, label = inputs_and_label
        with autograd.record():
            loss = loss_fn(net(*inputs), label)
        loss.backward()
        trainer.step(batch_size)
    return step


def nets_w0(args, key):
    import nets
    from nets import layers, nd
    rng = np.random.default_rng(0)
    x = nd.array(rng.random((8, 16), dtype=np.float32))
    y = nd.array(rng.random(8, dtype=np.float32))
    net = layers.Dense(1, in_units=16)
    net.initialize()
    step = _nets_train_step(args, net, nets.loss.L2Loss(),
                            nets.Trainer(net.collect_params(), "sgd"), 8)

    def rep(_):
        def run():
            for _ in range(args.w0_steps):
                step(x, y)
        return _timed(run)[0] / args.w0_steps * 1e6, None
    return rep


def nets_w1(args, key):
    import nets
    from nets import layers
    from nets.data import LibSVMIter
    n, (h1, h2) = wl.W1["features"], wl.W1["hidden"]
    it = LibSVMIter(data_libsvm=wl.w1_libsvm(args.data_dir), data_shape=(n,), label_shape=(1,),
                    batch_size=wl.W1["batch"])
    first = {"nets-dense": lambda: layers.Dense(h1, in_units=n),
             "nets-fcs": lambda: layers.FullyConnectedSparse(n, h1),
             "nets-rsp": lambda: layers.FullyConnectedSparse(n, h1,
                                                             weight_grad_stype="row_sparse")}[key]
    net = layers.HybridSequential()  # the tutorial's network, sigmoid on the output included
    net.add(first(), layers.Activation("sigmoid"), layers.Dense(h2, in_units=h1),
            layers.Activation("sigmoid"), layers.Dense(1, in_units=h2),
            layers.Activation("sigmoid"))
    net.initialize()
    step = _nets_train_step(args, net, nets.loss.SigmoidBinaryCrossEntropyLoss(),
                            nets.Trainer(net.collect_params(), "sgd"), wl.W1["batch"])

    def rep(limit):
        def run():
            it.reset()
            count = 0
            for k, batch in enumerate(it):
                if k == limit:
                    break
                step(batch.data[0], batch.label[0])
                count += batch.data[0].shape[0]
            return count
        return _timed(run)
    return rep


# the optimizer of a nets variant, when not Adam (W2) / lazy Adam (W3)
NETS_OPTIMIZERS = {"nets-adagrad": "adagrad", "nets-rowwise": "rowwise_adagrad"}


def nets_w2(args, key):
    import nets
    from nets import layers
    from nets.arrays.dense import NDArray
    arrays = wl.w2_arrays(args.data_dir, args.quick)
    X, y = _nets_csr(arrays, wl.W2["features"]), NDArray(arrays["label"])
    net = layers.HybridSequential()
    net.add(layers.FullyConnectedSparse(
        wl.W2["features"], wl.W2["units"],
        weight_grad_stype="default" if key == "nets-dense" else "row_sparse"),
        layers.Activation("relu"), layers.Dense(1, in_units=wl.W2["units"]))
    net.initialize()
    optimizer = NETS_OPTIMIZERS.get(key, "adam")
    trainer = nets.Trainer(net.collect_params(), optimizer,
                           {"learning_rate": wl.W2["lr"], "lazy_update": True})
    step = _nets_train_step(args, net, nets.loss.SigmoidBinaryCrossEntropyLoss(), trainer,
                            wl.W2["batch"])
    spans = wl.batches(arrays, wl.W2["batch"])

    def rep(limit):
        def run():
            for s, e in spans[:limit]:
                step(X[s:e], y[s:e])
            return len(spans[:limit]) * wl.W2["batch"]
        return _timed(run)
    return rep


def nets_w3(args, key):
    import nets
    from nets import layers
    from nets.arrays.dense import NDArray
    arrays = wl.w3_arrays(args.data_dir, args.quick)
    dim = wl.W3["dim"]

    class MF(layers.HybridBlock):
        def __init__(self):
            super().__init__()
            self.user = layers.Embedding(wl.W3["users"], dim, sparse_grad=True)
            self.item = layers.Embedding(wl.W3["items"], dim, sparse_grad=True)

        def hybrid_forward(self, F, users, items):
            return F.sum(self.user(users) * self.item(items), axis=1)

    net = MF()
    net.initialize()
    opt = ("sgd", {"learning_rate": wl.W3["sgd_lr"]}) if key == "nets-sgd" else \
        (NETS_OPTIMIZERS.get(key, "adam"), {"learning_rate": wl.W3["adam_lr"], "lazy_update": True})
    step = _nets_train_step(args, net, nets.loss.L2Loss(),
                            nets.Trainer(net.collect_params(), *opt), wl.W3["batch"])
    users, items, ratings = arrays["user"], arrays["item"], arrays["rating"]
    spans = wl.batches(arrays, wl.W3["batch"])

    def rep(limit):
        def run():
            for s, e in spans[:limit]:
                step(NDArray(users[s:e]), NDArray(items[s:e]), NDArray(ratings[s:e]))
            return len(spans[:limit]) * wl.W3["batch"]
        return _timed(run)
    return rep


def nets_w4(args, key):
    from nets.data import LibSVMIter, load_libsvm
    path = wl.w2_libsvm(args.data_dir, args.quick)
    mb, n = os.path.getsize(path) / 1e6, wl.W2["features"]

    def load():
        load_libsvm(path, n_features=n, zero_based=True)
        return mb

    def iterate():
        for _ in LibSVMIter(data_libsvm=path, data_shape=(n,), batch_size=wl.W2["batch"]):
            pass
        return mb
    fn = load if key == "nets-load" else iterate
    return lambda _: _timed(fn)


def nets_w5(args, key):
    """One rep: the mean time in ms of the kernel over ``w5_calls`` calls on W2 batches;
    ``bytes`` is what each call must move at least (the driver divides it by the bandwidth
    the ``bandwidth`` variant measured, for the goal "within 3x of the bound")."""
    from nets import nd
    from nets.optim import create
    arrays = wl.w2_arrays(args.data_dir, args.quick)
    X = _nets_csr(arrays, wl.W2["features"])
    units, b = wl.W2["units"], wl.W2["batch"]
    xs = [X[s:e] for s, e in wl.batches(arrays, b)[:args.w5_calls]]
    rng = np.random.default_rng(0)  # nd.array: the weight in a buffer nets allocated
    w = nd.array(rng.standard_normal((wl.W2["features"], units), dtype=np.float32))
    g = nd.array(rng.standard_normal((b, units), dtype=np.float32))
    row = units * 4
    touched = [len(np.unique(x._indices)) for x in xs]
    csr_bytes = [x.nnz * 12 + (b + 1) * 8 for x in xs]
    if key == "csr-dense":  # each touched weight row read once, the output written
        calls = [lambda x=x: nd.sparse.dot(x, w) for x in xs]
        nbytes = [t * row + c + b * row for t, c in zip(touched, csr_bytes)]
    elif key == "csr-t-dense":  # g read, each touched row written with its index
        calls = [lambda x=x: nd.sparse.dot(x, g, transpose_a=True) for x in xs]
        nbytes = [t * (row + 8) + c + b * row for t, c in zip(touched, csr_bytes)]
    else:  # weight, mean, var read and written, the gradient read, per touched row
        grads = [nd.sparse.dot(x, g, transpose_a=True) for x in xs]
        opt = create("adam", learning_rate=0.01, lazy_update=True)
        state = opt.create_state(0, w)
        calls = [lambda gr=gr: opt.update(0, w, gr, state) for gr in grads]
        nbytes = [t * 7 * row for t in touched]
    info = {"bytes": float(np.mean(nbytes)), "touched_rows": float(np.mean(touched))}

    def rep(_):
        def run():
            for call in calls:
                call()
        return _timed(run)[0] / len(calls) * 1e3, info
    return rep


def numpy_w5(args, key):
    a = np.ones(1 << 28, np.float32)
    b = np.zeros_like(a)  # the warm-up rep touches its pages

    def rep(_):
        seconds = _timed(lambda: np.copyto(b, a))[0]
        return 2 * a.nbytes / seconds / 1e9, None
    return rep


def python_w4(args, key):
    path = wl.w2_libsvm(args.data_dir, args.quick)
    mb = os.path.getsize(path) / 1e6

    def read():
        with open(path, "rb") as f:
            f.read()
        return mb
    return lambda _: _timed(read)


def sklearn_w4(args, key):
    from sklearn.datasets import load_svmlight_file
    path = wl.w2_libsvm(args.data_dir, args.quick)
    mb = os.path.getsize(path) / 1e6

    def load():
        load_svmlight_file(path, n_features=wl.W2["features"], zero_based=True)
        return mb
    return lambda _: _timed(load)


# -- torch ---------------------------------------------------------------------------------

def _torch(key):
    """torch, seeded; a ``-1t`` variant runs on one thread (the default uses every core)."""
    import torch
    torch.manual_seed(0)
    if key.endswith("-1t"):
        torch.set_num_threads(1)
    return torch


def _uniform_(torch, *tensors):
    """nets' default initializer, Uniform(-0.07, 0.07), so both frameworks see equal values."""
    with torch.no_grad():
        for t in tensors:
            t.uniform_(-0.07, 0.07)


def torch_w0(args, key):
    torch = _torch(key)
    x, y = torch.rand(8, 16), torch.rand(8)
    net = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x).squeeze(1), y) * 0.5
        loss.backward()
        opt.step()

    def rep(_):
        def run():
            for _ in range(args.w0_steps):
                step()
        return _timed(run)[0] / args.w0_steps * 1e6, None
    return rep


def _torch_bags(torch, arrays, s, e):
    """Batch rows ``[s, e)`` as EmbeddingBag input: flat ids, offsets, per-sample weights."""
    ptr = arrays["indptr"]
    lo, hi = ptr[s], ptr[e]
    return (torch.from_numpy(arrays["indices"][lo:hi]), torch.from_numpy(ptr[s:e] - lo),
            torch.from_numpy(arrays["data"][lo:hi]))


def torch_w1(args, key):
    torch = _torch(key)
    nn = torch.nn
    arrays = wl.w1_arrays(args.data_dir)
    n, (h1, h2), bs = wl.W1["features"], wl.W1["hidden"], wl.W1["batch"]
    bag = key.startswith("torch-bag")
    if bag:
        first = nn.EmbeddingBag(n, h1, mode="sum", sparse=True)
        _uniform_(torch, first.weight)
    else:  # the weight as (in, out), as nets' FullyConnectedSparse and sparse.mm take it
        first = nn.Linear(n, h1) if key == "torch-linear" else None
        weight = first.weight if first is not None else nn.Parameter(torch.empty(n, h1))
        _uniform_(torch, weight)
    bias = nn.Parameter(torch.zeros(h1))
    head = nn.Sequential(nn.Sigmoid(), nn.Linear(h1, h2), nn.Sigmoid(), nn.Linear(h2, 1),
                         nn.Sigmoid())
    params = [bias] + list(head.parameters()) + (
        list(first.parameters()) if first is not None else [weight])
    opt = torch.optim.SGD(params, lr=0.01)
    loss_fn = nn.BCEWithLogitsLoss()
    labels = torch.from_numpy(arrays["label"])
    spans = wl.batches(arrays, bs)

    def forward(s, e):
        ids, offsets, values = _torch_bags(torch, arrays, s, e)
        if bag:
            return first(ids, offsets, per_sample_weights=values)
        rows = torch.repeat_interleave(torch.arange(e - s), torch.diff(torch.cat(
            [offsets, torch.tensor([len(ids)])])))
        if key == "torch-linear":
            dense = torch.zeros(e - s, n)
            dense[rows, ids] = values
            return first(dense)
        batch = torch.sparse_coo_tensor(torch.stack([rows, ids]), values, (e - s, n),
                                        check_invariants=False)
        return torch.sparse.mm(batch, weight)

    def rep(limit):
        def run():
            for s, e in spans[:limit]:
                opt.zero_grad()
                loss = loss_fn(head(forward(s, e) + bias).squeeze(1), labels[s:e])
                loss.backward()
                opt.step()
            return len(spans[:limit]) * bs
        return _timed(run)
    return rep


def torch_w2(args, key):
    torch = _torch(key)
    nn = torch.nn
    arrays = wl.w2_arrays(args.data_dir, args.quick)
    sparse = key != "torch-dense"
    bag = nn.EmbeddingBag(wl.W2["features"], wl.W2["units"], mode="sum", sparse=sparse)
    _uniform_(torch, bag.weight)
    bias = nn.Parameter(torch.zeros(wl.W2["units"]))
    out = nn.Linear(wl.W2["units"], 1)
    rest = [bias] + list(out.parameters())
    lr = wl.W2["lr"]
    opts = ([torch.optim.Adagrad(list(bag.parameters()) + rest, lr=lr)] if key == "torch-adagrad"
            else [torch.optim.SparseAdam(list(bag.parameters()), lr=lr),
                  torch.optim.Adam(rest, lr=lr)] if sparse
            else [torch.optim.Adam(list(bag.parameters()) + rest, lr=lr)])
    loss_fn = nn.BCEWithLogitsLoss()
    labels = torch.from_numpy(arrays["label"])
    spans = wl.batches(arrays, wl.W2["batch"])

    def rep(limit):
        def run():
            for s, e in spans[:limit]:
                for o in opts:
                    o.zero_grad()
                ids, offsets, values = _torch_bags(torch, arrays, s, e)
                hidden = torch.relu(bag(ids, offsets, per_sample_weights=values) + bias)
                loss = loss_fn(out(hidden).squeeze(1), labels[s:e])
                loss.backward()
                for o in opts:
                    o.step()
            return len(spans[:limit]) * wl.W2["batch"]
        return _timed(run)
    return rep


def torch_w3(args, key):
    torch = _torch(key)
    nn = torch.nn
    arrays = wl.w3_arrays(args.data_dir, args.quick)
    sparse = key != "torch-dense-adam"
    user = nn.Embedding(wl.W3["users"], wl.W3["dim"], sparse=sparse)
    item = nn.Embedding(wl.W3["items"], wl.W3["dim"], sparse=sparse)
    _uniform_(torch, user.weight, item.weight)
    params = [user.weight, item.weight]
    opt = (torch.optim.SGD(params, lr=wl.W3["sgd_lr"]) if key.startswith("torch-sgd") else
           torch.optim.Adagrad(params, lr=wl.W3["adam_lr"]) if key == "torch-adagrad" else
           torch.optim.SparseAdam(params, lr=wl.W3["adam_lr"]) if sparse else
           torch.optim.Adam(params, lr=wl.W3["adam_lr"]))
    users, items = torch.from_numpy(arrays["user"]), torch.from_numpy(arrays["item"])
    ratings = torch.from_numpy(arrays["rating"])
    spans = wl.batches(arrays, wl.W3["batch"])
    mse = nn.functional.mse_loss

    def rep(limit):
        def run():
            for s, e in spans[:limit]:
                opt.zero_grad()
                pred = (user(users[s:e]) * item(items[s:e])).sum(1)
                loss = mse(pred, ratings[s:e]) * 0.5
                loss.backward()
                opt.step()
            return len(spans[:limit]) * wl.W3["batch"]
        return _timed(run)
    return rep


SETUPS = {("nets", "W0"): nets_w0, ("nets", "W1"): nets_w1, ("nets", "W2"): nets_w2,
          ("nets", "W3"): nets_w3, ("nets", "W4"): nets_w4, ("nets", "W5"): nets_w5,
          ("torch", "W0"): torch_w0, ("torch", "W1"): torch_w1, ("torch", "W2"): torch_w2,
          ("torch", "W3"): torch_w3, ("sklearn", "W4"): sklearn_w4,
          ("python", "W4"): python_w4, ("numpy", "W5"): numpy_w5}


def _peak_rss_mb():
    """This process's peak resident set, MB. Linux: ``VmHWM``, the high-water mark of this
    program's own memory; ``ru_maxrss`` is not, since it keeps the parent's peak across
    fork + exec (a driver that had just generated 500 MB of data gave every worker 500 MB)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(args):
    """Serve one variant: set up, warm up, then one rep per 'rep' line on stdin; replies are
    JSON lines on the original stdout (the variant's own prints go to stderr)."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    workload, key = args.worker.split(":")
    framework, _, unit, limit = next(v[2:] for v in VARIANTS if v[:2] == (workload, key))
    try:
        base = _peak_rss_mb()
        rep = SETUPS[framework, workload](args, key)
        rep(limit)  # warm-up
        reply.write(json.dumps({"ready": True, "base_rss_mb": base}) + "\n")
        for line in sys.stdin:
            if line.strip() != "rep":
                break
            value, extra = rep(limit)
            if unit in ("samples/s", "MB/s"):
                value = extra / value  # (seconds, amount) -> amount per second
                extra = None
            reply.write(json.dumps({"value": value, "extra": extra}) + "\n")
        reply.write(json.dumps({"peak_rss_mb": _peak_rss_mb()}) + "\n")
    except Exception:
        reply.write(json.dumps({"error": traceback.format_exc()}) + "\n")


# ============================================================================= driver =====

class Worker:
    def __init__(self, args, workload, key):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", f"{workload}:{key}",
               "--data-dir", args.data_dir, "--w0-steps", str(args.w0_steps),
               "--w5-calls", str(args.w5_calls)] + (["--quick"] if args.quick else []) + (
                   ["--imperative"] if args.imperative else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1, env=_worker_env(args))
        self.error = None
        self.base_rss = None

    def _read(self):
        line = self.proc.stdout.readline()
        msg = json.loads(line) if line else {"error": "worker exited without a reply"}
        if "error" in msg:
            self.error = msg["error"]
        return msg

    def wait_ready(self):
        self.base_rss = self._read().get("base_rss_mb")

    def rep(self):
        self.proc.stdin.write("rep\n")
        return self._read()

    def finish(self):
        if self.error is None:
            self.proc.stdin.write("done\n")
            self.proc.stdin.flush()
            peak = self._read().get("peak_rss_mb")
        else:
            peak = None
        self.proc.stdin.close()
        self.proc.wait()
        return peak


# glibc returns freed memory above these sizes to the kernel at once, so a training step
# that frees and reallocates a few MB of temporaries page-faults them in again on every step
# (~1000 faults per W2 step of PyTorch here, -20% throughput). Every worker, whatever its
# framework, gets the same thresholds unless --no-malloc-tuning.
MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": str(256 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def _worker_env(args):
    env = dict(os.environ)
    if not args.no_malloc_tuning:
        for k, v in MALLOC_ENV.items():
            env.setdefault(k, v)
    return env


def run_workload(args, workload, variants):
    """Start a worker per variant, interleave their reps, collect stats and peak RSS."""
    workers = {key: Worker(args, workload, key) for key in variants}
    for w in workers.values():  # set-ups run side by side; the timed reps one at a time
        w.wait_ready()
    values = {key: [] for key in variants}
    extras = {key: [] for key in variants}
    keys = list(variants)
    for r in range(args.reps):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:  # rotate the order
            w = workers[key]
            if w.error is None:
                msg = w.rep()
                if "value" in msg:
                    values[key].append(msg["value"])
                    extras[key].append(msg["extra"])
    results = {}
    for key, w in workers.items():
        peak = w.finish()
        if w.error is not None:
            print(f"[{workload} {key}] failed:\n{w.error}", file=sys.stderr)
            results[key] = {"error": w.error.strip().splitlines()[-1]}
            continue
        v = np.array(values[key])
        results[key] = {"median": float(np.median(v)), "min": float(v.min()),
                        "max": float(v.max()), "reps": len(v), "peak_rss_mb": peak,
                        "base_rss_mb": w.base_rss, "values": v.tolist()}
        if extras[key][0] is not None:
            results[key]["extra"] = {k: float(np.median([e[k] for e in extras[key]]))
                                     for k in extras[key][0]}
    return results


def _median(res, w, key):
    """The median of variant ``key``; for a torch reference, the better of its default and
    one-thread runs (on this shared 2-core machine either can win)."""
    found = [res[w][k]["median"] for k in (key, key + "-1t") if "median" in res[w].get(k, {})]
    if not found:
        raise KeyError(key)
    return max(found)


def _ratio(res, w, a, b, goal, what, lower_is_better=False):
    """``res[w][a] / res[w][b]`` (medians) against ``goal``."""
    try:
        x, y = _median(res, w, a), _median(res, w, b)
    except KeyError:
        return None
    value = y / x if lower_is_better else x / y
    return {"what": what, "value": value, "goal": goal,
            "met": None if goal is None else value >= goal}


def goals(res):
    """The issue's goals as ratios of medians measured in this run."""
    out = [
        _ratio(res, "W1", "nets-rsp", "torch-bag", 1.5, "W1 row_sparse: nets / EmbeddingBag"),
        _ratio(res, "W1", "torch-bag", "torch-linear", None, "W1 gap: torch bag / Linear"),
        _ratio(res, "W1", "nets-rsp", "nets-dense", None, "W1 gap: nets row_sparse / Dense"),
        _ratio(res, "W1", "nets-rsp", "nets-fcs", None, "W1 gap: row_sparse / dense grad"),
        _ratio(res, "W2", "nets-rsp", "torch-sparse", 5.0, "W2: nets / torch SparseAdam"),
        _ratio(res, "W2", "nets-rsp", "nets-dense", None, "W2 gap: nets sparse / dense grad"),
        _ratio(res, "W2", "torch-sparse", "torch-dense", None,
               "W2 gap: torch sparse / dense grad"),
        _ratio(res, "W3", "nets-sgd", "torch-sgd", 1.5, "W3 SGD: nets / torch"),
        _ratio(res, "W3", "nets-adam", "torch-adam", 1.5, "W3 Adam: nets / SparseAdam"),
        _ratio(res, "W3", "nets-adam", "torch-dense-adam", None, "W3: nets lazy / dense Adam"),
        _ratio(res, "W2", "nets-adagrad", "torch-adagrad", None, "W2 AdaGrad: nets / torch"),
        _ratio(res, "W2", "nets-rowwise", "torch-adagrad", None,
               "W2 row-wise AdaGrad: nets / torch Adagrad"),
        _ratio(res, "W3", "nets-adagrad", "torch-adagrad", None, "W3 AdaGrad: nets / torch"),
        _ratio(res, "W3", "nets-rowwise", "torch-adagrad", None,
               "W3 row-wise AdaGrad: nets / torch Adagrad"),
        _ratio(res, "W4", "nets-load", "sklearn", 10.0, "W4: load_libsvm / sklearn"),
        _ratio(res, "W0", "nets", "torch", 2.0, "W0: torch us / nets us",
               lower_is_better=True),
    ]
    if "W4" in res and "median" in res["W4"].get("nets-iter", {}):
        v = res["W4"]["nets-iter"]["median"] / MXNET_LIBSVMITER_MBS
        # a figure, not a goal: MXNet's rate is not measured in this run
        out.append({"what": f"W4: LibSVMIter / MXNet's published {MXNET_LIBSVMITER_MBS} "
                            f"MB/s", "value": v, "goal": None, "met": None})
    bandwidth = res.get("W5", {}).get("bandwidth", {}).get("median")
    for key in ("csr-dense", "csr-t-dense", "lazy-adam"):
        r = res.get("W5", {}).get(key, {})
        if "median" in r and bandwidth:
            bound_ms = r["extra"]["bytes"] / (bandwidth * 1e9) * 1e3
            v = r["median"] / bound_ms
            # a figure: how far a kernel is from its bytes at this machine's copy bandwidth
            out.append({"what": f"W5 {key}: {r['median']:.3f} ms / bound {bound_ms:.3f} ms",
                        "value": v, "goal": None, "met": None, "lower_is_better": True})
    for w, a, b in (("W2", "nets-rsp", "torch-sparse"), ("W3", "nets-sgd", "torch-sgd"),
                    ("W3", "nets-adam", "torch-adam")):
        try:
            x, y = res[w][a]["peak_rss_mb"], res[w][b]["peak_rss_mb"]
        except (KeyError, TypeError):
            continue
        out.append({"what": f"{w} peak RSS: {b} / {a}", "value": y / x, "goal": 1.0,
                    "met": x <= y})
    return [g for g in out if g is not None]


def print_report(args, res, gls):
    print(f"\nnets benchmarks: {'quick' if args.quick else 'full'} run, {args.reps} reps after "
          f"a warm-up, {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"nets threads {_nets_threads()}")
    print(f"{'workload':8} {'variant':42} {'unit':>9} {'median':>11} {'min':>11} {'max':>11} "
          f"{'peak RSS MB':>12}")
    labels = {(v[0], v[1]): (v[3], v[4], v[5]) for v in VARIANTS}
    for workload, variants in res.items():
        for key, r in variants.items():
            label, unit, limit = labels[workload, key]
            label = f"{key}: {label}" + (" *" if limit else "")
            if "error" in r:
                print(f"{workload:8} {label:42} failed: {r['error']}")
                continue
            print(f"{workload:8} {label:42} {unit:>9} {r['median']:11.4g} {r['min']:11.4g} "
                  f"{r['max']:11.4g} {r['peak_rss_mb']:12.0f}")
            if "extra" in r:
                print(f"{'':8} {'':42} " + ", ".join(f"{k} {v:.4g}" for k, v in
                                                    r["extra"].items()))
    print("* timed on the first batches of the epoch (W1: 5 of 100, W2: 4, W3: 20)")
    print("torch references in the goals: the better of the default and the 1-thread run")
    print("\ngoals (ratios of medians in this run):")
    for g in gls:
        met = "" if g["met"] is None else ("met" if g["met"] else "NOT met")
        goal = "" if g["goal"] is None else (("<= " if g.get("lower_is_better") else ">= ")
                                             + f"{g['goal']:g}")
        print(f"  {g['what']:52} {g['value']:9.3g}  {goal:>9}  {met}")


def _nets_threads():
    """The thread count nets' workers use and its source (``NETS_NUM_THREADS`` sets it)."""
    from nets import parallel
    return f"{parallel.get_num_threads()} ({parallel.num_threads_source()})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="W2/W4/W5 on 20,000 rows, W3 on 200,000 ratings: a smoke run")
    parser.add_argument("--reps", type=int, default=5, help="timed reps per variant (>= 1)")
    parser.add_argument("--only", default=None, help="comma-separated workloads, e.g. W2,W3")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    wl.add_data_dir(parser)
    parser.add_argument("--imperative", action="store_true",
                        help="run the nets models op by op (default: hybridized)")
    parser.add_argument("--no-malloc-tuning", action="store_true",
                        help="run the workers with glibc's default malloc thresholds")
    parser.add_argument("--w0-steps", type=int, default=2000, help=argparse.SUPPRESS)
    parser.add_argument("--w5-calls", type=int, default=50, help=argparse.SUPPRESS)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(HERE),
                                                          ".numba_cache"))
    if args.worker:
        return worker(args)
    wanted = args.only.split(",") if args.only else sorted({v[0] for v in VARIANTS})
    installed = {f: importlib.util.find_spec(m) is not None for f, m in MODULES.items()}
    skipped = sorted({v[2] for v in VARIANTS if v[0] in wanted and not installed[v[2]]})
    if skipped:
        print(f"not installed, skipped: {', '.join(skipped)}")
    start = time.perf_counter()
    _prepare_data(args, wanted)
    res = {}
    for workload in wanted:
        variants = [v[1] for v in VARIANTS if v[0] == workload and installed[v[2]]]
        t = time.perf_counter()
        res[workload] = run_workload(args, workload, variants)
        print(f"[{workload} done in {time.perf_counter() - t:.0f} s]", file=sys.stderr)
    gls = goals(res)
    print_report(args, res, gls)
    out = {"bench": "run", "quick": args.quick, "hybridized": not args.imperative,
           "reps": args.reps, "cpus": os.cpu_count(),
           "nets_threads": _nets_threads(),
           "malloc_env": {} if args.no_malloc_tuning else MALLOC_ENV,
           "python": platform.python_version(), "seconds": time.perf_counter() - start,
           "results": res, "goals": gls}
    for framework in ("nets", "torch", "sklearn"):
        if installed[framework]:
            out[framework] = __import__(framework).__version__
    print(f"total {out['seconds']:.0f} s")
    print(json.dumps(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def _prepare_data(args, wanted):
    """Generate the workloads' data once, before any worker starts."""
    if "W1" in wanted:
        wl.w1_libsvm(args.data_dir)
    if {"W2", "W4", "W5"} & set(wanted):
        wl.w2_arrays(args.data_dir, args.quick)
    if "W4" in wanted:
        wl.w2_libsvm(args.data_dir, args.quick)
    if "W3" in wanted:
        wl.w3_arrays(args.data_dir, args.quick)


if __name__ == "__main__":
    main()
