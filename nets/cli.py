"""The ``nets`` command line: ``info``, ``demo``, ``train``, ``predict``.

Errors a user can cause end in one line on stderr, never a traceback: a missing or
unreadable file, a bad flag value (``--lr nan``, ``--wd -1``), an unwritable ``--save`` or
``--output`` path (found before any work), inconsistent feature counts, a file that is not
a model (exit code 2); running out of memory (exit code 1, naming the options that size
the work, such as ``--batch-size``); Ctrl-C (``nets: interrupted``, exit code 130). Any
other exception is a bug in nets and keeps its traceback, so that it can be reported.
"""
import argparse
import contextlib
import gc
import os
import sys
import tempfile
import time


def _info(args):
    """Print versions, the kernel thread count and where it comes from, numba's kernel cache
    folder (as numba chooses it for this process) and whether it holds every kernel. Cheap:
    it reads numba's cache index, compiling and loading nothing."""
    import platform

    import numpy
    import scipy

    import nets
    from .parallel import get_num_threads, num_threads_source
    lines = [("nets", nets.__version__), ("python", platform.python_version()),
             ("numpy", numpy.__version__), ("scipy", scipy.__version__)]
    try:
        import numba
        lines.append(("numba", numba.__version__))
    except ImportError:
        numba = None
        lines.append(("numba", "not installed"))
    lines.append(("threads", f"{get_num_threads()} (from {num_threads_source()})"))
    if numba is not None:
        from .kernels import cache
        folder, origin = cache.location()
        lines.append(("numba cache dir", f"{folder} ({origin})" if folder else origin))
        lines.append(("kernels", _cache_state(cache.status())))
    lines.append(("cpu count", os.cpu_count()))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    return 0


def _cache_state(status):
    """``nets info``'s line on the kernel cache, from ``kernels.cache.status()``."""
    cached, total = sum(1 for n in status.values() if n), len(status)
    variants = f"{sum(status.values())} compiled variants"
    if cached == total:
        return f"warm: {cached} of {total} kernels cached ({variants})"
    return (f"cold: {cached} of {total} kernels cached ({variants}); run `nets warmup` to "
            f"compile the rest ahead")


# -- warmup ------------------------------------------------------------------------------------

WARM_DTYPES = ("float32", "float64")
# every optimizer with a kernel of its own, with the options that take its other branches
WARM_OPTIMIZERS = (("sgd", {"momentum": 0.9}), ("adam", {}), ("adagrad", {}),
                   ("rowwise_adagrad", {}), ("ftrl", {}), ("rmsprop", {"centered": True}),
                   ("signum", {"momentum": 0.9}), ("signsgd", {}))


def _warm_steps(folder):
    """``(label, function)`` pairs: small runs of what the commands and layers do, which
    together call every kernel with each argument type they take in use (``tests/
    test_warmup.py`` checks that every kernel is reached)."""
    import functools
    steps = []
    for dtype in WARM_DTYPES:
        steps.append((f"libsvm {dtype}", functools.partial(_warm_libsvm, folder, dtype)))
        steps.append((f"sparse ops {dtype}", functools.partial(_warm_ops, dtype)))
        steps += [(f"train {name} {dtype}", functools.partial(_warm_train, name, opts, dtype))
                  for name, opts in WARM_OPTIMIZERS]
    return steps


def _warm_data(dtype, rows=64, features=40):
    from .data import make_sparse_dataset
    X, y, _ = make_sparse_dataset(rows, features, 4, task="binary", seed=0, dtype=dtype)
    return X, y


def _warm_libsvm(folder, dtype):
    """Write and read LibSVM files: labels, multi-label lists, qids; whole and streamed."""
    import numpy as np

    from .data import LibSVMIter, load_libsvm, save_libsvm
    from .nd import sparse
    X, y = _warm_data(dtype)
    path = os.path.join(folder, f"warm-{dtype}.libsvm")
    save_libsvm(path, X, y, query_id=np.arange(X.shape[0]))
    load_libsvm(path, dtype=dtype, query_id=True)
    for _ in LibSVMIter(data_libsvm=path, data_shape=(X.shape[1],), batch_size=16):
        pass
    labels = sparse.csr_matrix(np.eye(X.shape[0], 3, dtype=dtype))
    save_libsvm(path, X, labels)
    load_libsvm(path, dtype=dtype, multilabel=True)


def _warm_ops(dtype):
    """The sparse operators with kernels of their own, forward and backward."""
    import numpy as np

    from . import autograd, layers, nd
    from .utils import clip_global_norm
    X, _ = _warm_data(dtype, rows=16)
    Y = X * 2
    (X + Y).asnumpy(), (X * Y).asnumpy()
    for reduce in (nd.sum, nd.max):
        reduce(X, axis=0).asnumpy()
    nd.sum(nd.ones((16, 8), dtype=dtype), axis=1).asnumpy()
    w = nd.ones((5, X.shape[1]), dtype=dtype)
    X.attach_grad()
    with autograd.record():
        out = nd.dot(X, w, transpose_b=True)
    out.backward()
    rsp = nd.sparse.row_sparse_array((np.ones((2, 3), dtype), [1, 4]), shape=(6, 3))
    nd.add_n(rsp, rsp * 2).asnumpy()
    nd.square_sum(rsp, axis=1, keepdims=True).asnumpy()  # (factorization machines)
    # a csr batch times the rows a row_sparse weight stores (a distributed store's pull)
    pulled = nd.sparse.row_sparse_array((np.ones((2, 3), dtype), [1, 4]), shape=(X.shape[1], 3))
    nd.dot(X, pulled).asnumpy()
    # gradient rows numbered in a bitmap (a small table) and by a radix sort (a table far
    # larger than its ids)
    for ids, rows in ((nd.array([[1, 3], [3, 0]], dtype=dtype), 10),
                      (nd.array([1, 3], dtype="int64"), 10 ** 4)):
        emb = layers.Embedding(rows, 4, sparse_grad=True, dtype=dtype)
        emb.initialize()
        with autograd.record():
            out = emb(ids)
        out.backward()
        clip_global_norm([emb.weight.grad(), emb.weight.data()], 1.0)
    # the sum of a product in a cached graph: one fused operator (matrix factorization's
    # batch of dot products) and its gradient
    dots = _Dots()
    dots.hybridize()
    a = nd.ones((4, 3), dtype=dtype)
    a.attach_grad()
    for _ in range(2):  # (the first call traces the graph, the second runs it fused)
        with autograd.record():
            out = dots(a, nd.ones((4, 3), dtype=dtype))
        out.backward()


