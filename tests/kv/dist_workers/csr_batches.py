"""The batches the sparse Module workers train on: ``batches(seed, features, batch,
steps)``, ``steps`` DataBatches of ``batch`` CSR rows over ``features`` columns, four
values in [0.5, 1.5) per row, labels 0/1, drawn from ``default_rng(seed)``."""
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
