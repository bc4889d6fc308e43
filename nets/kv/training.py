"""How ``Trainer`` and ``Module`` train through a store (MXNet's ``model._create_kvstore``,
``_update_params_on_kvstore`` and ``_update_params``), written once for both.

Keys are the parameters' positions (0 .. n-1), which are also the optimizer's indices, so
an optimizer set on the store finds each parameter's ``lr_mult``/``wd_mult`` and the
store's states file is the one ``Trainer.save_states`` writes.

What a worker's copy of a weight the store updates holds (``update_on_kvstore``):

- ``init_values`` makes every worker's copy the store's value (rank 0's: MXNet's
  broadcast); a row_sparse weight gets the store's values of the rows it holds. A
  ``Trainer`` calls it when it is created (a deferred parameter: when its data is made),
  so that no array a recorded op has read is written. Under
  ``dist_async`` the workers then wait for each other (a barrier), so that no worker's
  first push reaches the store before every worker has its initial copy: MXNet has no
  such wait, and a slow worker there may start from weights another one already updated.
- ``step`` pushes a step's gradients in one call (one per server) that returns what the
  update changed among the rows the copy holds - a worker receives only rows it asked
  for: a row_sparse weight asks for the rows it held and the rows its gradient updated
  (sent with the push), and receives those of them the update changed (under
  ``dist_sync`` any worker's update of the round); a dense weight holds every row, so it
  receives every row the update changed (under ``dist_sync`` the union of every worker's
  rows of the round), or the whole value when any row may have changed. Each copy
  applies its answer: a dense weight stays equal to the store's, every row; a row_sparse
  weight holds the rows it held and the rows its gradient updated, equal to the store's.
  A worker whose row_sparse weight holds only its batch's rows (``row_sparse_data`` or
  ``Module.prepare`` before each batch) so sends and receives per step what its batch
  names, whatever the number of workers.
- ``dist_async`` is stale by design (MXNet's): a push is applied on arrival, and its
  answer carries the rows this worker's update changed, as they are after it; rows that
  only other workers' pushes changed keep the value this worker last received.
  ``store.pull`` (or ``row_sparse_pull``) of the key refreshes every row.
"""
import numpy as np

from ..base import NetsError
from ..arrays.row_sparse import RowSparseNDArray
from ..ops.sparse_ops import union_rows
from .base import DIST_NAMES, KVStore, Pending, create
from .local import rows_of

__all__ = ["store_for", "init_values", "step", "start_step", "reduce_grads"]


def store_for(kvstore, need_store, who):
    """The store ``kvstore`` names: None, a ``KVStore`` (used as it is) or a type name.

    A local type name gives a store only when ``need_store`` (the caller's rule: row_sparse
    weights, an explicit ``update_on_kvstore=True``, gradient compression): on one machine
    with one device there is nothing to reduce (MXNet's rule). A distributed name always
    asks for its store."""
    if kvstore is None or isinstance(kvstore, KVStore):
        return kvstore
    if not isinstance(kvstore, str):
        raise NetsError(f"{who}: kvstore must be None, a store type name or a nets.kv.KVStore, "
                        f"got {type(kvstore).__name__}")
    if not need_store and kvstore not in DIST_NAMES:
        create(kvstore)  # (checks the name: an unknown one raises)
        return None
    return create(kvstore)


def init_values(store, items, update_on_kvstore, specs=None):
    """Initialize each ``(key, weight)`` of ``items`` in the store (rank 0's value is the
    one kept), then, when the store updates the weights, make each weight the store's
    value: dense ones whole, row_sparse ones on the rows they hold (one pull). ``specs``
    (None, or per item None or the spec ``nets.init.draw`` returned for a weight it drew
    and nothing wrote since) let a distributed store send a spec instead of a value."""
    if not items:
        return
    if specs is None or all(spec is None for spec in specs):
        store.init([k for k, _ in items], [w for _, w in items])
    else:
        store._init_drawn([k for k, _ in items], [w for _, w in items], specs)
    if not update_on_kvstore:
        return
    differ = [(k, w) for k, w in items if not store._holds_init(k)]  # (others: the store's)
    dense = [(k, w) for k, w in differ if w.stype != "row_sparse"]
    sparse = [(k, w) for k, w in differ if w.stype == "row_sparse"]
    if dense:
        store.pull([k for k, _ in dense], out=[w for _, w in dense])
    if sparse:
        store.row_sparse_pull([k for k, _ in sparse], out=[w for _, w in sparse],
                              row_ids=[w.indices for _, w in sparse])
    if "async" in store.type:
        store.barrier()  # every copy is the initial value before any push is applied