def _Dots():
    """A block of rows' dot products, ``(a * b).sum(axis=1)`` (made here: ``layers`` loads
    only when a warmup runs)."""
    from .layers import HybridBlock

    class Dots(HybridBlock):
        def hybrid_forward(self, F, a, b):
            return (a * b).sum(axis=1)
    return Dots()


def _warm_train(optimizer, options, dtype, cfg=None):
    """Two steps of ``nets train``'s model (by default a sparse first layer and a hidden
    layer; ``cfg``: the model of ``_train``, its feature count aside) with one optimizer,
    on CSR batches, with weights and gradients of ``dtype``."""
    from . import Trainer, autograd
    X, y = _warm_data(dtype)
    cfg = {"hidden": [4], "loss": "logistic", "classes": 2, "model": "mlp:4", **(cfg or {}),
           "features": X.shape[1]}
    net = _build(cfg)
    net.initialize()
    net.cast(dtype)
    trainer = Trainer(net.collect_params(), optimizer, {"learning_rate": 0.01, **options})
    loss_fn = _loss_fn(cfg)
    for lo in (0, 32):
        with autograd.record():
            loss = loss_fn(net(X[lo:lo + 32]), y[lo:lo + 32])
        loss.backward()
        trainer.step(32)


def _warm_ahead(cfg, optimizer, options):
    """Have ``nets train``'s training kernels (model ``cfg``, ``optimizer`` with
    ``options``) compile in a second process while this one compiles the parser, from this
    process's first kernel compile on: nothing starts when the cache is warm
    (``kernels.cache.compile_ahead``)."""
    import json

    from .kernels import cache
    spec = {"cfg": cfg, "optimizer": optimizer, "options": options}
    cache.compile_ahead([sys.executable, "-m", "nets", "warmup", "--ahead", json.dumps(spec)])


def _warm_ahead_child(spec):
    """``nets warmup --ahead SPEC``, the process ``_warm_ahead`` starts: the training steps
    of ``SPEC``, in float32 as ``nets train`` reads its files, printing nothing; it ends
    when its parent does."""
    import json

    from .kernels import cache
    cache.watch_parent()
    cache.set_notice(False)
    spec = json.loads(spec)
    _warm_train(spec["optimizer"], spec["options"], "float32", spec["cfg"])
    return 0


def _warmup(args):
    """Compile every kernel ahead into numba's cache, with a progress bar: idempotent (what
    the cache holds loads instead of compiling)."""
    from .kernels import cache
    _work_begins()
    if args.ahead is not None:
        return _warm_ahead_child(args.ahead)
    cache.set_notice(False)  # the bar says it
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="nets-warmup-") as folder:
            with _bar(_warm_steps(folder), desc="compiling kernels", unit="step",
                      leave=False) as bar:
                for label, step in bar:
                    bar.set_postfix_str(label)
                    step()
    finally:
        cache.set_notice(True)
    folder, _ = cache.location()
    print(f"{_cache_state(cache.status())} in {folder} ({time.perf_counter() - t0:.1f}s)")
    return 0


# -- training helpers shared by demo and train -------------------------------------------

def _reader(path, what, features, batch_size, read, keep=True):
    """``nets.data.LibSVMReader`` over the file ``path`` (the command's argument ``what``),
    zero-based; its complaint about a stream's unknown width in the command's options."""
    from . import NetsError
    from .data import LibSVMReader, StreamWidthError
    try:
        return LibSVMReader(path, batch_size, n_features=features, read=read, keep=keep)
    except StreamWidthError:
        raise NetsError(f"{what} {path} is a pipe or FIFO, which can be read only once: give "
                        f"--features N (the feature count) to train on it, or --read "
                        f"memory") from None


BAR_DELAY = 0.5  # seconds a pass runs before its progress bar is drawn


def _bar(iterable, **options):
    """tqdm's progress bar over ``iterable`` on stderr (``options``: tqdm's). In the ``nets``
    program its writes are serialised by a thread lock: tqdm's default lock also takes a
    multiprocessing lock (importing ``multiprocessing``) for bars that several processes
    draw on one terminal, which a nets command never does. tqdm's lock is process-wide, so
    a command run inside another process (``main([...])``) leaves it as it is."""
    from tqdm import tqdm
    if _PROGRAM["own"]:
        import threading
        tqdm.set_lock(threading.RLock())
    return tqdm(iterable, file=sys.stderr, **options)


def _run_epoch(net, loss_fn, batches, trainer=None, target=None, desc="", on_batch=None,
               what=None):
    """One pass over the ``(data, label)`` batches of the reader ``batches`` (its
    ``num_batches``, once known, sizes the progress bar), labels mapped by ``target`` (see
    ``_target``); trains when ``trainer`` is given. A label that is not a finite number
    raises ``NetsError`` naming the file (the command's argument ``what``) and its line,
    before the batch is used. Returns (mean loss, list of (label, output) numpy pairs for
    metrics)."""
    from . import autograd
    loss_sum, count, seen = 0.0, 0, []
    # (a bar on a terminal only: a log has no use for a redrawn line, and a pass without
    # one does not import tqdm. The bar closes, clearing its line, before an error or
    # interruption is reported; it is first drawn after BAR_DELAY seconds, inside the
    # `with`: a short pass draws none, and Ctrl-C never leaves one drawn by the constructor)
    progress = (_bar(batches, desc=desc, unit="batch", leave=False, total=batches.num_batches,
                     delay=BAR_DELAY) if sys.stderr.isatty() else contextlib.nullcontext(batches))
    with progress as bar:
        for x, y in bar:
            _check_labels(y, batches, count, what)
            y = y if target is None else target(y)
            if trainer is not None:
                with autograd.record():
                    out = net(x)
                    loss = loss_fn(out, y)
                loss.backward()
                if on_batch is not None:
                    on_batch()
                trainer.step(x.shape[0])
            else:
                out = net(x)
                loss = loss_fn(out, y)
            loss_sum += float(loss.asnumpy().sum())
            count += x.shape[0]
            seen.append((y.asnumpy(), out.asnumpy()))
    return loss_sum / max(count, 1), seen


