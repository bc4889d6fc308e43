"""Fusion rules of cached graphs: which two consecutive operator calls one operator call
computes, with the same values and gradients.

A hybridized block's graph (``nets.symbol.executor.Program``) asks ``fuse`` about every
one-input step whose input is the single output of another step that nothing else reads,
once its first run has shown the storage types. Each rule lives with its operators.
"""
from .nn import fuse_activation
from .reduce import fuse_sum_of_product

__all__ = ["fuse"]

RULES = (fuse_activation, fuse_sum_of_product)


def fuse(host, host_attrs, host_stypes, op, attrs):
    """``(operator, attributes)`` computing ``op(host(*inputs, **host_attrs), **attrs)``
    from ``host``'s inputs (of storage types ``host_stypes``) in one call, or None."""
    for rule in RULES:
        fused = rule(host, host_attrs, host_stypes, op, attrs)
        if fused is not None:
            return fused
    return None
