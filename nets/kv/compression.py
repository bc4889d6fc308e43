"""2-bit gradient compression with error feedback (MXNet's ``gradient_compression``).

Each pushed gradient is added to a residual kept per key (and per array of the push);
every element of the sum at or above ``threshold`` is sent as ``+threshold``, at or below
``-threshold`` as ``-threshold``, anything else as 0, and the residual keeps what was not
sent. The store sums and applies the sent (dequantized) values.
"""
import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from ..optim.hyper import check_number

__all__ = ["TwoBitCompression", "from_params"]


class TwoBitCompression:
    """Quantize dense gradients to ``{-threshold, 0, +threshold}``, keeping residuals;
    ``threshold`` is a finite number > 0 (an infinite one would send nothing, ever)."""

    def __init__(self, threshold=0.5):
        check_number("set_gradient_compression: threshold", threshold, low=0, low_open=True)
        self.threshold = float(threshold)
        self.residuals = {}

    def __call__(self, key, slot, grad):
        """The values sent for ``grad``, the ``slot``-th array pushed to ``key``."""
        if grad.stype != "default":
            raise NetsError(f"push: 2-bit gradient compression applies to dense gradients; "
                            f"key {key!r} got a {grad.stype} one")
        g = grad.asnumpy()
        residual = self.residuals.get((key, slot))
        if residual is None or residual.shape != g.shape or residual.dtype != g.dtype:
            residual = self.residuals[key, slot] = np.zeros_like(g)
        residual += g
        t = g.dtype.type(self.threshold)
        sent = np.where(residual >= t, t, np.where(residual <= -t, -t, g.dtype.type(0)))
        residual -= sent
        return NDArray(sent.astype(g.dtype, copy=False), grad.context)


def from_params(params):
    """The compressor for ``{'type': '2bit', 'threshold': t}`` (None for ``'none'``)."""
    if not isinstance(params, dict) or "type" not in params:
        raise NetsError(f"set_gradient_compression: expected a dict with a 'type' "
                        f"('2bit' or 'none'), got {params!r}")
    unknown = sorted(set(params) - {"type", "threshold"})
    if unknown:
        raise NetsError(f"set_gradient_compression: unknown parameters {unknown}; known: "
                        f"'type', 'threshold'")
    kind = params["type"]
    if kind == "none":
        return None
    if kind != "2bit":
        raise NetsError(f"set_gradient_compression: type={kind!r}; supported: '2bit', 'none'")
    return TwoBitCompression(params.get("threshold", 0.5))
