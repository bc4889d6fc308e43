"""The ``nets`` command line: ``info``, ``demo``, ``train``, ``predict``.

Errors a user can cause (a missing file, a bad flag value, inconsistent feature
counts) end in one line on stderr and exit code 2, never a traceback.
"""
import argparse
import os
import sys
import tempfile
import time


def _info(args):
    """Print versions, the kernel thread count and where it comes from, and numba's cache
    folder."""
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
        lines.append(("numba", "not installed"))
    lines.append(("threads", f"{get_num_threads()} (from {num_threads_source()})"))
    lines.append(("numba cache dir", os.environ.get("NUMBA_CACHE_DIR")
                  or "(default: __pycache__ beside each module)"))
    lines.append(("cpu count", os.cpu_count()))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    return 0


# -- training helpers shared by demo and train -------------------------------------------

def _batches(path, n_features, batch_size, round_batch=False):
    from .data import LibSVMIter
    return LibSVMIter(data_libsvm=path, data_shape=(n_features,), label_shape=(1,),
                      batch_size=batch_size, round_batch=round_batch)


def _run_epoch(net, loss_fn, batches, trainer=None, desc="", on_batch=None, total=None,
               target=None):
    """One pass over ``batches`` (``total`` of them, if known, for the progress bar); trains
    when ``trainer`` is given. Returns (mean loss, list of (label, output) numpy pairs for
    metrics, number of batches). ``target`` maps a label batch to the loss's labels."""
    from tqdm import tqdm

    from . import autograd
    batches.reset()
    loss_sum, count, seen = 0.0, 0, []
    for batch in tqdm(batches, desc=desc, unit="batch", leave=False, file=sys.stderr,
                      total=total):
        x, y = batch.data[0], batch.label[0]
        y = y if target is None else target(y)
        n = x.shape[0] - batch.pad
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
        values = loss.asnumpy()[:n]
        loss_sum += float(values.sum())
        count += n
        seen.append((y.asnumpy()[:n], out.asnumpy()[:n]))
    return loss_sum / max(count, 1), seen, len(seen)


# -- demo -----------------------------------------------------------------------------------

