"""``Trainer``: applies an optimizer to a set of parameters (MXNet Gluon's).

Without a store the Trainer is local: ``allreduce_grads`` has nothing to reduce on one
device, and row-sparse gradients reach the optimizer as they are, so a lazy update
touches only their rows. A KVStore (``nets.kv``) plugs in beside it, by MXNet's rules
(``Trainer._resolve_store``): either the store updates the weights
(``update_on_kvstore``: gradients are pushed, weights pulled) or it only sums gradients
for the Trainer's own update.

Gradients are read through each parameter's gradient slot (``nets.autograd.slot``),
the same way whatever their storage type: a gradient is fresh once ``backward``
delivered into it and stale after an update used it; the Trainer neither clears nor
zeroes gradients (``grad_req='write'`` overwrites them at the next ``backward``,
``'add'`` accumulates until ``zero_grad()``), as in MXNet.

The optimizer keeps every parameter's state (``Trainer.optimizer.state``, keyed by the
parameter's position in ``params``); the Trainer keeps none: it calls
``Optimizer.step``.
"""
from typing import TYPE_CHECKING, Iterable, Optional, Union

from . import autograd, optim
from .base import NetsError
from .layers.parameter import DeferredInitializationError, Parameter, ParameterDict
from .optim.hyper import check_number

if TYPE_CHECKING:  # (the store is imported where a Trainer uses one)
    from . import kv

__all__ = ["Trainer", "StaleGradientError"]


_UNCHECKED = object()  # (no batch_size is this object)


class StaleGradientError(NetsError, UserWarning):
    """A parameter's gradient was not updated by ``backward`` since the last step.

    Also a ``UserWarning``, the class MXNet raises for it, so MXNet programs' handlers
    catch it."""


def _as_param_list(params):
    if isinstance(params, (ParameterDict, dict)):
        params = list(params.values())
    elif isinstance(params, Parameter):
        params = [params]
    params = list(params)
    for p in params:
        if not isinstance(p, Parameter):
            raise NetsError(f"Trainer: params must be Parameters (e.g. net.collect_params()), "
                            f"got {type(p).__name__}")
    names = [p.name for p in params]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise NetsError(f"Trainer: parameters listed twice: {sorted(dup)}")
    return params