def _check_labels(y, reader, before, what):
    """Refuse a batch of labels ``y`` holding NaN or an infinity (a model trained on it is
    all NaN): ``NetsError`` naming the file of the reader ``reader`` (the command's argument
    ``what``) and the line; ``before``: the rows of the pass before the batch."""
    import numpy as np

    from . import NetsError
    labels = y.asnumpy()
    bad = np.flatnonzero(~np.isfinite(labels))
    if not bad.size:
        return
    from .data.reader import row_location
    row = before + int(bad[0])
    where = row_location(reader.files, row) if what is not None else None
    if where:
        place = f"{what} {where[0]}, line {where[1]}"
    else:  # (a stream, which cannot be read again to find the line)
        place = f"{what or 'the data'} {getattr(reader, 'source', '')!s}, row {row + 1}"
    raise NetsError(f"{place}: label {labels[bad[0]].item()!r} is not a finite number "
                    f"({bad.size} such labels in its batch): a model trained on it would be "
                    f"NaN")


# -- demo -----------------------------------------------------------------------------------

DEMO_VARIANTS = ("Dense", "FullyConnectedSparse, dense grad",
                 "FullyConnectedSparse, row_sparse grad")
DEMO_SIGNAL = 3.0  # the ground truth's scores are scaled by this before labels are drawn


def _demo(args):
    """The MXNet Gluon sparse tutorial's three variants of a ``features -> 128 -> 8 -> 1``
    network on a learnable synthetic problem: features with power-law popularity (as in
    click logs, so features recur), labels drawn from a sparse ground-truth model, a fifth
    of the rows held out. Prints each epoch's training and held-out loss, then each
    variant's epoch time, weight and gradient memory, final training loss and held-out
    log-loss and AUC; ``--plot`` saves the comparison."""
    _work_begins()

    from . import Trainer, data, layers, loss
    _check_numbers(args, positive=("samples", "features", "batch_size", "epochs"))
    if args.plot:
        _check_writable(args.plot, "--plot")
        _matplotlib()  # (refused before the work when it is not installed)
    _seed(args)
    nnz = min(10, args.features)
    print(f"Generating {args.samples:,} x {args.features:,} CSR data, {nnz} non-zeros per row "
          f"(power-law feature popularity), labels from a sparse ground-truth model ...")
    X, y, _ = data.make_sparse_dataset(args.samples, args.features, nnz, task="binary",
                                       seed=0, signal=DEMO_SIGNAL)
    n_train = max(1, args.samples * 4 // 5)
    X_test, y_test = X[n_train:], y.asnumpy()[n_train:]
    makers = [lambda: layers.Dense(128, in_units=args.features),
              lambda: layers.FullyConnectedSparse(args.features, 128),
              lambda: layers.FullyConnectedSparse(args.features, 128,
                                                  weight_grad_stype="row_sparse")]
    rows, curves = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "demo.libsvm")
        data.save_libsvm(path, X[:n_train], y[:n_train])
        print(f"Wrote the {n_train:,} training rows to {path} "
              f"({os.path.getsize(path) / 1e6:.2f} MB); reading them back with LibSVMReader "
              f"(batch {args.batch_size}); {args.samples - n_train:,} rows held out")
        batches = _reader(path, "the demo's file", args.features, args.batch_size, "stream")
        for name, first in zip(DEMO_VARIANTS, makers):
            net = layers.Sequential()
            net.add(first(), layers.Activation("sigmoid"), layers.Dense(8, in_units=128),
                    layers.Activation("sigmoid"), layers.Dense(1, in_units=8))
            net.initialize()
            trainer = Trainer(net.collect_params(), "adam", {"learning_rate": 0.005})
            loss_fn = loss.SigmoidBinaryCrossEntropyLoss()
            w = net[0].weight
            grad_bytes = [0]

            def measure(w=w, grad_bytes=grad_bytes):
                grad_bytes[0] = max(grad_bytes[0], w.grad().nbytes)
            times, losses = [], []
            for epoch in range(args.epochs):
                t0 = time.perf_counter()
                final, _ = _run_epoch(net, loss_fn, batches, trainer,
                                      desc=f"{name} epoch {epoch + 1}", on_batch=measure)
                times.append(time.perf_counter() - t0)
                losses.append(final)
                held_out = _held_out(y_test, _scores(net, X_test, args.batch_size))
                print(f"  epoch {epoch + 1}/{args.epochs}  {name}: train loss {final:.4f}  "
                      f"held-out loss {held_out[0]:.4f}  held-out AUC {held_out[1]:.4f}  "
                      f"({times[-1]:.2f}s)", flush=True)
            rows.append((name, min(times), w.data().nbytes, grad_bytes[0], losses[-1],
                         *held_out))
            curves.append(losses)
            del net, trainer
    header = ("variant", "epoch s", "weight MB", "grad MB", "train loss", "test loss",
              "test AUC")
    print()
    print(f"{header[0]:<40}" + "".join(f"{h:>11}" for h in header[1:]))
    for name, t, wb, gb, final, test_loss, auc in rows:
        print(f"{name:<40}{t:>11.2f}{wb / 1e6:>11.2f}{gb / 1e6:>11.3f}{final:>11.4f}"
              f"{test_loss:>11.4f}{auc:>11.4f}")
    print(f"\nrow_sparse gradients: {rows[0][1] / rows[2][1]:.1f}x faster per epoch than Dense, "
          f"{rows[0][3] / max(rows[2][3], 1):,.0f}x less gradient memory")
    if args.plot:
        _plot_demo(args.plot, rows, curves)
        print(f"saved the comparison chart to {args.plot}")
    return 0


