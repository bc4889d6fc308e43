"""``Parameter`` and ``ParameterDict`` (MXNet Gluon's, sparse-aware).

A parameter holds one array of storage type ``stype`` ('default', 'row_sparse' or
'csr') and, unless ``grad_req='null'``, a gradient of storage type
``grad_stype``. Sparse gradients do not require sparse weights: a dense weight
with a row_sparse gradient is the common, first-class case.
"""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, ItemsView, KeysView, ValuesView
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import autograd
from .. import init as init_mod
from ..base import NetsError, ShapeError, StorageTypeError, as_dtype, current_context
from ..arrays.creation import array, zeros_sparse
from ..arrays.dense import NDArray
from ..serialization import check_stored

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from ..symbol import Symbol

    from ..base import Context
    from ..init import Initializer

__all__ = ["Parameter", "ParameterDict", "DeferredInitializationError", "ParameterStypeError"]

_GRAD_REQS = ("write", "add", "null")


class DeferredInitializationError(NetsError):
    """A parameter's data was requested before its deferred initialization ran."""


def _contexts(ctx, what):
    """``ctx`` (None, a Context or a non-empty list of them) as a list of Contexts."""
    if isinstance(ctx, (list, tuple)):
        if not ctx:
            raise NetsError(f"{what}: ctx=[] names no context")
        return [current_context(c) for c in ctx]
    return [current_context(ctx)]


def _context_of(row_id, data):
    """The context of ``row_id`` (an ``NDArray``), else ``data``'s."""
    return row_id.context if isinstance(row_id, NDArray) else data.context


def _shape_known(shape):
    return shape is not None and all(d > 0 for d in shape)


class ParameterStypeError(StorageTypeError, AssertionError):
    """An unknown storage type given to ``Parameter`` (also an ``AssertionError``, which
    MXNet raised)."""


