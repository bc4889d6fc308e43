"""``Module`` (MXNet's ``mx.mod.Module``): a symbol bound to data and label shapes, its
parameters, and an optimizer - the symbolic training API - plus checkpoints.

Parameters are the symbol's arguments other than data and labels. Their gradients have
the storage types the symbol infers (row_sparse for a ``row_sparse`` variable, for the
weight of ``dot(csr, w)`` even when dense, for a ``sparse_grad`` Embedding's weight), and
the optimizers of ``nets.optim`` update a row_sparse gradient lazily: only its rows of the
weight and of every state. Auxiliary states (``Symbol.list_auxiliary_states()``, which
operators update in place) are bound beside the parameters, get no gradient and no update,
and come back as ``get_params()``'s ``aux_params``. Checkpoints are
``<prefix>-symbol.json`` (the graph) and ``<prefix>-<epoch:04d>.params.npz`` (the
parameters and auxiliary states, nets' ``.npz`` format, keys ``arg:<name>`` and
``aux:<name>``); loading either never executes code.
"""
from __future__ import annotations

import logging
import os
import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import init as init_mod
from .. import optim
from ..base import NetsError, ShapeError, current_context
from ..batch import DataDesc
from ..kv import DIST_NAMES
from ..kv.compression import from_params
from ..kv import training as kv_training
from ..arrays.creation import arange
from ..serialization import check_stored
from ..symbol import Symbol
from ..symbol.checkpoint import load_checkpoint, save_checkpoint
from .base_module import BaseModule

if TYPE_CHECKING:
    from ..arrays import NDArray
    from ..base import Context
    from ..batch import DataBatch
    from ..init import Initializer
    from ..kv import KVStore
    from ..metric import EvalMetric

    #: data or label shapes: ``DataDesc``s or ``(name, shape)`` pairs
    Shapes = Sequence[DataDesc | tuple[str, tuple[int, ...]]]

__all__ = ["Module", "save_checkpoint", "load_checkpoint"]

_ParamInfo = namedtuple("_ParamInfo", ["name", "lr_mult", "wd_mult"])
_LABELS = ("softmax_label",)


def _states_file(prefix, epoch):
    return f"{prefix}-{epoch:04d}.states.npz"


def _descs(shapes, names, what):
    """``DataDesc``s from DataDesc objects or ``(name, shape)`` pairs, checked against the
    module's ``names``."""
    out = [DataDesc(d[0], d[1], getattr(d, "dtype", np.float32)) for d in shapes]
    given = [d.name for d in out]
    if sorted(given) != sorted(names):
        raise NetsError(f"bind: {what} name {given}, but the module's names are {names} "
                        f"(set data_names/label_names to match the iterator's)")
    return out