def _scores(net, X, batch_size):
    """``net``'s raw outputs (numpy, one per row) over the CSR rows ``X``, a batch at a
    time."""
    import numpy as np
    return np.concatenate([net(X[i:i + batch_size]).asnumpy().ravel()
                           for i in range(0, X.shape[0], batch_size)] or [np.zeros(0)])


def _seed(args):
    """``--seed N``: seed every random source of nets (``nets.random.seed``)."""
    if args.seed is not None:
        from . import random
        random.seed(args.seed)


def _held_out(labels, scores):
    """``(log-loss, AUC)`` of raw scores (logits) against 0/1 labels."""
    import numpy as np

    from . import metric
    if not labels.size:
        return float("nan"), float("nan")
    # log(1 + exp(-s)) for a positive label, log(1 + exp(s)) for a negative, stably
    signed = np.where(labels > 0.5, scores, -scores).astype(np.float64)
    log_loss = float(np.mean(np.logaddexp(0.0, -signed)))
    auc = metric.AUC()
    auc.update(labels, scores)
    return log_loss, auc.get()[1]


def _matplotlib():
    from . import NetsError
    try:
        import matplotlib
    except ImportError:
        raise NetsError("--plot needs matplotlib: pip install 'nets[tutorials]' (or "
                        "matplotlib)") from None
    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt
    return plt


def _plot_demo(path, rows, curves):
    """Bars of epoch time and gradient memory, and the training-loss curves, saved to
    ``path`` (written atomically, in the format its extension names)."""
    from .serialization import write_atomically
    plt = _matplotlib()
    names = [r[0].replace("FullyConnectedSparse", "FCS") for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].bar(names, [r[1] for r in rows])
    axes[0].set_ylabel("epoch time (s)")
    axes[1].bar(names, [r[3] / 1e6 for r in rows])
    axes[1].set_ylabel("weight gradient (MB)")
    for name, losses in zip(names, curves):
        axes[2].plot(range(1, len(losses) + 1), losses, marker="o", label=name)
    axes[2].set_xticks(range(1, max(map(len, curves), default=0) + 1))
    axes[2].set_xlabel("epoch")
    axes[2].set_ylabel("training loss")
    axes[2].legend()
    for ax in axes[:2]:
        ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    fmt = os.path.splitext(path)[1].lstrip(".") or "png"
    write_atomically(path, lambda f: fig.savefig(f, format=fmt))
    plt.close(fig)


# -- train / predict ---------------------------------------------------------------------------

_TASKS = {"logistic": "binary", "l2": "regression", "softmax": "multiclass"}


def _build(cfg):
    from . import layers
    hidden = cfg["hidden"]
    out_units = cfg["classes"] if cfg["loss"] == "softmax" else 1
    net = layers.HybridSequential()
    units = hidden + [out_units]
    net.add(layers.FullyConnectedSparse(cfg["features"], units[0],
                                        weight_grad_stype="row_sparse"))
    for prev, nxt in zip(units[:-1], units[1:]):
        net.add(layers.Activation("relu"), layers.Dense(nxt, in_units=prev))
    net.hybridize()  # a cached graph per batch shape: the operators' dispatch paid once
    return net


def _loss_fn(cfg):
    from . import loss
    fn = {"logistic": lambda: loss.SigmoidBinaryCrossEntropyLoss(),
          "l2": lambda: loss.L2Loss(),
          "softmax": lambda: loss.SoftmaxCrossEntropyLoss()}[cfg["loss"]]()
    fn.hybridize()
    return fn


def _target(cfg):
    """Label mapping: binary LibSVM labels may be -1/+1 or 0/1 (logistic uses y > 0);
    softmax labels must be class ids in [0, classes)."""
    from . import NetsError, nd

    def logistic(y):
        return nd.greater(y, 0.0)

    def softmax(y):
        v = y.asnumpy()
        bad = _not_class_ids(v, cfg["classes"])
        if bad.any():
            k = cfg["classes"]
            raise NetsError(f"label {v[bad][0].item()!r} is not a class id in [0, {k}) "
                            f"(--classes {k})")
        return y
    return {"logistic": logistic, "softmax": softmax}.get(cfg["loss"])


def _not_class_ids(v, classes):
    """Where the labels ``v`` (numpy) are not class ids in ``[0, classes)``."""
    return (v < 0) | (v >= classes) | (v != v.round())


def _to_output(cfg, raw):
    """Turn raw network outputs (numpy) into predictions: probabilities, values or classes."""
    import numpy as np
    if cfg["loss"] == "logistic":
        return 1.0 / (1.0 + np.exp(-raw.reshape(-1)))
    if cfg["loss"] == "softmax":
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return raw.reshape(-1)


def _metrics(cfg, seen):
    import numpy as np

    from . import metric
    y = np.concatenate([s[0] for s in seen]) if seen else np.zeros(0)
    pred = (np.concatenate([_to_output(cfg, s[1]) for s in seen]) if seen else np.zeros(0))
    if cfg["loss"] == "logistic":
        acc, auc = metric.Accuracy(), metric.AUC()
        acc.update(y, (pred > 0.5).astype(np.float64))
        auc.update(y, pred)
        return {"accuracy": acc.get()[1], "auc": auc.get()[1]}
    if cfg["loss"] == "softmax":
        acc = metric.Accuracy()
        acc.update(y, pred)
        return {"accuracy": acc.get()[1]}
    rmse = metric.RMSE()
    rmse.update(y, pred)
    return {"rmse": rmse.get()[1]}


READ_HELP = ("how to read the LibSVM files: 'memory' parses each file whole (with --features: "
             "block by block, ahead of the training, in a thread) and keeps its rows; "
             "'stream' reads them in blocks at every epoch (memory bounded by the block, for "
             "files larger than memory; a pipe or FIFO needs --features then); 'auto' picks "
             "'memory' when the files are regular and their size (a compressed file's times "
             "10) is at most a quarter of the available memory (MemAvailable, within the "
             "cgroup's limit), else 'stream' (nets.data.read_mode)")