class Parameter:
    """A weight of a block: ``Parameter(name, grad_req='write', shape=None, dtype='float32',
    lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
    stype='default', grad_stype='default')``.

    A dimension of 0 (or -1) in ``shape`` is unknown until the first forward pass
    (deferred initialization). ``stype='row_sparse'`` stores the weight as rows;
    ``grad_stype='row_sparse'`` makes backward deliver only the touched rows.
    ``stype='csr'`` stores a 2-D weight as CSR (its initial values are the initializer's
    non-zeros); its gradient is ``'csr'`` (the weight's stored values) or ``'default'``.

    Parameters
    ----------
    name : str
        The parameter's full name (``dense0_weight``).
    grad_req : {'write', 'add', 'null'}, default 'write'
        How backward delivers the gradient: overwrite it, add to it, or none.
    shape : int or tuple of int, optional
        The shape; a dimension of 0 (or -1) is inferred at the first forward pass.
    dtype : str or numpy dtype, default 'float32'
        The element type.
    lr_mult : float, default 1.0
        Multiplier of the optimizer's learning rate for this parameter.
    wd_mult : float, default 1.0
        Multiplier of the optimizer's weight decay for this parameter.
    init : Initializer or str, optional
        The initializer; default the one ``initialize`` is given.
    allow_deferred_init : bool, default False
        Allow ``initialize`` before the shape is known (it then waits for the shape).
    differentiable : bool, default True
        False gives no gradient (``grad_req`` is then ``'null'``).
    stype : {'default', 'row_sparse', 'csr'}, default 'default'
        The weight's storage type.
    grad_stype : {'default', 'row_sparse', 'csr'}, optional
        The gradient's storage type (a row_sparse weight needs ``'row_sparse'``); default
        ``'row_sparse'`` for a row_sparse weight, else ``'default'``.

    An unknown ``stype`` or ``grad_stype`` raises ``ParameterStypeError`` (a
    ``StorageTypeError`` that is also an ``AssertionError``, MXNet's exception).
    """

    def __init__(self, name: str, grad_req: str = "write",
                 shape: int | tuple[int, ...] | None = None, dtype: DTypeLike = "float32",
                 lr_mult: float = 1.0, wd_mult: float = 1.0,
                 init: Initializer | str | None = None, allow_deferred_init: bool = False,
                 differentiable: bool = True, stype: str = "default",
                 grad_stype: str | None = None):
        if grad_stype is None:  # MXNet's Parameter(stype='row_sparse') without grad_stype
            grad_stype = "row_sparse" if stype == "row_sparse" else "default"
        for arg, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):
                raise ParameterStypeError(f"Parameter {name!r}: {arg}={value!r}; expected "
                                          f"'default', 'row_sparse' or 'csr'")
        if stype == "row_sparse" and grad_stype != "row_sparse":
            raise NetsError(f"Parameter {name!r}: a row_sparse weight needs "
                            f"grad_stype='row_sparse' (got {grad_stype!r})")
        if (stype == "csr") != (grad_stype == "csr") and grad_stype != "default":
            raise NetsError(f"Parameter {name!r}: grad_stype={grad_stype!r} with "
                            f"stype={stype!r}; a csr gradient needs a csr weight, whose "
                            f"gradient is 'csr' or 'default'")
        self.name = name
        self._shape = None if shape is None else self._as_shape(shape)
        self.dtype = as_dtype(dtype)
        self.lr_mult, self.wd_mult = lr_mult, wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self.stype, self.grad_stype = stype, grad_stype
        self._grad_req = self._check_grad_req(grad_req if differentiable else "null")
        self._array = None
        self._deferred = None  # (initializer, ctx) waiting for a known shape
        # the contexts given to initialize/reset_ctx: the one array stands for a copy on
        # each (MXNet keeps one per device; on CPUs they would be equal copies)
        self._ctxs = None
        # set by a Trainer whose KVStore holds this row_sparse weight: (param, row_id) pulls
        # those rows from the store into the data
        self._row_source = None
        # set by a Trainer whose KVStore lacks this parameter's value: each is called (as
        # hook(param), outside autograd's recording) when the data is made, before any
        # caller can have it, to give the store, and take back, the initial value
        self._init_hooks = []

    @staticmethod
    def _as_shape(shape):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return tuple(0 if int(d) < 0 else int(d) for d in shape)

    def _check_grad_req(self, req):
        if req not in _GRAD_REQS:
            raise NetsError(f"Parameter {self.name!r}: grad_req={req!r}; expected one of "
                            f"{_GRAD_REQS}")
        return req

    def __repr__(self):
        return (f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype.name}, "
                f"stype={self.stype}, grad_stype={self.grad_stype})")

    # -- shape -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape (0 for a dimension not known yet); settable to fill unknown ones."""
        return self._shape

    @shape.setter
    def shape(self, new):
        new = self._as_shape(new)
        if self._shape is not None:
            ok = len(new) == len(self._shape) and all(
                o == 0 or o == n for o, n in zip(self._shape, new))
            if not ok:
                raise ShapeError(f"Parameter {self.name!r}: shape {new} is incompatible with "
                                 f"the declared shape {self._shape}")
        self._shape = new

    # -- grad_req ------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        """``'write'``, ``'add'`` or ``'null'``; settable (re-attaches the gradient)."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        req = self._check_grad_req(req)
        if not self._differentiable:
            req = "null"
        self._grad_req = req
        if self._array is not None:
            self._attach_grad()

    def _attach_grad(self):
        """Declare the data's gradient slot: a new buffer of ``grad_stype`` written by
        ``grad_req``, or none for ``'null'``."""
        if self._grad_req == "null":
            autograd.release_grad(self._array)
        else:
            autograd.attach_grad(self._array, self._grad_req, stype=self.grad_stype)

    # -- initialization ---------------------------------------------------------------
    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None,
                   default_init: Initializer | str | None = None,
                   force_reinit: bool = False) -> None:
        """Allocate and fill the data (and gradient). With an unknown shape and
        ``allow_deferred_init`` this waits for the first forward.

        Parameters
        ----------
        init : Initializer or str, optional
            The initializer; default the parameter's own ``init``, else ``default_init``.
        ctx : Context or list of Context, optional
            The device; default the current context. A list (MXNet's copy per device)
            keeps one array, on the first, that ``list_data``/``list_grad`` give once per
            context.
        default_init : Initializer or str, optional
            The initializer when neither ``init`` nor the parameter's own is given;
            default ``Uniform(0.07)``.
        force_reinit : bool, default False
            Re-initialize a parameter that already has values (otherwise it is kept,
            with a warning).
        """
        if self._array is not None and not force_reinit:
            warnings.warn(f"Parameter {self.name!r} is already initialized; pass "
                          f"force_reinit=True to re-initialize", stacklevel=2)
            return
        chosen = init if init is not None else self.init
        if chosen is None:
            chosen = default_init if default_init is not None else init_mod.Uniform()
        self._ctxs = _contexts(ctx, "initialize")
        ctx = self._ctxs[0]
        if not _shape_known(self._shape):
            if not self.allow_deferred_init:
                raise NetsError(f"cannot initialize Parameter {self.name!r}: its shape "
                                f"{self._shape} is unknown and allow_deferred_init is False")
            self._array, self._deferred = None, (chosen, ctx)
            return
        self._init_impl(chosen, ctx)

    def _init_impl(self, initializer, ctx, made=True):
        data = zeros_sparse(self.stype, self._shape, ctx, self.dtype)
        init_mod.create(initializer)(self.name, data)
        self._array, self._deferred = data, None
        if self._ctxs is None:  # (set_data before initialize: the data's context)
            self._ctxs = [data.context]
        self._attach_grad()
        if made:
            self._made()

    def _made(self):
        """The data now holds its first values: run the init hooks (``add_init_hook``)."""
        if self._init_hooks:
            with autograd.pause():
                for hook in list(self._init_hooks):
                    hook(self)

    def add_init_hook(self, hook: Callable[[Parameter], Any]) -> None:
        """Call ``hook(param)`` when the data is next made (``initialize``, the end of a
        deferred initialization, ``set_data`` of a parameter without data), before it is
        handed out; the hook stays until ``remove_init_hook``. A Trainer whose KVStore
        lacks the parameter's value sets one, so that the store's initial value is the
        data's before the first read.

        Parameters
        ----------
        hook : callable
            Called as ``hook(param)``, outside autograd's recording.
        """
        if hook not in self._init_hooks:
            self._init_hooks.append(hook)

    def remove_init_hook(self, hook: Callable[[Parameter], Any]) -> None:
        """Drop ``hook`` (set by ``add_init_hook``); nothing if it is not set.

        Parameters
        ----------
        hook : callable
            The hook to drop.
        """
        if hook in self._init_hooks:
            self._init_hooks.remove(hook)

    def _finish_deferred_init(self):
        if self._deferred is None:
            return
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                f"Parameter {self.name!r}: shape {self._shape} is still unknown after the "
                f"block inferred shapes")
        self._init_impl(*self._deferred)

    def _check_initialized(self):
        if self._array is not None:
            return
        if self._deferred is not None:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet: its initialization "
                f"was deferred until the first forward pass infers its shape {self._shape}")
        raise NetsError(f"Parameter {self.name!r} has not been initialized; call "
                        f"block.initialize() (or param.initialize()) first")

    # -- access ---------------------------------------------------------------------
    def data(self, ctx: Context | None = None) -> NDArray:
        """The parameter's array.

        Parameters
        ----------
        ctx : Context, optional
            Accepted for MXNet (one device).

        Returns
        -------
        NDArray
            The data, of storage type ``stype``.
        """
        data = self._array
        if data is None:
            self._check_initialized()  # (raises: why there is none)
        return data

    @property
    def _data(self):
        """MXNet's private list of the data per context (read by MXNet's tests and some of
        its programs): the one array once per context, or None before initialization.
        Read-only."""
        return None if self._array is None else [self._array] * len(self._ctxs)

    def list_data(self) -> list[NDArray]:
        """The data once per context of ``list_ctx()`` (one array: see ``initialize``).

        Returns
        -------
        list of NDArray
            The data on each device.
        """
        return [self.data()] * len(self._ctxs)

    def grad(self, ctx: Context | None = None) -> NDArray:
        """The gradient array.

        Parameters
        ----------
        ctx : Context, optional
            Accepted for MXNet (one device).

        Returns
        -------
        NDArray
            The gradient, of storage type ``grad_stype``.
        """
        self._check_initialized()
        if self._array.grad is None:
            raise NetsError(f"Parameter {self.name!r} has no gradient (grad_req='null')")
        return self._array.grad

    def var(self) -> Symbol:
        """This parameter as a symbol variable (MXNet's ``Parameter.var()``): named
        ``name``, declaring its shape, dtype, storage types, ``lr_mult``, ``wd_mult`` and
        initializer, made once and kept.

        Returns
        -------
        Symbol
            The variable.
        """
        from ..symbol import Variable
        if getattr(self, "_var", None) is None:
            shape = self.shape if self.shape is not None and _shape_known(self.shape) else None
            self._var = Variable(self.name, shape=shape, dtype=self.dtype,
                                 lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                 stype=self.stype, grad_stype=self.grad_stype)
        return self._var

    def list_grad(self) -> list[NDArray]:
        """The gradient once per context of ``list_ctx()`` (one array).

        Returns
        -------
        list of NDArray
            The gradient on each device.
        """
        return [self.grad()] * len(self._ctxs)

    def list_ctx(self) -> list[Context]:
        """The contexts the data lives on.

        Returns
        -------
        list of Context
            The contexts given to ``initialize`` (or ``reset_ctx``).
        """
        if self._array is None and self._deferred is None:
            self._check_initialized()  # (raises)
        return list(self._ctxs)

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """The rows ``row_id`` of a row_sparse parameter, as a row_sparse array.

        When a Trainer keeps the weight on a KVStore, the rows are pulled from the store
        into the parameter's data, which then holds exactly those rows and is returned
        (MXNet's); otherwise they are selected from the data, which holds every row. The
        result is on ``row_id``'s context (MXNet's rule), a copy when that is another one.

        Parameters
        ----------
        row_id : NDArray
            The row ids wanted (any order, repeats allowed).

        Returns
        -------
        RowSparseNDArray
            Those rows of the weight.
        """
        self._check_initialized()
        if self.stype != "row_sparse":
            raise NetsError(f"row_sparse_data() needs a row_sparse Parameter; {self.name!r} "
                            f"has stype={self.stype!r}: use data()")
        if self._row_source is not None:
            with autograd.pause():
                self._row_source(self, row_id)
            return self._array.as_in_context(_context_of(row_id, self._array))
        from ..ops import retain
        return retain(self._array, row_id).as_in_context(_context_of(row_id, self._array))

    def set_row_source(self, source: Callable[[Parameter, NDArray], Any] | None) -> None:
        """Read this parameter's rows in ``row_sparse_data`` through ``source``.

        Parameters
        ----------
        source : callable or None
            ``source(param, row_id)`` fills the data with those rows (a Trainer whose
            KVStore holds the weight sets it); None reads them from the data.
        """
        self._row_source = source

    def list_row_sparse_data(self, row_id: NDArray) -> list[NDArray]:
        """``row_sparse_data(row_id)`` once per context of ``list_ctx()`` (one array).

        Parameters
        ----------
        row_id : NDArray
            The row ids wanted.

        Returns
        -------
        list of RowSparseNDArray
            Those rows on each device.
        """
        return [self.row_sparse_data(row_id)] * len(self._ctxs)

    def set_data(self, data: NDArray | ArrayLike) -> None:
        """Replace the values (the storage type stays ``stype``).

        Parameters
        ----------
        data : NDArray or array_like
            The new values: the parameter's shape exactly (nothing broadcasts) and a
            dtype that converts to its own without loss of meaning
            (``nets.serialization.check_stored``).
        """
        self._set_checked(self._checked(data, f"Parameter {self.name!r}.set_data"))

    def _checked(self, data, what):
        """``data`` as an array that ``set_data`` accepts; errors name ``what``."""
        if not hasattr(data, "stype"):
            data = np.asarray(data)  # (checked in numpy's dtype for it, then converted)
        check_stored(what, data, None if self._shape is None else tuple(
            d if d > 0 else None for d in self._shape), self.dtype)
        return data if hasattr(data, "stype") else array(data, dtype=self.dtype)

    def _set_checked(self, data):
        if self._array is None:
            self.shape = data.shape
            pending = self._deferred
            self._init_impl(init_mod.Zero(), pending[1] if pending else None, made=False)
            self._array[:] = data
            self._made()
            return
        self._array[:] = data

    def zero_grad(self) -> None:
        """Reset the gradient to zero (a row_sparse gradient becomes empty)."""
        if self._array is None or self._array.grad is None:
            return
        g = self._array.grad
        g[:] = zeros_sparse(g.stype, g.shape, g.context, g.dtype)

    def cast(self, dtype: DTypeLike) -> None:
        """Cast data (and gradient) to ``dtype``.

        Parameters
        ----------
        dtype : str or numpy dtype
            The new element type.
        """
        self.dtype = as_dtype(dtype)
        if self._array is not None:
            self._array = self._array.astype(self.dtype)
            self._attach_grad()

    def reset_ctx(self, ctx: Context | list[Context]) -> None:
        """Move to ``ctx`` (only the CPU exists: checks the contexts, which ``list_ctx``
        then gives, and keeps the data).

        Parameters
        ----------
        ctx : Context or list of Context
            The new device(s).
        """
        self._ctxs = _contexts(ctx, "reset_ctx")


