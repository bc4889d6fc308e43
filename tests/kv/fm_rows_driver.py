"""Runs a renamed compat program (``python fm_rows_driver.py PROGRAM.py ARGS...``) with the
rows the local store moves recorded, and prints them after the program's output as one
line ``ROWS {json}``:

- ``prepare``: for each ``Module.prepare(batch, sparse_row_id_fn)`` of a batch, whether every
  ``row_sparse_pull`` it made returned exactly the batch's distinct feature ids (the rows
  of ``w`` and ``v`` the batch reads), and how many rows that is;
- ``full_prepares``: the ``prepare(None, all_row_ids)`` calls (the program's evaluation);
- ``changed``: for each ``Module.update``, the rows each row_sparse answer of the store
  held, as a subset check against the preceding batch's rows, and how many answers were
  whole values (dense weights).
"""
import json
import runpy
import sys

import numpy as np

from nets.kv.local import LocalKVStore
from nets.module.module import Module

log = {"pulls": [], "answers": []}
summary = {"prepare": [], "full_prepares": 0, "changed": []}
last_batch = [None]

_prepare, _pull_rows, _push_changed = (Module.prepare, LocalKVStore._start_pull_rows,
                                       LocalKVStore._push_changed)


def prepare(self, data_batch, sparse_row_id_fn=None):
    del log["pulls"][:]
    _prepare(self, data_batch, sparse_row_id_fn)
    if sparse_row_id_fn is None:  # (score's prepare of an evaluation batch: no pull)
        assert not log["pulls"], "a prepare without sparse_row_id_fn pulled rows"
        return
    if data_batch is None:
        summary["full_prepares"] += 1
        return
    want = np.unique(data_batch.data[0].indices.asnumpy())
    last_batch[0] = want
    exact = len(log["pulls"]) == 2 and all(np.array_equal(p, want) for p in log["pulls"])
    summary["prepare"].append([bool(exact), int(len(want))])


def pull_rows(self, triples):
    pending = _pull_rows(self, triples)  # (the local store pulls at once)
    log["pulls"] += [out.indices.asnumpy() for _, out, _ in triples]
    return pending


def push_changed(self, pairs, asks=None):
    answers = _push_changed(self, pairs, asks)
    want = last_batch[0]
    rows = [r for r, _ in answers if r is not None]
    summary["changed"].append([all(np.isin(r, want).all() for r in rows),
                               sum(len(r) for r in rows), len(answers) - len(rows)])
    return answers


Module.prepare, LocalKVStore._start_pull_rows, LocalKVStore._push_changed = (
    prepare, pull_rows, push_changed)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
print("ROWS " + json.dumps(summary))