class Trainer:
    """Applies an optimizer to a set of parameters (MXNet Gluon's ``Trainer``):
    ``step(batch_size)`` after ``backward()`` rescales gradients by ``1/batch_size`` and
    updates every parameter.

    Parameters
    ----------
    params : ParameterDict, dict, list of Parameter or Parameter
        The parameters to update (e.g. ``net.collect_params()``), each listed once. A
        parameter's key in the optimizer (its ``state``, ``param_dict``) is its position
        here; its ``lr_mult``/``wd_mult`` apply.
    optimizer : str or Optimizer
        A registered name (``'sgd'``, ``'adam'``...) created with ``optimizer_params``, or
        an ``Optimizer`` instance (its ``param_dict`` becomes ``params``; the state it holds
        is kept).
    optimizer_params : dict, optional
        The optimizer's constructor arguments when ``optimizer`` is a name (None with an
        instance).
    kvstore : str or KVStore, optional
        None (no store), a store type name (``'local'``, ``'device'``) or a
        ``nets.kv.KVStore``. A local type name gives a store only when one is needed
        (row_sparse weights, ``update_on_kvstore=True``, compression): on one device there
        is nothing to reduce. ``kvstore=None`` never has a store; row_sparse weights are
        then updated in place, every row present (MXNet refused this case). The store
        gets the parameters' initial values here (a deferred parameter's when its data is
        made): under a distributed store every worker holds rank 0's values before its
        first read. Values set later (``set_data``) do not reach the store.
    compression_params : dict, optional
        Gradient compression for the store, ``{'type': '2bit', 'threshold': t}``.
    update_on_kvstore : bool, optional
        Whether the store updates the weights. None follows MXNet's table:

        - row_sparse weights: the store (a type name creates it; ``False`` raises). Read
          their rows with ``Parameter.row_sparse_data(row_id)``, which pulls them from
          the store; ``data()`` holds the rows last pulled, kept up to date by ``step``
          for the rows it changed;
        - dense weights with row_sparse gradients: the Trainer, unless
          ``update_on_kvstore`` says otherwise (a distributed store updates);
        - dense weights and gradients: the store, unless ``update_on_kvstore=False``.

        When the store updates, ``step`` pushes every fresh gradient in one call (one per
        server) whose answer carries what the update changed, applied to the weights: a
        dense weight with a row_sparse gradient moves only the changed rows and stays equal
        to the store's (``nets.kv.training`` says what is exact, and what ``dist_async``
        leaves stale). ``True`` without a store raises.
    """

    def __init__(self, params: Union[ParameterDict, dict, Iterable[Parameter], Parameter],
                 optimizer: Union[str, "optim.Optimizer"],
                 optimizer_params: Optional[dict] = None,
                 kvstore: Union[str, "kv.KVStore", None] = None,
                 compression_params: Optional[dict] = None,
                 update_on_kvstore: Optional[bool] = None):
        self._params = _as_param_list(params)
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, optim.Optimizer):
            if optimizer_params:
                raise NetsError("Trainer: optimizer_params must be None when optimizer is an "
                                "Optimizer instance")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = optim.create(optimizer, param_dict=param_dict,
                                           **(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad
        self._batch_size = _UNCHECKED  # the latest batch_size checked (``_rescale``)
        self._kvstore, self._update_on_kvstore = self._resolve_store(
            kvstore, compression_params, update_on_kvstore)
        self._kv_pending = set(range(len(self._params)))  # parameters the store lacks
        if self._kvstore is not None:
            if compression_params is not None:
                self._kvstore.set_gradient_compression(compression_params)
            if self._update_on_kvstore:
                self._kvstore.set_optimizer(self._optimizer)
                for p in self._params:
                    if p.stype == "row_sparse":
                        p.set_row_source(self._pull_rows)
            # The store gets the initial values now, before any array is handed out under
            # this Trainer: a parameter not yet initialized (deferred) when its data is
            # made (Parameter.add_init_hook), never into an array a recorded op has read.
            self._init_store_values(created=True)
            for i in self._kv_pending:
                self._params[i].add_init_hook(self._param_made)

    def _resolve_store(self, kvstore, compression_params, update_on_kvstore):
        """``(store or None, update_on_kvstore)`` by MXNet's ``Trainer._init_kvstore``."""
        if update_on_kvstore not in (None, True, False):
            raise NetsError(f"Trainer: update_on_kvstore={update_on_kvstore!r}; expected None, "
                            f"True or False")
        sparse_weight = any(p.stype == "row_sparse" for p in self._params)
        sparse_grad = any(p.grad_stype == "row_sparse" for p in self._params)
        store = None
        if kvstore is not None:  # (nets.kv is imported only where a store is named)
            from .kv import DIST_NAMES, training as kv_training
            store = kv_training.store_for(kvstore, sparse_weight or update_on_kvstore is True
                                          or compression_params is not None, "Trainer")
        if store is None:
            if update_on_kvstore:
                raise NetsError("Trainer: update_on_kvstore=True needs a kvstore (got "
                                "kvstore=None)")
            if compression_params is not None:
                raise NetsError("Trainer: compression_params need a kvstore (got "
                                "kvstore=None)")
            return None, False
        distributed = store.type in DIST_NAMES
        if sparse_weight:
            if update_on_kvstore is False:
                raise NetsError("Trainer: update_on_kvstore=False is not possible with "
                                "row_sparse weights: the store holds and updates them")
            update = True
        elif sparse_grad:
            if update_on_kvstore is False and distributed:
                raise NetsError("Trainer: update_on_kvstore=False is not possible on a "
                                "distributed store with row_sparse gradients")
            update = distributed if update_on_kvstore is None else update_on_kvstore
        else:
            if update_on_kvstore is False and "async" in store.type:
                raise NetsError("Trainer: an asynchronous store updates the weights; "
                                "update_on_kvstore=False is not possible")
            update = True if update_on_kvstore is None else update_on_kvstore
        if update and not store.is_capable(store.OPTIMIZER):
            raise NetsError(f"Trainer: store {store.type!r} cannot run an optimizer; set "
                            f"update_on_kvstore=False")
        return store, update

    def _init_store_values(self, created=False):
        """Give the store the initial value of each parameter it lacks (a parameter whose
        initialization is still deferred, or at the Trainer's creation any parameter
        without data, joins when its data is made); when the store updates the weights,
        each such weight then holds the store's value (rank 0's: under a distributed
        store every worker's copy agrees before its first read).

        Called at the Trainer's creation, when a pending parameter's data is made
        (``_param_made``) and, for what is still missing, before the store is used."""
        items = []
        for i in sorted(self._kv_pending):
            try:
                items.append((i, self._params[i].data()))
            except DeferredInitializationError:
                continue
            except NetsError:  # not initialized: at creation it joins when it is
                if not created:
                    raise
        from .kv import training as kv_training
        with autograd.pause():
            kv_training.init_values(self._kvstore, items, self._update_on_kvstore)
        self._kv_pending.difference_update(i for i, _ in items)
        for i, _ in items:
            self._params[i].remove_init_hook(self._param_made)

    def _param_made(self, param):
        """A pending parameter's data was just made (``Parameter.add_init_hook``): the
        store gets its value before the data is handed out."""
        self._init_store_values(created=True)

    def _pull_rows(self, param, row_id):
        """Pull rows ``row_id`` of ``param`` from the store into its data
        (``Parameter.row_sparse_data``)."""
        self._init_store_values()
        i = self._params.index(param)
        self._kvstore.row_sparse_pull(i, out=param.data(), row_ids=row_id)

    @property
    def optimizer(self) -> "optim.Optimizer":
        """The optimizer, which keeps every parameter's state (``optimizer.state``)."""
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr: float) -> None:
        """Set the optimizer's learning rate (not allowed with an lr_scheduler).

        Parameters
        ----------
        lr : float
            The new learning rate, a finite number ``>= 0``.
        """
        self._optimizer.set_learning_rate(lr)

    def _rescale(self, batch_size):
        """Let the optimizer scale gradients by ``1/batch_size`` (times the optimizer's own
        ``rescale_grad``). ``batch_size`` must be a finite number > 0: MXNet took any, so 0
        raised a bare ZeroDivisionError and a negative size ascended the gradient."""
        if batch_size is not self._batch_size:  # (an int or float object: checked once)
            check_number("batch_size", batch_size, low=0, low_open=True)
            if type(batch_size) is int or type(batch_size) is float:
                self._batch_size = batch_size
        scale = self._scale / batch_size
        if self._optimizer.rescale_grad != scale:  # (set, and checked again, on a change)
            self._optimizer.rescale_grad = scale

    def step(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """``allreduce_grads()`` then ``update(batch_size)``; when the store updates the
        weights, push each fresh gradient and pull the weight instead.

        Parameters
        ----------
        batch_size : float
            Gradients are scaled by ``1/batch_size`` (times the optimizer's own
            ``rescale_grad``): a finite number > 0, usually the batch's sample count.
        ignore_stale_grad : bool
            Skip the parameters whose gradient ``backward`` did not deliver since the last
            step, instead of raising ``StaleGradientError`` (see ``update``).
        """
        self._rescale(batch_size)
        if not self._update_on_kvstore:
            self.allreduce_grads()
            self._update(ignore_stale_grad)
            return
        self._init_store_values()
        fresh = self._fresh(ignore_stale_grad)
        from .kv import training as kv_training
        kv_training.step(self._kvstore, [(i, slot.buffer, weight) for i, weight, slot in fresh])
        for _, _, slot in fresh:
            slot.fresh = False

    def allreduce_grads(self) -> None:
        """Sum gradients through the store (nothing to do without one); not possible when
        the store updates the weights."""
        if self._kvstore is None:
            return
        if self._update_on_kvstore:
            raise NetsError("allreduce_grads() is not possible when the store updates the "
                            "weights (update_on_kvstore); create the Trainer with "
                            "update_on_kvstore=False")
        self._init_store_values()
        from .kv import training as kv_training
        kv_training.reduce_grads(self._kvstore, [(i, p.grad()) for i, p in
                                                 enumerate(self._params) if p.grad_req != "null"])

    def update(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """Update each parameter with its gradient rescaled by ``1/batch_size``
        (``Optimizer.step``); not possible when the store updates the weights.

        A gradient that ``backward`` did not deliver since the last update is stale
        (MXNet's rule; dense and row_sparse alike): unless ``ignore_stale_grad``, any
        stale gradient raises ``StaleGradientError`` before a parameter is updated; with
        it, parameters with stale gradients are skipped. Each update makes the gradient
        it used stale.

        Parameters
        ----------
        batch_size : float
            A finite number > 0, usually the batch's sample count.
        ignore_stale_grad : bool
            Skip parameters with stale gradients instead of raising.
        """
        if self._update_on_kvstore:
            raise NetsError("update() is not possible when the store updates the weights "
                            "(update_on_kvstore); use step(), or create the Trainer with "
                            "update_on_kvstore=False")
        self._rescale(batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad):
        """``update`` with the gradients' scale already set (``_rescale``)."""
        optimizer = self._optimizer
        for i, weight, slot in self._fresh(ignore_stale_grad):
            optimizer.step(i, weight, slot.buffer)
            slot.fresh = False

    def _fresh(self, ignore_stale_grad):
        """``[(i, weight, gradient slot)]`` for the parameters to update: those with a
        gradient (``grad_req`` not 'null') whose gradient is fresh; a stale one raises
        unless ``ignore_stale_grad``. Every parameter is checked before any is updated."""
        out = []
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            weight = p.data()
            slot = autograd.grad_slot(weight)
            if slot.fresh:
                out.append((i, weight, slot))
            elif not ignore_stale_grad:
                raise StaleGradientError(
                    f"Trainer: the gradient of Parameter {p.name!r} is stale: backward() has "
                    f"not updated it since the last step, so the latest forward pass under "
                    f"autograd.record() did not use the parameter (a bug, unless the model "
                    f"uses a subset of its parameters on purpose: then pass "
                    f"ignore_stale_grad=True to step()/update() to skip such parameters)")
        return out

    # -- states -------------------------------------------------------------------------
    def save_states(self, fname: str) -> None:
        """Save the optimizer's state (``nets.optim.save_states``: each parameter's state
        arrays, sparse ones staying sparse, and update counts); when the store updates the
        weights, the store's (the same file).

        Parameters
        ----------
        fname : str
            The file to write (nets' ``.npz`` format, read without pickle).
        """
        if self._update_on_kvstore:
            self._init_store_values()
            self._kvstore.save_optimizer_states(fname)
            return
        optim.save_states(fname, self._optimizer)

    def load_states(self, fname: str) -> None:
        """Load the states ``save_states`` saved for the same parameters and optimizer
        class (into the store when it updates the weights).

        Parameters
        ----------
        fname : str
            A file ``save_states`` (or a store's ``save_optimizer_states``) wrote.
        """
        if self._update_on_kvstore:
            self._init_store_values()
            self._kvstore.load_optimizer_states(fname)
            return
        optim.load_states(fname, self._optimizer,
                          {i: p.data() for i, p in enumerate(self._params)})