class ParameterDict:
    """An ordered ``{name: Parameter}`` whose ``get`` creates ``prefix + name`` on demand.

    Parameters
    ----------
    prefix : str, default ''
        The prefix ``get`` puts before a name.
    shared : ParameterDict, optional
        Parameters that ``get`` returns (instead of creating new ones) when it holds
        the full name.
    """

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    @property
    def prefix(self) -> str:
        """The prefix ``get`` puts before a name."""
        return self._prefix

    def __getitem__(self, key):
        return self._params[key]

    def __contains__(self, key):
        return key in self._params

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def keys(self) -> KeysView[str]:
        """The full names.

        Returns
        -------
        KeysView
            The names, in order.
        """
        return self._params.keys()

    def values(self) -> ValuesView[Parameter]:
        """The parameters.

        Returns
        -------
        ValuesView
            The parameters, in order.
        """
        return self._params.values()

    def items(self) -> ItemsView[str, Parameter]:
        """``(name, parameter)`` pairs.

        Returns
        -------
        ItemsView
            The pairs, in order.
        """
        return self._params.items()

    def __repr__(self):
        body = "\n".join(f"  {p!r}" for p in self._params.values())
        return f"{self._prefix}(\n{body}\n)"

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The parameter ``prefix + name``, created if it does not exist.

        Parameters
        ----------
        name : str
            The name after the prefix (``'weight'``).
        **kwargs
            ``Parameter``'s arguments (``shape``, ``dtype``, ``init``, ``stype``, ...) to
            create it with; an existing parameter must agree with them (an unknown
            dimension of its shape is filled in).

        Returns
        -------
        Parameter
            The parameter.
        """
        full = self._prefix + name
        param = self._params.get(full)
        if param is None and self._shared is not None and full in self._shared:
            param = self._params[full] = self._shared[full]
        if param is None:
            param = self._params[full] = Parameter(full, **kwargs)
            return param
        for k, v in kwargs.items():
            if k == "shape" and v is not None:
                param.shape = v
            elif hasattr(param, k) and v is not None and getattr(param, k) != v \
                    and k not in ("init",):
                raise NetsError(f"Parameter {full!r} exists with {k}={getattr(param, k)!r}, "
                                f"requested {v!r}")
        return param

    def _add(self, param):
        existing = self._params.get(param.name)
        if existing is not None and existing is not param:
            raise NetsError(f"two different parameters are named {param.name!r}")
        self._params[param.name] = param

    def update(self, other: ParameterDict) -> None:
        """Add every parameter of ``other``.

        Parameters
        ----------
        other : ParameterDict
            The parameters to add (one name must not name two different parameters).
        """
        for p in other.values():
            self._add(p)

    def select(self, pattern: str) -> ParameterDict:
        """The parameters whose name matches a regular expression.

        Parameters
        ----------
        pattern : str
            A regular expression matched at the start of each full name.

        Returns
        -------
        ParameterDict
            A new dict of those parameters.
        """
        out = ParameterDict(self._prefix)
        regex = re.compile(pattern)
        for p in self._params.values():
            if regex.match(p.name):
                out._add(p)
        return out

    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize every parameter.

        Parameters
        ----------
        init : Initializer or str, optional
            The initializer of the parameters without their own; default
            ``Uniform(0.07)``.
        ctx : Context or list of Context, optional
            The device; default the current context.
        verbose : bool, default False
            Print each parameter's name as it is initialized.
        force_reinit : bool, default False
            Re-initialize parameters that already have values.
        """
        for p in self._params.values():
            if verbose:
                print(f"initializing {p.name}")
            p.initialize(None, ctx, default_init=init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Reset every gradient."""
        for p in self._params.values():
            p.zero_grad()

    def setattr(self, name: str, value: Any) -> None:
        """Set an attribute on every parameter.

        Parameters
        ----------
        name : str
            The attribute (e.g. ``grad_req``, ``lr_mult``).
        value : object
            Its new value.
        """
        for p in self._params.values():
            setattr(p, name, value)

    def reset_ctx(self, ctx: Context | list[Context]) -> None:
        """Move every parameter to ``ctx``.

        Parameters
        ----------
        ctx : Context or list of Context
            The new device.
        """
        for p in self._params.values():
            p.reset_ctx(ctx)