# optimizer -> (learning rate, batch size) when --lr / --batch-size are not given: AdaGrad's
# per-feature steps shrink with the squared gradients they have seen, so it takes large
# batches at a larger rate (one pass over a large sparse file in few steps)
_DEFAULTS = {"adagrad": (0.2, 2048)}
_DEFAULT = (0.01, 512)


def _train(args):
    """Train a sparse model on a LibSVM file. The files start being read (parsed ahead in a
    thread, when they are parsed in blocks) before the model and the trainer are built,
    whose imports and set-up then overlap the parse."""
    from . import NetsError
    _check_numbers(args, positive=("epochs", "batch_size", "lr", "features", "classes"),
                   non_negative=("wd",))
    _check_file(args.train, "TRAIN")
    if args.val:
        _check_file(args.val, "--val")
    if args.save:
        _check_writable(args.save, "--save")
    hidden = _parse_model(args.model)
    if args.loss == "softmax" and (args.classes is None or args.classes < 2):
        raise NetsError(f"--loss softmax needs --classes K >= 2, got {args.classes}")
    lr, batch_size = _DEFAULTS.get(args.optimizer.lower(), _DEFAULT)
    lr = lr if args.lr is None else args.lr
    batch_size = args.batch_size = batch_size if args.batch_size is None else args.batch_size
    cfg = {"features": args.features, "hidden": hidden, "loss": args.loss,
           "classes": args.classes or 2, "model": args.model}
    _seed(args)
    files = [(args.train, "TRAIN")] + ([(args.val, "--val")] if args.val else [])
    with contextlib.ExitStack() as reading:
        target = _target(cfg)
        _warm_ahead(cfg, args.optimizer, {"wd": args.wd, "wd_mode": args.wd_mode})
        from .data import read_mode
        read = read_mode(args.read, [path for path, _ in files])
        readers = [reading.enter_context(_reader(path, what, args.features, batch_size, read,
                                                 keep=args.epochs > 1))
                   for path, what in files]
        features = max(r.n_features for r in readers)
        for r in readers:  # (the model is as wide as the widest file)
            r.n_features = features
        if readers[0].num_batches == 0:  # (known now when the files were read whole)
            raise _no_rows(args.train, "TRAIN")
        if features == 0:
            raise NetsError(f"TRAIN {args.train}: no feature index in the file (a file of "
                            f"labels only, or of no rows): nothing to train on; give "
                            f"--features N for a model of N features")
        if args.features is None:
            print(f"--features not given: found {features} features", file=sys.stderr)
        cfg["features"] = features
        options = {"learning_rate": lr, "wd": args.wd, "wd_mode": args.wd_mode}
        _check_model_memory(cfg, args.optimizer, options, readers, args.features)
        from . import Trainer
        net = _build(cfg)
        net.initialize()
        trainer = Trainer(net.collect_params(), args.optimizer, options)
        loss_fn = _loss_fn(cfg)
        _work_begins()
        for epoch in range(1, args.epochs + 1):
            t0 = time.perf_counter()
            train_loss, seen = _run_epoch(net, loss_fn, readers[0], trainer, target,
                                          desc=f"epoch {epoch}", what="TRAIN")
            if not seen:  # (a streamed file's rows are known once read)
                raise _no_rows(args.train, "TRAIN")
            parts = [f"epoch {epoch}", f"{time.perf_counter() - t0:.2f}s",
                     f"train loss {train_loss:.4f}"]
            parts += [f"train {k} {v:.4f}" for k, v in _metrics(cfg, seen).items()]
            if args.val:
                val_loss, vseen = _run_epoch(net, loss_fn, readers[1], target=target,
                                             desc="validation", what="--val")
                if not vseen:
                    raise _no_rows(args.val, "--val")
                parts.append(f"val loss {val_loss:.4f}")
                parts += [f"val {k} {v:.4f}" for k, v in _metrics(cfg, vseen).items()]
            print("  ".join(parts))
    if args.save:
        net.save_parameters(args.save, extra={"nets_cli_model": cfg})
        print(f"saved model to {args.save}")
    return 0


def _no_rows(path, what):
    """The error for a file (the command's argument ``what``) without a row."""
    from . import NetsError
    return NetsError(f"{what} {path}: no rows (the file is empty or holds only blank lines "
                     f"and comments): nothing to {'train on' if what == 'TRAIN' else 'evaluate'}")


# What ``nets train``'s model takes per feature, beyond its weight row and the optimizer's
# state row: initializing the weight holds about one more weight (its random values, made
# before they are stored), so at the start it takes about twice its size.
INIT_COPIES = 2


def _model_bytes(cfg, optimizer, options):
    """``(total, weight, state)``: about how many bytes ``nets train``'s model takes as it
    is built and trained (the first layer, ``features x units`` float32, which grows with
    the feature count; the small layers after it aside): its weight, at its initialization
    ``INIT_COPIES`` times over, and the optimizer's state for it, measured on a one-row
    weight (``wd_mode='catchup'`` adds 8 bytes a row)."""
    import numpy as np

    from . import nd, optim
    units = (cfg["hidden"] + [cfg["classes"] if cfg["loss"] == "softmax" else 1])[0]
    row = units * np.dtype(np.float32).itemsize
    opt = optim.create(optimizer, **options)
    state = opt.create_state_multi_precision(0, nd.zeros((1, units), dtype="float32"))
    pending, state_row = [state], 0
    while pending:  # (None, an array, or nested tuples of them)
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending += list(item)
        elif item is not None:
            state_row += int(np.prod(item.shape)) * item.dtype.itemsize
    if options.get("wd_mode") == "catchup" and options.get("wd"):
        state_row += 8
    n = cfg["features"]
    weight, state = n * row, n * state_row
    return INIT_COPIES * weight + state, weight, state