def _demo(args):
    """The MXNet Gluon sparse tutorial end to end on synthetic data: three variants of a
    1M -> 128 -> 8 -> 1 network, their epoch time and weight/gradient memory."""
    import numpy as np

    from . import Trainer, data, layers, loss, nd
    _check_positive(args, "samples", "features", "batch_size", "epochs")
    print(f"Generating {args.samples} x {args.features:,} CSR data, 10 non-zeros per row ...")
    X, _, _ = data.make_sparse_dataset(args.samples, args.features,
                                       min(10, args.features), task="binary", seed=0)
    rowsum = nd.sum(X, axis=1).asnumpy()
    y = nd.array((rowsum > rowsum.mean()).astype(np.float32))  # the tutorial's label rule
    variants = [
        ("Dense", lambda: layers.Dense(128, in_units=args.features)),
        ("FullyConnectedSparse, dense grad",
         lambda: layers.FullyConnectedSparse(args.features, 128)),
        ("FullyConnectedSparse, row_sparse grad",
         lambda: layers.FullyConnectedSparse(args.features, 128, weight_grad_stype="row_sparse")),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "demo.libsvm")
        data.save_libsvm(path, X, y)
        print(f"Wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB); reading it back with "
              f"LibSVMIter (batch {args.batch_size})")
        batches = _batches(path, args.features, args.batch_size)
        for name, first in variants:
            net = layers.Sequential()
            net.add(first(), layers.Activation("sigmoid"), layers.Dense(8, in_units=128),
                    layers.Activation("sigmoid"), layers.Dense(1, in_units=8),
                    layers.Activation("sigmoid"))
            net.initialize()
            trainer = Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
            loss_fn = loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)
            w = net[0].weight
            grad_bytes = [0]

            def measure(w=w, grad_bytes=grad_bytes):
                grad_bytes[0] = max(grad_bytes[0], w.grad().nbytes)
            times = []
            for epoch in range(args.epochs):
                t0 = time.perf_counter()
                final, _, _ = _run_epoch(net, loss_fn, batches, trainer,
                                         desc=f"{name} epoch {epoch + 1}", on_batch=measure,
                                         total=-(-args.samples // args.batch_size))
                times.append(time.perf_counter() - t0)
            rows.append((name, min(times), w.data().nbytes, grad_bytes[0], final))
            del net, trainer
    header = ("variant", "epoch time (s)", "weight MB", "gradient MB", "final loss")
    print()
    print(f"{header[0]:<40}{header[1]:>15}{header[2]:>12}{header[3]:>13}{header[4]:>12}")
    for name, t, wb, gb, final in rows:
        print(f"{name:<40}{t:>15.2f}{wb / 1e6:>12.3f}{gb / 1e6:>13.3f}{final:>12.4f}")
    base = rows[0][1]
    print(f"\nrow_sparse gradients: {base / rows[2][1]:.1f}x faster per epoch than Dense, "
          f"{rows[0][3] / max(rows[2][3], 1):,.0f}x less gradient memory")
    return 0


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
        bad = (v < 0) | (v >= cfg["classes"]) | (v != v.round())
        if bad.any():
            k = cfg["classes"]
            raise NetsError(f"label {v[bad][0].item()!r} is not a class id in [0, {k}) "
                            f"(--classes {k})")
        return y
    return {"logistic": logistic, "softmax": softmax}.get(cfg["loss"])


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


def _scan_features(path):
    """Feature count of a LibSVM file, read zero-based as ``LibSVMIter`` reads it."""
    from .data import load_libsvm
    X, _ = load_libsvm(path, zero_based=True)
    return X.shape[1]


def _train(args):
    """Train a sparse model on a LibSVM file."""
    from . import NetsError, Trainer
    _check_file(args.train, "TRAIN")
    if args.val:
        _check_file(args.val, "--val")
    _check_positive(args, "epochs", "batch_size", "lr")
    hidden = _parse_model(args.model)
    if args.loss == "softmax" and (args.classes is None or args.classes < 2):
        raise NetsError(f"--loss softmax needs --classes K >= 2, got {args.classes}")
    features = args.features
    if features is None:
        features = max(_scan_features(args.train),
                       _scan_features(args.val) if args.val else 0)
        print(f"--features not given: scanned {features} features", file=sys.stderr)
    cfg = {"features": features, "hidden": hidden, "loss": args.loss,
           "classes": args.classes or 2, "model": args.model}
    net = _build(cfg)
    net.initialize()
    trainer = Trainer(net.collect_params(), args.optimizer,
                      {"learning_rate": args.lr, "wd": args.wd, "wd_mode": args.wd_mode})
    loss_fn = _loss_fn(cfg)
    train_it = _batches(args.train, features, args.batch_size)
    val_it = _batches(args.val, features, args.batch_size) if args.val else None
    n_train = n_val = None  # batch counts, known after the first pass
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        train_loss, seen, n_train = _run_epoch(net, loss_fn, train_it, trainer,
                                               desc=f"epoch {epoch}", total=n_train,
                                               target=_target(cfg))
        parts = [f"epoch {epoch}", f"{time.perf_counter() - t0:.2f}s",
                 f"train loss {train_loss:.4f}"]
        parts += [f"train {k} {v:.4f}" for k, v in _metrics(cfg, seen).items()]
        if val_it is not None:
            val_loss, vseen, n_val = _run_epoch(net, loss_fn, val_it, desc="validation",
                                                total=n_val, target=_target(cfg))
            parts.append(f"val loss {val_loss:.4f}")
            parts += [f"val {k} {v:.4f}" for k, v in _metrics(cfg, vseen).items()]
        print("  ".join(parts))
    if args.save:
        net.save_parameters(args.save, extra={"nets_cli_model": cfg})
        print(f"saved model to {args.save}")
    return 0


def _predict(args):
    """Write predictions of a model saved by ``nets train --save``."""
    from . import NetsError
    from .layers import Block
    _check_file(args.model, "MODEL")
    _check_file(args.data, "DATA")
    extra = Block.read_extra(args.model)
    cfg = (extra or {}).get("nets_cli_model")
    if cfg is None:
        raise NetsError(f"{args.model}: not a model saved by `nets train --save`")
    net = _build(cfg)
    net.load_parameters(args.model)
    batches = _batches(args.data, cfg["features"], args.batch_size)
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        for batch in batches:
            n = batch.data[0].shape[0] - batch.pad
            pred = _to_output(cfg, net(batch.data[0]).asnumpy()[:n])
            for row in pred if pred.ndim > 1 else pred[:, None]:  # softmax: K probabilities
                out.write(" ".join(f"{v:.6g}" for v in row) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


# -- argument checking ---------------------------------------------------------------------------

def _check_file(path, what):
    from . import NetsError
    if not os.path.exists(path) or os.path.isdir(path):  # a FIFO or <(zcat f) is fine
        raise NetsError(f"{what}: no such file: {path}")


def _check_positive(args, *names):
    from . import NetsError
    for n in names:
        v = getattr(args, n)
        if v is None or v <= 0:
            raise NetsError(f"--{n.replace('_', '-')} must be positive, got {v}")


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
    p = sub.add_parser("info", help="print versions, numba threading layer and cache dir")
    p.set_defaults(func=_info)

    p = sub.add_parser("demo", help="the MXNet Gluon sparse tutorial on synthetic data")
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--features", type=int, default=1_000_000)
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--epochs", type=int, default=1)
    p.set_defaults(func=_demo)

    p = sub.add_parser("train", help="train a sparse model on a LibSVM file")
    p.add_argument("train", metavar="TRAIN.libsvm")
    p.add_argument("--val", metavar="VAL.libsvm")
    p.add_argument("--features", type=int, help="feature count (scanned when absent)")
    p.add_argument("--model", default="linear", help="'linear' or 'mlp:128,8'")
    p.add_argument("--loss", choices=sorted(_TASKS), default="logistic")
    p.add_argument("--classes", type=int, help="number of classes for --loss softmax")
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--wd-mode", choices=["lazy", "catchup", "dense"], default="lazy")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--save", metavar="MODEL.npz")
    p.set_defaults(func=_train)

    p = sub.add_parser("predict", help="predict with a model saved by `nets train --save`")
    p.add_argument("model", metavar="MODEL.npz")
    p.add_argument("data", metavar="DATA.libsvm")
    p.add_argument("--output", metavar="PREDS.txt", help="default: standard output")
    p.add_argument("--batch-size", type=int, default=512)
    p.set_defaults(func=_predict)
    return parser


def main(argv=None):
    """Entry point of the ``nets`` console script; returns the exit code."""
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


if __name__ == "__main__":
    sys.exit(main())
