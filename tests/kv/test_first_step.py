"""Issue 42: the store's initial values reach every worker before a parameter's array is
first handed out, never into an array already recorded. A program that reads a dense
parameter's ``data()`` and a row_sparse parameter's ``row_sparse_data(ids)`` inside one
``autograd.record()`` block from its first step runs on 2 ``dist_sync`` workers (whose
own initial values differ: only rank 0's count), and every worker's result equals, bit
for bit, a local Trainer's run from rank 0's values on the summed gradients."""
import importlib.util
import os

import numpy as np
import pytest

import nets
from nets.ops import add_n

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "first_step", os.path.join(HERE, "dist_workers", "first_step.py"))
first_step = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(first_step)

WORKERS, STEPS = 2, 3


def _local(workers, steps, deferred):
    """Rank 0's parameters trained here by a store-less Trainer: each step's gradient is
    the sum (add_n in rank order, as the servers merge them) of every worker's."""
    x, y = first_step.build(seed=11, deferred=deferred)
    trainer = nets.Trainer([x, y], first_step.optimizer())
    for step in range(steps):
        grads = []
        for rank in range(workers):
            first_step.forward(x, y, *first_step.batch(rank, step))
            grads.append([p.grad().copy() for p in (x, y)])
        for p, gs in zip((x, y), zip(*grads)):
            p.grad()[:] = add_n(*gs)
        trainer.step(first_step.BATCH)
    return [x.data().asnumpy(), y.data().tostype("default").asnumpy()]


@pytest.mark.parametrize("deferred", [False, True], ids=["initialized", "deferred"])
def test_data_and_row_sparse_data_in_one_record_block_on_the_first_step(dist_cluster,
                                                                       tmp_path, deferred):
    codes, out = dist_cluster.run("first_step.py", WORKERS,
                                  args=("dist_sync", STEPS, tmp_path)
                                  + (("deferred",) if deferred else ()))
    assert codes == [0] * WORKERS, out
    expected = _local(WORKERS, STEPS, deferred)
    for rank in range(WORKERS):
        got = np.load(tmp_path / f"params{rank}.npz")
        for i, value in enumerate(expected):
            np.testing.assert_array_equal(got[f"arr_{i}"], value, err_msg=f"{rank}: {i}")