def _check_model_memory(cfg, optimizer, options, readers, features_given):
    """Refuse, before anything is allocated, a model wider than the memory left
    (``data.reader.available_memory``; not checked where that is unknown): a tiny file
    whose largest index is 3e8 would otherwise take gigabytes. The message names the
    feature count, where it comes from (``--features``, or the file and line of the largest
    index), the bytes needed and available, and the remedies."""
    from . import NetsError
    from .data.reader import available_memory, index_location
    available = available_memory()
    need, weight, state = _model_bytes(cfg, optimizer, options)
    if available is None or need <= available:
        return
    n = cfg["features"]
    if features_given is not None:
        origin = f"--features {n}"
    else:
        files = [f for r in readers for f in r.files]
        where = index_location(files, n - 1)
        origin = (f"the largest feature index, {n - 1}, on line {where[1]} of {where[0]}"
                  if where else f"the largest feature index, {n - 1}")
    raise NetsError(f"the model needs about {_size(need)} for {n} features ({origin}): a "
                    f"{_size(weight)} first-layer weight, twice that while it is "
                    f"initialized, and {_size(state)} of {optimizer} state; "
                    f"{_size(max(available, 0))} is available. Give --features N to train on "
                    f"fewer features (indices >= N are refused), hash the feature indices "
                    f"into fewer columns, or shard the weight over a distributed store "
                    f"(nets.kv, docs/distributed.md)")


def _size(n):
    """Bytes as a short human-readable size, then exactly."""
    value = n
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{n:,} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({n:,} bytes)"


def _predict(args):
    """Write predictions of a model saved by ``nets train --save``, then print one line: the
    rows predicted, where to, and the metrics against the file's labels (when they suit the
    model: class ids for softmax): on stdout with ``--output``, else on stderr, after the
    predictions."""
    from . import NetsError
    _check_numbers(args, positive=("batch_size",))
    _check_file(args.model, "MODEL")
    _check_file(args.data, "DATA")
    if args.output:
        _check_writable(args.output, "--output")
    extra = _read_extra(args.model)
    cfg = extra.get("nets_cli_model") if isinstance(extra, dict) else None
    if cfg is None:
        raise NetsError(f"{args.model}: not a model saved by `nets train --save`")
    cfg = _model_config(cfg, args.model)
    with contextlib.ExitStack() as reading:  # (parsing while the model loads)
        batches = reading.enter_context(_reader(args.data, "DATA", cfg["features"],
                                                args.batch_size, args.read, keep=False))
        net = _build(cfg)
        net.load_parameters(args.model)
        _work_begins()
        seen = _write_predictions(args, cfg, net, batches)
    rows = sum(len(y) for y, _ in seen)
    parts = [f"predicted {rows} rows to {args.output or 'standard output'}"]
    parts += [f"{k} {v:.4f}" for k, v in _predict_metrics(cfg, seen).items()]
    print("  ".join(parts), file=sys.stdout if args.output else sys.stderr)
    return 0


class _ConfigRead(Exception):
    """``_read_extra``'s way out of ``load_arrays`` once a file's config is read."""


def _read_extra(path):
    """``Block.read_extra(path)`` (the ``extra`` value a ``save_parameters`` file holds),
    read without the arrays: ``load_arrays`` calls its ``check`` with the config once that
    is read and checked, before any array, and the check ends the read there. (The arrays
    are read, and checked, once: by ``load_parameters``.)"""
    from .serialization import load_arrays
    found = {}

    def stop(config, declared):
        found["config"] = config
        raise _ConfigRead

    with contextlib.suppress(_ConfigRead):
        load_arrays(path, check=stop)
    return found["config"].get("extra")


def _model_config(cfg, path):
    """The model configuration ``nets train --save`` stored in the file ``path``, checked
    as the file's arrays are (an edited file is refused before any model is built):
    ``features`` and ``classes`` integers (``>= 1``, ``>= 2``), ``hidden`` a list of
    positive integers that ``model`` (when given) spells, ``loss`` one of ``_TASKS``.
    Anything else raises ``NetsError`` naming the file, the key and the value."""
    from . import NetsError

    def bad(key, expected):
        value = cfg.get(key, "(missing)") if isinstance(cfg, dict) else cfg
        return NetsError(f"{path}: its model config has {key}={value!r}: expected "
                         f"{expected} (an edited or damaged model file)")

    def count(value, low):
        return (isinstance(value, int) and not isinstance(value, bool) and value >= low)

    if not isinstance(cfg, dict):
        raise bad("nets_cli_model", "an object of the model's settings")
    if not count(cfg.get("features"), 1):
        raise bad("features", "a positive integer (the feature count)")
    hidden = cfg.get("hidden")
    if not (isinstance(hidden, list) and all(count(u, 1) for u in hidden)):
        raise bad("hidden", "a list of positive integers (the hidden layers' units)")
    if cfg.get("loss") not in _TASKS:
        raise bad("loss", f"one of {sorted(_TASKS)}")
    if not count(cfg.get("classes"), 2):
        raise bad("classes", "an integer >= 2")
    model = cfg.get("model", None)
    if model is not None:
        try:
            spelled = _parse_model(model) if isinstance(model, str) else None
        except NetsError:
            spelled = None
        if spelled != hidden:
            raise bad("model", f"'linear' or 'mlp:UNITS,...' matching hidden={hidden!r}")
    return cfg


def _predict_metrics(cfg, seen):
    """``_metrics`` of the ``(label, output)`` pairs ``seen`` against the file's labels, as
    training maps them; none for softmax when the labels are not class ids."""
    import numpy as np
    if not seen:
        return {}
    y = np.concatenate([s[0] for s in seen])
    if cfg["loss"] == "softmax" and _not_class_ids(y, cfg["classes"]).any():
        return {}
    if cfg["loss"] == "logistic":
        y = (y > 0).astype(y.dtype)
    return _metrics(cfg, [(y, np.concatenate([s[1] for s in seen]))])


