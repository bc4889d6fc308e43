"""What the sparse Module workers share: the batches they train on (``batches(seed,
features, batch, steps)``: ``steps`` DataBatches of ``batch`` CSR rows over ``features``
columns, four values in [0.5, 1.5) per row, labels 0/1, drawn from ``default_rng(seed)``),
the rows each batch asks of the row_sparse ``weight`` (``rows_of``) and their logistic
Module over a csr ``data`` input (``bound_module``)."""
import numpy as np

import nets
from nets.batch import DataBatch


def batches(seed, features, batch, steps):
    """The batches of one worker (a seed per worker)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        dense = np.zeros((batch, features), np.float32)
        for r in range(batch):
            dense[r, rng.choice(features, 4, replace=False)] = rng.uniform(0.5, 1.5, 4)
        label = rng.integers(0, 2, batch).astype(np.float32)
        out.append(DataBatch([nets.nd.array(dense).tostype("csr")], [nets.nd.array(label)]))
    return out


def rows_of(batch):
    """``Module.prepare``'s ``sparse_row_id_fn``: the batch's columns of ``weight``."""
    return {"weight": batch.data[0].indices}


def bound_module(out, features, batch):
    """A ``Module`` of ``LogisticRegressionOutput(out)`` (``out`` a symbol of the csr
    variable ``data``), bound for batches of ``batch`` rows of ``features`` columns."""
    model = nets.sym.LogisticRegressionOutput(out, nets.sym.Variable("softmax_label"))
    mod = nets.mod.Module(model, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (batch, features))],
             label_shapes=[("softmax_label", (batch,))])
    return mod