class Module(BaseModule):
    """``Module(symbol, data_names=('data',), label_names=('softmax_label',), context=None,
    fixed_param_names=None, compression_params=None)``: train ``symbol`` with ``fit``, or
    step by step with ``bind``, ``init_params``, ``init_optimizer``, then per batch
    ``forward``, ``backward``, ``update``, ``update_metric``. ``compression_params``
    (``{'type': '2bit', 'threshold': t}``) compresses the gradients pushed to the store
    ``init_optimizer`` makes (a local store name then gives one, as for ``Trainer``).

    ``label_names`` that are not arguments of the symbol are ignored (a prediction
    symbol has none); ``fixed_param_names`` get no gradient and no update. Weight decay
    goes only to parameters whose names end in ``_weight`` or ``_gamma`` unless a
    variable declares ``wd_mult`` (MXNet's rule: biases are not decayed). Gradients have
    the storage types ``simple_bind`` infers (row_sparse for ``dot(csr, w)``'s ``w`` or a
    sparse-gradient ``Embedding`` weight), and the optimizer updates a row_sparse
    gradient lazily: only its rows of the weight and of every state are touched.

    Parameters
    ----------
    symbol : Symbol
        The network (its outputs, e.g. ``SoftmaxOutput``, define the loss).
    data_names : sequence of str, default ('data',)
        The arguments fed from a batch's ``data``.
    label_names : sequence of str, default ('softmax_label',)
        The arguments fed from a batch's ``label`` (those the symbol lacks are ignored).
    context : Context or list of one Context, optional
        The device; default the current context.
    fixed_param_names : sequence of str, optional
        Parameters that get no gradient and no update.
    logger : logging.Logger, optional
        Where ``fit`` logs; default the ``nets.module`` logger.
    compression_params : dict, optional
        Gradient compression for the store ``init_optimizer`` makes
        (``{'type': '2bit', 'threshold': t}``).
    """

    def __init__(self, symbol: Symbol, data_names: Sequence[str] | None = ("data",),
                 label_names: Sequence[str] | None = _LABELS,
                 context: Context | list[Context] | None = None,
                 fixed_param_names: Sequence[str] | None = None,
                 logger: logging.Logger | None = None,
                 compression_params: dict[str, Any] | None = None):
        super().__init__(logger)
        if not isinstance(symbol, Symbol):
            raise TypeError(f"Module: symbol must be a nets.sym.Symbol, got "
                            f"{type(symbol).__name__}")
        if isinstance(context, (list, tuple)):
            if len(context) != 1:
                raise NetsError(f"Module: nets runs on one device, got context={context}")
            context = context[0]
        self._context = current_context(context)
        self._symbol = symbol
        args = symbol.list_arguments()
        self._data_names = list(data_names or ())
        missing = [n for n in self._data_names if n not in args]
        if missing:
            raise NetsError(f"Module: data_names {missing} are not arguments of the symbol "
                            f"{args}")
        self._label_names = [n for n in (label_names or ()) if n in args]
        ignored = [n for n in (label_names or ()) if n not in args]
        if ignored and label_names is not _LABELS:
            warnings.warn(f"Module: label_names {ignored} are not arguments of the symbol "
                          f"{args}; they are ignored", stacklevel=2)
        inputs = set(self._data_names) | set(self._label_names)
        self._param_names = [n for n in args if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._fixed = set(fixed_param_names or ())
        self._exec = self._optimizer = self._preload = None
        self._kvstore, self._update_on_kvstore = None, False
        self._rows_pending = None  # prepare's pull of a batch's rows, until they are used
        self._step_pending = None  # update's push to the store, until the weights are used
        self._preload_states = None  # a states file for init_optimizer (Module.load)
        # parameter name -> (the spec nets.init.draw returned for its value, the array's
        # version after the draw): while the version stands (nothing wrote the array since),
        # init_optimizer's store makes the value from the spec
        self._drawn = {}
        self._data_shapes, self._label_shapes = [], []
        if compression_params is not None:
            from_params(compression_params)  # (refused here, before any training)
        self._compression_params = compression_params

    # -- descriptions -------------------------------------------------------------------
    symbol = property(lambda self: self._symbol)
    data_names = property(lambda self: list(self._data_names))
    label_names = property(lambda self: list(self._label_names))
    output_names = property(lambda self: self._symbol.list_outputs())
    data_shapes = property(lambda self: list(self._data_shapes))
    label_shapes = property(lambda self: list(self._label_shapes))

    @property
    def optimizer(self):
        """The optimizer ``init_optimizer`` made (None before), which keeps every
        parameter's state (``optimizer.state``)."""
        return self._optimizer

    @property
    def output_shapes(self):
        self._need("binded", "output_shapes")
        shapes = {d.name: d.shape for d in self._data_shapes + self._label_shapes}
        return list(zip(self.output_names, self._symbol.infer_shape(**shapes)[1]))

    def _need(self, flag, what):
        if not getattr(self, flag):
            step = {"binded": "bind()", "params_initialized": "init_params()",
                    "optimizer_initialized": "init_optimizer()"}[flag]
            raise NetsError(f"{what} needs {step} to be called first")

    # -- setup ---------------------------------------------------------------------------
    def bind(self, data_shapes: Shapes, label_shapes: Shapes | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Module | None = None,
             grad_req: str = "write") -> None:
        """Allocate the arrays for these data/label shapes (``DataDesc``s such as an
        iterator's ``provide_data``, or ``(name, shape)`` pairs). With ``for_training``
        every parameter gets a gradient buffer (``grad_req``) of the storage type the
        symbol infers for it (``Symbol.infer_grad_storage_type``: row_sparse for the
        weight of ``dot(csr, w)``); ``inputs_need_grad`` gives the data one too. Rebinding
        keeps initialized parameters; ``shared_module`` shares its parameters.

        Parameters
        ----------
        data_shapes : list of DataDesc or of (name, shape)
            One per ``data_names`` (an iterator's ``provide_data``).
        label_shapes : list of DataDesc or of (name, shape), optional
            One per label (an iterator's ``provide_label``); none when predicting.
        for_training : bool, default True
            Allocate gradients (False: prediction only).
        inputs_need_grad : bool, default False
            Give the data a gradient too (``get_input_grads``).
        force_rebind : bool, default False
            Rebind a bound module (otherwise a warning, and nothing changes).
        shared_module : Module, optional
            A bound module whose parameter arrays this one shares.
        grad_req : {'write', 'add', 'null'}, default 'write'
            The parameters' gradient request.
        """
        if self.binded and not force_rebind:
            warnings.warn("Module is already bound; pass force_rebind=True to rebind",
                          stacklevel=2)
            return
        self._data_shapes = _descs(data_shapes, self._data_names, "data_shapes")
        self._label_shapes = (_descs(label_shapes, self._label_names, "label_shapes")
                              if label_shapes else [])
        reqs = {}
        for n in self._symbol.list_arguments():
            if n in self._data_names:
                reqs[n] = "write" if for_training and inputs_need_grad else "null"
            elif n in self._label_names or n in self._fixed or not for_training:
                reqs[n] = "null"
            else:
                reqs[n] = grad_req
        shared = shared_module._exec if shared_module is not None else self._exec
        self._drawn.clear()  # (the arrays may be new, or another module's to write)
        if shared_module is not None:
            shared_module._drawn.clear()
        descs = self._data_shapes + self._label_shapes
        self._exec = self._symbol.simple_bind(
            self._context, grad_req=reqs, type_dict={d.name: d.dtype for d in descs},
            shared_exec=shared, **{d.name: d.shape for d in descs})
        self.binded, self.for_training = True, for_training
        self.inputs_need_grad = inputs_need_grad
        if shared_module is not None:
            self.params_initialized = shared_module.params_initialized
        if self._preload is not None:
            self.set_params(*self._preload)
            self._preload = None

    def init_params(self, initializer: Initializer | str | None = None,
                    arg_params: dict[str, NDArray] | None = None,
                    aux_params: dict[str, NDArray] | None = None,
                    allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Fill the parameters from ``arg_params`` and the auxiliary states from
        ``aux_params`` (name -> array), or else with their variable's ``init`` or
        ``initializer`` (default ``Uniform(0.01)``; names ending in bias, beta or
        running_mean get zeros, gamma or running_var ones, as every nets initializer
        does). Storage types are kept. A parameter of ``nets.random.BLOCK_ROWS`` rows or
        more is drawn by row blocks from one seed (``nets.init.draw``); until something
        else writes it, ``init_optimizer`` gives a distributed store its spec instead of
        its values (the servers make their rows).

        Parameters
        ----------
        initializer : Initializer or str, optional
            For parameters without a value or a variable ``init``; default
            ``Uniform(0.01)``.
        arg_params : dict of str to NDArray, optional
            Parameter values by name (shapes must match; dtypes convert).
        aux_params : dict of str to NDArray, optional
            Auxiliary state values by name.
        allow_missing : bool, default False
            Initialize parameters ``arg_params`` lacks (otherwise ``NetsError``).
        force_init : bool, default False
            Re-initialize initialized parameters (otherwise a warning, and nothing
            changes).
        allow_extra : bool, default False
            Skip names of ``arg_params``/``aux_params`` the module lacks (otherwise
            ``NetsError``).
        """
        self._need("binded", "init_params()")
        if self.params_initialized and not force_init:
            warnings.warn("parameters are already initialized; pass force_init=True to "
                          "re-initialize", stacklevel=2)
            return
        if self._update_on_kvstore:
            raise NetsError("init_params/set_params: the KVStore given to init_optimizer holds "
                            "the parameters and would overwrite new values; set them before "
                            "init_optimizer")
        specs = self._symbol.attr_dict()
        groups = ((self._param_names, arg_params, self._exec.arg_dict, "arg_params",
                   "parameters"),
                  (self._aux_names, aux_params, self._exec.aux_dict, "aux_params",
                   "auxiliary states"))
        for names, values, bound, what, kind in groups:  # (all checked before any is written)
            present = values or {}
            extra = sorted(set(present) - set(names))
            if extra and not allow_extra:
                raise NetsError(f"init_params: {what} has {extra}, which are not {kind} of the "
                                f"module (pass allow_extra=True to skip them)")
            missing = [n for n in names if n not in present]
            if values is not None and missing and not allow_missing:
                raise NetsError(f"init_params: {what} has no value for {missing[0]!r} (pass "
                                f"allow_missing=True to initialize it)")
            for n in names:
                if n in present:
                    check_stored(f"init_params: {what}[{n!r}]", values[n], bound[n].shape,
                                 bound[n].dtype)
        for names, values, bound, _, _ in groups:
            for n in names:
                self._drawn.pop(n, None)
                if values is not None and n in values:
                    bound[n][:] = values[n]
                else:
                    init = specs[n].get("init") or initializer or init_mod.Uniform(0.01)
                    spec = init_mod.draw(init_mod.create(init), n, bound[n])
                    if spec is not None:
                        self._drawn[n] = spec, bound[n].version
        self.params_initialized = True

    def _drawn_spec(self, name, array):
        """The spec ``init_params`` drew parameter ``name`` from, when ``array`` holds that
        draw still (its version unchanged), else None (the store gets the values)."""
        drawn = self._drawn.get(name)
        return drawn[0] if drawn is not None and drawn[1] == array.version else None

    def set_params(self, arg_params: dict[str, NDArray],
                   aux_params: dict[str, NDArray] | None = None,
                   allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Set the parameters and auxiliary states (``init_params`` with those values).

        Parameters
        ----------
        arg_params : dict of str to NDArray
            Parameter values by name.
        aux_params : dict of str to NDArray, optional
            Auxiliary state values by name.
        allow_missing : bool, default False
            Leave parameters ``arg_params`` lacks to the initializer.
        force_init : bool, default True
            Overwrite initialized parameters.
        allow_extra : bool, default False
            Skip names the module lacks.
        """
        self.init_params(None, arg_params, aux_params, allow_missing, force_init, allow_extra)

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        """Copies of the parameters and of the auxiliary states.

        Returns
        -------
        tuple of two dicts
            ``(arg_params, aux_params)``, each by name.
        """
        self._need("params_initialized", "get_params()")
        return ({n: self._param_value(i, n) for i, n in enumerate(self._param_names)},
                {n: self._exec.aux_dict[n].copy() for n in self._aux_names})

    def _param_value(self, i, name):
        """A copy of parameter ``name``: a row_sparse weight that the store updates holds
        only the rows last pulled, so its every row comes from the store."""
        self._take_rows()
        arr = self._exec.arg_dict[name]
        if not (self._update_on_kvstore and arr.stype == "row_sparse"):
            return arr.copy()
        out = arr.copy()
        self._kvstore.row_sparse_pull(i, out=out, row_ids=arange(arr.shape[0], dtype="int64"))
        return out

    def init_optimizer(self, kvstore: str | KVStore | None = "local",
                       optimizer: str | optim.Optimizer = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Create the optimizer: a name with ``optimizer_params`` (``rescale_grad``
        defaults to 1 / batch size, as in MXNet) or an ``Optimizer`` instance. Each
        parameter's variable ``lr_mult``/``wd_mult`` apply.

        ``kvstore``: None or a local type name (``'local'``, ``'device'``) update the
        parameters here (one device: nothing to reduce); a ``nets.kv.KVStore`` holds them
        and runs the optimizer (MXNet's ``update_on_kvstore``): each ``update`` is one push
        whose answer brings back what the update changed (``nets.kv.training``), and
        ``prepare`` pulls the rows of row_sparse weights a batch needs.

        Parameters
        ----------
        kvstore : str or KVStore, default 'local'
            None or a local type name update here; a ``KVStore`` (or a distributed type
            name) holds the parameters and runs the optimizer.
        optimizer : str or Optimizer, default 'sgd'
            The optimizer or its registered name.
        optimizer_params : dict or sequence of pairs, default (('learning_rate', 0.01),)
            The optimizer's arguments when ``optimizer`` is a name.
        force_init : bool, default False
            Replace an existing optimizer (otherwise a warning, and nothing changes).
        """
        self._need("binded", "init_optimizer()")
        self._need("params_initialized", "init_optimizer()")
        if self.optimizer_initialized and not force_init:
            warnings.warn("the optimizer is already initialized; pass force_init=True to "
                          "replace it", stacklevel=2)
            return
        store = kv_training.store_for(kvstore, self._compression_params is not None,
                                      "init_optimizer")
        batch_size = self._data_shapes[0].shape[0]
        if store is not None and store.type in DIST_NAMES and "_sync" in store.type:
            batch_size *= store.num_workers
        specs = self._symbol.attr_dict()
        param_dict = {i: _ParamInfo(n, specs[n].get("lr_mult", 1.0), specs[n].get(
            "wd_mult", 1.0 if n.endswith(("_weight", "_gamma")) else 0.0))
                      for i, n in enumerate(self._param_names)}
        if isinstance(optimizer, str):
            kwargs = dict(optimizer_params or ())
            kwargs.setdefault("rescale_grad", 1.0 / batch_size)
            optimizer = optim.create(optimizer, param_dict=param_dict, **kwargs)
        elif isinstance(optimizer, optim.Optimizer):
            if not optimizer.param_dict:
                optimizer.param_dict = param_dict
        else:
            raise TypeError(f"init_optimizer: optimizer must be a name or a "
                            f"nets.optim.Optimizer, got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._kvstore, self._update_on_kvstore = store, store is not None
        self._rows_pending = self._step_pending = None
        if store is not None:
            store.set_optimizer(optimizer)
            if self._compression_params is not None:
                store.set_gradient_compression(self._compression_params)
            args = self._exec.arg_dict
            kv_training.init_values(store, [(i, args[n]) for i, n in
                                            enumerate(self._param_names)], True,
                                    [self._drawn_spec(n, args[n]) for n in self._param_names])
        self._drawn.clear()  # (updates write the parameters from now on)
        self.optimizer_initialized = True
        if self._preload_states is not None:
            self.load_optimizer_states(self._preload_states)
            self._preload_states = None

    def prepare(self, data_batch: DataBatch,
                sparse_row_id_fn: Callable[[DataBatch], dict[str, NDArray]] | None = None,
                ) -> None:
        """Pull from the store the rows of row_sparse weights that ``data_batch`` needs:
        ``sparse_row_id_fn(data_batch)`` returns ``{parameter name: row ids}``. Without a
        store that updates the weights every row is present, and there is nothing to do.

        The pull is started, not waited for (MXNet's engine runs it in the background):
        the rows are taken when the weights are next used - ``forward``, ``update``,
        ``get_params`` - and a distributed store orders it after this worker's pushes
        made before the call, so it sees the same rows a blocking pull here would. A
        second ``prepare`` with a ``sparse_row_id_fn`` before that use replaces the first,
        whose rows are dropped unwritten; an error of the pull is raised at the use,
        naming the keys.

        Parameters
        ----------
        data_batch : DataBatch
            The next batch.
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(data_batch)`` -> ``{parameter name: row ids}``.
        """
        self._need("binded", "prepare()")
        if sparse_row_id_fn is None or not self._update_on_kvstore:
            return
        self._rows_pending = None
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise NetsError(f"prepare: sparse_row_id_fn must return a dict {{parameter name: "
                            f"row ids}}, got {type(row_ids).__name__}")
        keys, outs, ids_list = [], [], []
        for name, ids in row_ids.items():
            if name not in self._param_names:
                raise NetsError(f"prepare: sparse_row_id_fn names {name!r}, which is not a "
                                f"parameter of the module {self._param_names}")
            weight = self._exec.arg_dict[name]
            if weight.stype == "row_sparse":
                keys.append(self._param_names.index(name))
                outs.append(weight)
                ids_list.append(ids)
        if keys:
            self._rows_pending = self._kvstore.prefetch_rows(keys, outs, ids_list)

    def _take_rows(self):
        """Apply ``update``'s answer, then wait for ``prepare``'s pull (those pending): the
        weights hold the store's values and the pulled rows."""
        for name in ("_step_pending", "_rows_pending"):
            pending = getattr(self, name)
            setattr(self, name, None)
            if pending is not None:
                pending.wait()

    def save_optimizer_states(self, fname: str | os.PathLike) -> None:
        """Save the optimizer's state (``nets.optim.save_states``: each parameter's state
        arrays, sparse ones staying sparse, and update counts), or the store's when it
        holds the parameters.

        Parameters
        ----------
        fname : str or path-like
            The ``.npz`` file to write.
        """
        self._need("optimizer_initialized", "save_optimizer_states()")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
            return
        optim.save_states(fname, self._optimizer)

    def load_optimizer_states(self, fname: str | os.PathLike) -> None:
        """Load states written by ``save_optimizer_states`` (same parameters, optimizer).

        Parameters
        ----------
        fname : str or path-like
            The file ``save_optimizer_states`` wrote.
        """
        self._need("optimizer_initialized", "load_optimizer_states()")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        optim.load_states(fname, self._optimizer, {i: self._exec.arg_dict[n] for i, n in
                                                   enumerate(self._param_names)})

    # -- per batch ---------------------------------------------------------------------------
    def forward(self, data_batch: DataBatch, is_train: bool | None = None) -> None:
        """Run the symbol on ``data_batch`` (``.data`` and ``.label`` lists; labels are
        optional when predicting). A batch of another batch size rebinds (parameters are
        shared); a batch whose other dimensions differ from the bound shapes (another
        feature width) raises ``ShapeError`` and leaves every parameter as it was.

        Parameters
        ----------
        data_batch : DataBatch
            The batch.
        is_train : bool, optional
            Record for ``backward`` (train mode); default ``for_training``.
        """
        self._need("binded", "forward()")
        self._take_rows()
        is_train = self.for_training if is_train is None else is_train
        data = list(data_batch.data)
        if len(data) != len(self._data_names):
            raise NetsError(f"forward: the batch has {len(data)} data arrays, the module "
                            f"{len(self._data_names)} data_names {self._data_names}")
        # the batch's arrays follow the bound descriptions' order (the iterator's
        # provide_data, e.g. a dict's names sorted), as MXNet's executor group feeds them
        feed = dict(zip([d.name for d in self._data_shapes], data))
        labels = list(data_batch.label or ())
        if labels and self._label_names:
            feed.update(zip([d.name for d in self._label_shapes] or self._label_names, labels))
        args = self._exec.arg_dict
        new = {n: a.shape for n, a in feed.items() if a.shape != args[n].shape}
        if new:
            # another batch size rebinds, sharing every parameter; a change that would
            # reshape a parameter (another feature width) raises, keeping them all
            try:
                reshaped = self._exec.reshape(**{n: a.shape for n, a in feed.items()})
            except ShapeError as e:
                bound = {n: args[n].shape for n in new}
                raise ShapeError(f"forward: the batch's shapes {new} are inconsistent with "
                                 f"the bound shapes {bound}: only the batch size may "
                                 f"change ({e})") from None
            self._exec = reshaped
            self._data_shapes = [type(d)(d.name, feed[d.name].shape, d.dtype)
                                 for d in self._data_shapes]
            self._label_shapes = [type(d)(d.name, feed[d.name].shape, d.dtype)
                                  if d.name in feed else d for d in self._label_shapes]
        self._exec.forward(is_train, **feed)

    def backward(self, out_grads: NDArray | Sequence[NDArray] | None = None) -> None:
        """Gradients of the outputs (output layers supply their own loss gradient).

        Parameters
        ----------
        out_grads : NDArray or list of NDArray, optional
            Head gradients, one per output; default ones.
        """
        self._need("binded", "backward()")
        self._exec.backward(out_grads)

    def update(self) -> None:
        """Apply the optimizer to every parameter that has a gradient (lazily, by rows,
        for row_sparse gradients): ``Optimizer.step``, the optimizer keeping each
        parameter's state (``optimizer.state``, keyed by its position among the
        parameters)."""
        self._need("optimizer_initialized", "update()")
        self._take_rows()
        exe, opt = self._exec, self._optimizer
        items = [(i, exe.grad_dict[n], exe.arg_dict[n]) for i, n in enumerate(self._param_names)
                 if exe.grad_dict.get(n) is not None]
        if self._update_on_kvstore:  # the store runs the optimizer: one push for them all,
            # sent with the next prepare's row pull, applied at the next use of the weights
            self._step_pending = kv_training.start_step(self._kvstore, items)
            return
        for i, grad, weight in items:
            opt.step(i, weight, grad)

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The outputs of the latest ``forward``.

        Parameters
        ----------
        merge_multi_context : bool, default True
            Accepted for MXNet (one device: nothing to merge).

        Returns
        -------
        list of NDArray
            One array per output.
        """
        self._need("binded", "get_outputs()")
        return list(self._exec.outputs)

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        """The data gradients (``bind(inputs_need_grad=True)``).

        Parameters
        ----------
        merge_multi_context : bool, default True
            Accepted for MXNet (one device: nothing to merge).

        Returns
        -------
        list of NDArray
            One gradient per ``data_names``.
        """
        if not self.inputs_need_grad:
            raise NetsError("get_input_grads() needs bind(..., inputs_need_grad=True)")
        return [self._exec.grad_dict[n] for n in self._data_names]

    def update_metric(self, eval_metric: EvalMetric, labels: list[NDArray],
                      pre_sliced: bool = False) -> None:
        """``eval_metric.update(labels, outputs)``.

        Parameters
        ----------
        eval_metric : EvalMetric
            The metric to update.
        labels : list of NDArray
            The batch's labels.
        pre_sliced : bool, default False
            Accepted for MXNet (one device: nothing is sliced).
        """
        eval_metric.update(labels, self.get_outputs())

    # -- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int,
                        save_optimizer_states: bool = False) -> None:
        """``save_checkpoint(prefix, epoch, symbol, *get_params())``: the files
        ``<prefix>-symbol.json`` and ``<prefix>-<epoch:04d>.params.npz``.

        Parameters
        ----------
        prefix : str
            The files' prefix.
        epoch : int
            The epoch number in the parameters file's name.
        save_optimizer_states : bool, default False
            Also write the optimizer's states to ``<prefix>-<epoch:04d>.states.npz``.
        """
        save_checkpoint(prefix, epoch, self._symbol, *self.get_params())
        if save_optimizer_states:
            self.save_optimizer_states(_states_file(prefix, epoch))

    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False,
             **kwargs: Any) -> Module:
        """A Module of a checkpoint's symbol whose parameters are set at ``bind``.

        Parameters
        ----------
        prefix : str
            The checkpoint's prefix (``save_checkpoint``'s).
        epoch : int
            The epoch of the parameters file.
        load_optimizer_states : bool, default False
            Restore the optimizer's states (from ``<prefix>-<epoch:04d>.states.npz``) in
            ``init_optimizer``.
        **kwargs
            ``Module``'s other arguments (``data_names``, ``label_names``, ...).

        Returns
        -------
        Module
            The module, to be bound.
        """
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol, **kwargs)
        mod._preload = (args, auxs)
        if load_optimizer_states:
            mod._preload_states = _states_file(prefix, epoch)
        return mod