def _write_predictions(args, cfg, net, batches):
    """Write the predictions of ``net`` over the batches of the reader ``batches`` to
    ``--output`` (atomically) or standard output; returns the ``(label, output)`` numpy
    pairs of the batches."""
    from .serialization import write_atomically
    seen = []

    def chunks():
        """The predictions' text, a chunk per batch: a line per row (softmax: the K class
        probabilities)."""
        for x, y in batches:
            raw = net(x).asnumpy()
            seen.append((y.asnumpy(), raw))
            pred = _to_output(cfg, raw)
            if pred.ndim == 1:  # (Python floats format several times faster than numpy's,
                # and one %-format of them all faster than a format per value)
                values = pred.tolist()
                yield ("%.6g\n" * len(values)) % tuple(values)
            else:
                yield "".join([" ".join([f"{v:.6g}" for v in row]) + "\n"
                               for row in pred.tolist()])

    def write(f):
        for chunk in chunks():
            f.write(chunk.encode())
    if args.output:  # (atomically: an error or Ctrl-C leaves any previous file as it was)
        write_atomically(args.output, write)
    else:
        for chunk in chunks():
            sys.stdout.write(chunk)
        sys.stdout.flush()
    return seen


# -- argument checking ---------------------------------------------------------------------------

def _check_file(path, what):
    from . import NetsError
    if not os.path.exists(path) or os.path.isdir(path):  # a FIFO or <(zcat f) is fine
        raise NetsError(f"{what}: no such file: {path}")


def _check_numbers(args, positive=(), non_negative=()):
    """Each option named (when given) a finite number, ``> 0`` or ``>= 0``: ``--lr nan`` or
    ``--lr 1e400`` (infinite) would train a NaN model, ``--wd -1`` ascend the gradient."""
    from .base import check_number
    for names, rule in ((positive, {"low": 0, "low_open": True}), (non_negative, {"low": 0})):
        for name in names:
            value = getattr(args, name)
            if value is not None:
                check_number("--" + name.replace("_", "-"), value, **rule)


def _check_writable(path, what):
    """Refuse an output path before the work that produces it: it must not be a folder, and
    its folder must exist and accept a new file (the output is written to a temporary file
    there, then renamed)."""
    from . import NetsError
    if os.path.isdir(path):
        raise NetsError(f"{what} {path}: is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise NetsError(f"{what} {path}: no such directory: {folder}")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise NetsError(f"{what} {path}: cannot write in {folder} ({e.strerror})") from None


def _parse_model(spec):
    from . import NetsError
    if spec == "linear":
        return []
    if spec.startswith("mlp:"):
        try:
            hidden = [int(u) for u in spec[4:].split(",")]
        except ValueError:
            hidden = []
        if hidden and all(u > 0 for u in hidden):
            return hidden
    raise NetsError(f"--model {spec!r}: expected 'linear' or 'mlp:UNITS[,UNITS...]' "
                    f"(e.g. mlp:128,8)")


def build_parser():
    """The argument parser of ``nets`` (one sub-command per job)."""
    import nets
    parser = argparse.ArgumentParser(prog="nets", description="Fast sparse training on a CPU.")
    parser.add_argument("--version", action="version", version=f"nets {nets.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="print versions, threads, and the kernel cache: where it "
                                    "is and whether it is warm")
    p.set_defaults(func=_info)

    p = sub.add_parser("warmup", help="compile every kernel ahead into numba's cache (once "
                                      "per install; later runs load them)")
    p.add_argument("--ahead", metavar="SPEC", help=argparse.SUPPRESS)  # _warm_ahead's child
    p.set_defaults(func=_warmup)

    p = sub.add_parser("demo", help="the MXNet Gluon sparse tutorial's three variants on a "
                                    "learnable synthetic problem",
                       formatter_class=_HelpFormatter, epilog=DEMO_EXAMPLE)
    p.add_argument("--samples", type=int, default=10_000, help="rows generated (a fifth "
                                                                 "held out)")
    p.add_argument("--features", type=int, default=100_000, help="feature count")
    p.add_argument("--batch-size", type=int, default=100, help="rows per training step")
    p.add_argument("--epochs", type=int, default=3, help="passes over the training rows")
    p.add_argument("--seed", type=int, help=SEED_HELP)
    p.add_argument("--plot", metavar="FILE.png", help="save the comparison chart (matplotlib; "
                                                      "default: no chart)")
    p.set_defaults(func=_demo)

    p = sub.add_parser("train", help="train a sparse model on a LibSVM file",
                       formatter_class=_HelpFormatter, epilog=TRAIN_EXAMPLE)
    p.add_argument("train", metavar="TRAIN.libsvm", help="the training file (zero-based "
                                                         "LibSVM; a pipe or a compressed "
                                                         "file too)")
    p.add_argument("--val", metavar="VAL.libsvm", help="a held-out file, evaluated after "
                                                       "each epoch (default: none)")
    p.add_argument("--features", type=int, help="feature count (default: the files' largest "
                                                "index + 1, found by reading them)")
    p.add_argument("--model", default="linear", help="'linear', or 'mlp:UNITS[,UNITS...]' "
                                                     "for ReLU hidden layers (e.g. mlp:128,8)")
    p.add_argument("--loss", choices=sorted(_TASKS), default="logistic",
                   help="logistic (binary labels: > 0 is positive), l2 (regression) or "
                        "softmax (class ids 0..K-1, with --classes K)")
    p.add_argument("--classes", type=int, help="number of classes for --loss softmax "
                                               "(default: none)")
    p.add_argument("--optimizer", default="adam", type=str.lower, choices=_Optimizers(),
                   metavar="NAME", help="one of: %(choices)s")
    by_optimizer = ", ".join(f"{lr} for {k}" for k, (lr, _) in _DEFAULTS.items())
    p.add_argument("--lr", type=float, help=f"learning rate (default: {by_optimizer}, "
                                            f"else {_DEFAULT[0]})")
    p.add_argument("--wd", type=float, default=0.0, help="weight decay")
    p.add_argument("--wd-mode", choices=["lazy", "catchup", "dense"], default="lazy",
                   help="weight decay with sparse gradients: lazy (touched rows only), "
                        "catchup (a row's missed decay when next touched) or dense")
    p.add_argument("--epochs", type=int, default=3, help="passes over TRAIN")
    by_optimizer = ", ".join(f"{batch} for {k}" for k, (_, batch) in _DEFAULTS.items())
    p.add_argument("--batch-size", type=int, help=f"rows per training step (default: "
                                                  f"{by_optimizer}, else {_DEFAULT[1]})")
    p.add_argument("--read", choices=["auto", "memory", "stream"], default="auto",
                   help=READ_HELP)
    p.add_argument("--seed", type=int, help=SEED_HELP)
    p.add_argument("--save", metavar="MODEL.npz", help="save the trained model (default: not "
                                                       "saved)")
    p.set_defaults(func=_train)

    p = sub.add_parser("predict", help="predict with a model saved by `nets train --save`",
                       formatter_class=_HelpFormatter, epilog=PREDICT_EXAMPLE)
    p.add_argument("model", metavar="MODEL.npz", help="a model saved by `nets train --save`")
    p.add_argument("data", metavar="DATA.libsvm", help="the rows to predict")
    p.add_argument("--output", metavar="PREDS.txt", help="where the predictions go, a line "
                                                         "per row (default: standard output)")
    p.add_argument("--batch-size", type=int, default=512, help="rows per forward pass")
    p.add_argument("--read", choices=["auto", "memory", "stream"], default="auto",
                   help=READ_HELP)
    p.set_defaults(func=_predict)
    return parser


SEED_HELP = ("seed every random source of nets (nets.random.seed) for a reproducible run "
             "(default: unseeded). With one thread (NETS_NUM_THREADS=1) a seed gives the same "
             "model bit for bit; with several, parallel reductions and updates may add "
             "floats in another order, and results may differ in the last bits")
TRAIN_EXAMPLE = """example:
  nets train train.libsvm --val val.libsvm --model mlp:128,8 --optimizer adagrad \\
      --epochs 5 --seed 1 --save model.npz"""
PREDICT_EXAMPLE = """example:
  nets predict model.npz test.libsvm --output preds.txt"""
DEMO_EXAMPLE = """example:
  nets demo --samples 20000 --epochs 5 --seed 1 --plot demo.png"""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that ends each option's text with its default (an option without one says in
    its text what its absence means), and keeps the example's lines as written."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or not action.option_strings
                or action.default in (None, argparse.SUPPRESS)):
            return text
        return text + " (default: %(default)s)"