def step(store, items):
    """Push each ``(key, gradient, weight)`` of ``items`` to a store that updates the
    weights, in one call, and apply to each weight what the update changed (see the
    module's docstring)."""
    start_step(store, items).wait()


def start_step(store, items):
    """``step`` started: a ``Pending`` whose ``wait()`` applies the answer to the weights
    (at once when the store answered already: the local store). A distributed store sends
    the push with its next call (``Module.prepare``'s row pull: one call per server and
    step); until ``wait()`` the weights and gradients must be left as they are
    (``Module`` waits before it next uses them)."""
    if not items:
        return Pending()
    keeps = [_kept_rows(weight, grad) if weight.stype == "row_sparse" else None
             for _, grad, weight in items]
    pushed = store._start_push_changed([(k, [g]) for k, g, _ in items],
                                       [None if keep is None else keep[0] for keep in keeps],
                                       [w if w.stype == "row_sparse" else None
                                        for _, _, w in items])

    def apply():
        for (_, grad, weight), keep, result in zip(items, keeps, pushed.wait()):
            if result is None:  # refilled by a row pull sent with the push (the next batch's)
                continue
            rows, value = result
            if weight.stype != "row_sparse":
                if rows is None:
                    weight[:] = value
                else:
                    weight[rows] = value.data
            else:
                _merge_rows(weight, grad, rows, value, keep)
    if pushed.done:  # (a store that updated already: applied now, before any later pull)
        apply()
        return Pending()
    return Pending(apply)


def _kept_rows(weight, grad):
    """``(keep, held_at)``: the rows row_sparse ``weight`` holds after a step, those it
    held and those ``grad`` updated (sorted unique), and where its held rows are among
    them. They are the rows the step asks the store for."""
    held = weight.index_array
    touched = grad.index_array if grad.stype == "row_sparse" \
        else np.arange(weight.shape[0], dtype=held.dtype)
    keep, held_at, _ = union_rows(held, touched)
    return keep, held_at


def _merge_rows(weight, grad, rows, value, kept=None):
    """Make row_sparse ``weight`` hold the rows it held and those ``grad`` updated
    (``kept``: ``_kept_rows(weight, grad)`` when made already), with the values ``value``
    carries for the changed ``rows`` (every row when ``rows`` is None) and its own for the
    others (which the update did not change). Every id list here is sorted and unique
    (array indices, the store's answer): one linear merge, no check."""
    held = weight.index_array
    keep, held_at = _kept_rows(weight, grad) if kept is None else kept
    if rows is None:
        weight.assign_result(rows_of(value, keep))
        return
    # Each kept row is read from one source row: the answer's for a changed row, else the
    # weight's (a row neither holds stays zero). The answer's rows are placed among the
    # kept ones by a second linear merge (rows only other workers changed fall outside).
    changed = value.index_array
    both, keep_at, changed_at = union_rows(keep, changed)
    source = np.concatenate((weight.values, value.values,
                             np.zeros((1,) + weight.values.shape[1:], weight.dtype)))
    pick = np.full(len(both), len(source) - 1)
    pick[keep_at[held_at]] = np.arange(len(held))
    pick[changed_at] = np.arange(len(held), len(held) + len(changed))
    data = np.take(source, pick[keep_at], axis=0)
    weight.assign_result(RowSparseNDArray(data, keep, weight.shape, weight.context))


def reduce_grads(store, items):
    """Sum each ``(key, gradient)`` of ``items`` through the store (pushed and pulled
    back into the gradient by one ``pushpull``: one call per server) for an update made
    outside the store."""
    if not items:
        return
    store.pushpull([k for k, _ in items], [g for _, g in items], ignore_sparse=False)
