"""``SymbolBlock``: a block running a ``nets.sym`` graph (MXNet's ``gluon.SymbolBlock``),
and ``SymbolBlock.imports``, which loads what ``HybridBlock.export`` wrote."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import symbol as _symbol
from ..base import NetsError
from ..arrays.dense import NDArray
from ..arrays.creation import array
from ..serialization import load_arrays
from .block import HybridBlock

if TYPE_CHECKING:
    from ..base import Context
    from ..symbol import Symbol
    from .parameter import ParameterDict

__all__ = ["SymbolBlock"]


class SymbolBlock(HybridBlock):
    """A block computing the graph ``outputs`` of the variables ``inputs``.

    Every other argument of the graph, and each auxiliary state, becomes a parameter
    named as its variable (its declared shape, dtype, storage types, ``lr_mult``,
    ``wd_mult`` and initializer; an unknown shape is inferred from the inputs at the
    first call). Calls run the graph's operators on the arrays, recorded by autograd
    like any block's. Sparse parameters (``stype='row_sparse'``) are supported (MXNet's
    SymbolBlock refused them).

    Parameters
    ----------
    outputs : Symbol or list of Symbol
        The graph's outputs (several are grouped; a call then returns a list).
    inputs : Symbol or list of Symbol
        The input variables, in call order.
    params : ParameterDict, optional
        Parameters to share: those whose names the graph uses are taken from it.
    """

    def __init__(self, outputs: Symbol | Sequence[Symbol], inputs: Symbol | Sequence[Symbol],
                 params: ParameterDict | None = None):
        super().__init__(prefix="", params=params)
        multi = isinstance(outputs, (list, tuple))
        self._graph_out = _symbol.Group(list(outputs)) if multi else outputs
        self._multi = multi and len(outputs) > 1
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self._input_names = [s.name for s in inputs]
        graph = self._graph_out
        arguments, aux = graph.list_arguments(), graph.list_auxiliary_states()
        missing = [n for n in self._input_names if n not in arguments]
        if missing:
            raise NetsError(f"SymbolBlock: inputs {missing} are not arguments of the graph "
                            f"{arguments}")
        declared = graph.attr_dict()
        self._param_names = [n for n in arguments if n not in self._input_names] + aux
        for name in self._param_names:
            attrs = declared.get(name, {})
            shape = attrs.get("shape")
            kwargs = {"shape": tuple(shape) if shape else None, "allow_deferred_init": True,
                      "grad_req": "null" if name in aux else "write"}
            for key in ("dtype", "stype", "grad_stype", "lr_mult", "wd_mult", "init"):
                if attrs.get(key) is not None:
                    kwargs[key] = attrs[key]
            param = self.params.get(name, **kwargs)
            self._reg_params[name] = param

    def forward(self, x: Any, *args: Any) -> Any:
        """Run the graph on the inputs (NDArrays), or compose it (Symbols).

        Parameters
        ----------
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            The other inputs, in the order of ``inputs``.

        Returns
        -------
        NDArray or list of NDArray (Symbol when composing)
            The outputs.
        """
        inputs = (x,) + args
        if len(inputs) != len(self._input_names):
            raise NetsError(f"SymbolBlock: {len(inputs)} inputs given, the graph takes "
                            f"{self._input_names}")
        if isinstance(x, _symbol.Symbol):
            raise NetsError("SymbolBlock: composing with Symbol inputs is not supported; "
                            "call it on arrays")
        from ..symbol.executor import Program
        inputs = [a if isinstance(a, NDArray) else array(a) for a in inputs]
        params = [self._reg_params[n] for n in self._param_names]
        if any(p._array is None for p in params):
            shapes = self._graph_out.infer_shape_partial(
                **{n: a.shape for n, a in zip(self._input_names, inputs)})
            by_name = dict(zip(self._graph_out.list_arguments() +
                               self._graph_out.list_auxiliary_states(), shapes[0] + shapes[2]))
            for p in params:
                if p._array is None and p._deferred is not None and by_name.get(p.name):
                    p.shape = by_name[p.name]
                    p._finish_deferred_init()
                p._check_initialized()
        self._graph = self._graph_out
        program = Program(self._graph_out, self._input_names + self._param_names)
        outs = program.run(inputs + [p.data() for p in params])
        return list(outs) if self._multi else outs[0]

    def _call_cached(self, args):
        return self.forward(*args)

    @staticmethod
    def imports(symbol_file: str, input_names: str | Sequence[str],
                param_file: str | None = None,
                ctx: Context | Sequence[Context] | None = None) -> SymbolBlock:
        """A ``SymbolBlock`` of the graph in ``symbol_file`` (``<path>-symbol.json``, as
        ``HybridBlock.export`` writes it) with inputs ``input_names``, its parameters
        loaded from ``param_file`` (``<path>-NNNN.params.npz``, or a file of
        ``save_parameters``) when given.

        Parameters
        ----------
        symbol_file : str
            The graph's JSON file.
        input_names : str or list of str
            The names of the input variables.
        param_file : str, optional
            The parameters file; without it, call ``initialize()``.
        ctx : Context, optional
            Accepted for MXNet (nets runs on the CPU).

        Returns
        -------
        SymbolBlock
            The block.
        """
        graph = _symbol.load(symbol_file)
        names = [input_names] if isinstance(input_names, str) else list(input_names)
        block = SymbolBlock(graph, [_symbol.var(n) for n in names])
        if param_file is not None:
            block.load_params_file(param_file)
        return block

    def load_params_file(self, param_file: str) -> None:
        """Set the parameters from ``param_file``: a checkpoint's ``.params.npz``
        (``HybridBlock.export``, ``Module.save_checkpoint``) or a ``save_parameters`` file.

        Parameters
        ----------
        param_file : str
            The file.
        """
        arrays, config = load_arrays(param_file)
        if config.get("kind") != "checkpoint":
            self.load_parameters(param_file)
            return
        values = {k.split(":", 1)[1]: v for k, v in arrays.items()
                  if k.startswith(("arg:", "aux:"))}
        missing = [n for n in self._param_names if n not in values]
        if missing:
            raise NetsError(f"{param_file}: no values for the parameters {missing}")
        for name in self._param_names:
            p, v = self._reg_params[name], values[name]
            if p._array is None:
                p.shape = v.shape
                p.initialize()
            p.set_data(v)