class _Optimizers:
    """The optimizer names ``nets train --optimizer`` accepts: those of nets' registry
    (``nets.optim``), imported when first asked (parsing a command that does not name an
    optimizer imports no optimizer)."""

    def _names(self):
        from .optim import Optimizer
        return sorted(Optimizer.opt_registry)

    def __contains__(self, name):
        return name in self._names()

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())


# the options that size each command's work, named when it runs out of memory
_SIZES = {"demo": ("batch_size", "samples", "features"), "train": ("batch_size", "features"),
          "predict": ("batch_size",)}


def _interrupted(error):
    """Whether ``error`` is Ctrl-C: a ``KeyboardInterrupt``, or the ``SystemError`` that
    numba's dispatcher raises ("returned a result with an exception set", once or twice
    over) when the interrupt lands during a kernel call, the ``KeyboardInterrupt`` at the
    end of its chain of causes."""
    while isinstance(error, SystemError):
        error = error.__cause__
    return isinstance(error, KeyboardInterrupt)


def main(argv=None):
    """Entry point of the ``nets`` console script; returns the exit code (see the module's
    docstring). ``argv`` None: the program's own command line (``sys.argv``), in a process
    of its own (the console script, ``python -m nets``), whose garbage collection follows
    ``_PROGRAM``; a list: arguments to run in the calling process, whose collector is
    left alone."""
    program = argv is None
    if program:  # (start-up: see _PROGRAM)
        gc.disable()
        _PROGRAM["gc_paused"] = _PROGRAM["own"] = True
    try:
        return _main(argv)
    except (KeyboardInterrupt, SystemError) as e:
        if not _interrupted(e):
            raise
        print("nets: interrupted", file=sys.stderr)
        return 130
    finally:
        if program:  # what is left lives until the exit, whose collections now skip it
            gc.freeze()


# What the ``nets`` program's own process (``main()`` without arguments) sets: ``own``,
# that this process is the program's, which then owns process-wide settings such as tqdm's
# lock (``_bar``); ``gc_paused``, for its cyclic garbage collection. Its start-up (the
# imports, numba's typing tables and loaded kernels, the model) creates objects that live
# until the process ends, and next to no garbage; yet the collector would traverse all of
# them at every full collection, during the start-up itself, during the work and again in
# the collections of the interpreter's exit. So ``main`` pauses the collector from the
# start; ``_work_begins`` (each command calls it where its set-up ends) freezes what
# exists (``gc.freeze``: never examined again, never freed) and resumes collecting for the
# work's garbage; and ``main`` freezes everything left before the process exits.
_PROGRAM = {"gc_paused": False, "own": False}


def _work_begins():
    """Where a command's set-up ends and its work begins: in the ``nets`` program, the
    objects that exist are frozen and the collector, paused since the start, resumes
    (``_PROGRAM``); elsewhere nothing."""
    if _PROGRAM["gc_paused"]:
        _PROGRAM["gc_paused"] = False
        gc.freeze()
        gc.enable()


def _main(argv):
    from . import NetsError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `nets predict ... | head`: stop quietly
        sys.stdout = open(os.devnull, "w")
        return 0
    except (NetsError, OSError) as e:
        print(f"nets {args.command}: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        sizes = ", ".join(f"--{n.replace('_', '-')} {getattr(args, n)}"
                          for n in _SIZES.get(args.command, ())
                          if getattr(args, n) is not None)
        print(f"nets {args.command}: error: out of memory ({str(e) or 'MemoryError'}); reduce "
              f"{sizes or 'the input'}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
