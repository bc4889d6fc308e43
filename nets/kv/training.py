"""How ``Trainer`` and ``Module`` train through a store (MXNet's ``model._create_kvstore``,
``_update_params_on_kvstore`` and ``_update_params``), written once for both.

Keys are the parameters' positions (0 .. n-1), which are also the optimizer's indices, so
an optimizer set on the store finds each parameter's ``lr_mult``/``wd_mult`` and the
store's states file is the one ``Trainer.save_states`` writes.
"""
import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from .base import DIST_NAMES, KVStore, create

__all__ = ["store_for", "push_update", "reduce_grad"]


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


def push_update(store, key, grad, weight):
    """Push ``grad`` to a store that updates the weight, and bring ``weight`` up to date.

    A dense weight pulls its new value. A row_sparse weight pulls the rows it holds and the
    rows the gradient updated: it mirrors the store on those, at a cost proportional to
    them (after ``row_sparse_pull`` of a batch's rows, the batch's rows; MXNet pulls again
    only at the next ``prepare``/``row_sparse_data``)."""
    if weight.stype != "row_sparse":
        store.pushpull(key, grad, out=weight)
        return
    store.push(key, grad)
    held = weight.indices.asnumpy()
    touched = grad.indices.asnumpy() if grad.stype == "row_sparse" \
        else np.arange(weight.shape[0])
    store.row_sparse_pull(key, out=weight, row_ids=NDArray(np.union1d(held, touched)))


def reduce_grad(store, key, grad):
    """Sum ``grad`` through the store (pushed, then pulled back into ``grad``) for an update
    made outside the store."""
    store.push(key, grad)
    store.pull(key, out=grad, ignore_sparse=False)
