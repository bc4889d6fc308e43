"""Diagnostic only: run a renamed compat program on nets with stand-ins for the MXNet
names nets lacks today, to see past its first stop (``GAPS.md`` section 2).

Usage: ``python standins.py PROGRAM.py [program arguments]`` (or
``compat_runner.py PROGRAM --nets --standins``). Each stand-in is the smallest thing
that lets the program go on; none is how nets should implement the name, and a
stand-in is installed only where nets still lacks the name, so this file shrinks to
nothing as issue 23 lands (delete it then). In particular the ``Custom`` stand-in
ignores the custom operator and applies ``SoftmaxOutput``, so linear_classification
runs but its metric is not comparable with MXNet's.
"""
import collections
import inspect
import os
import runpy
import sys
import types

import numpy as np

import nets


def _missing(obj, name):
    return not hasattr(obj, name)


def install():
    """Add the stand-ins to the ``nets`` namespace (only where a name is missing)."""
    if _missing(nets, "initializer"):
        nets.initializer = nets.init
    if _missing(nets, "callback"):
        nets.callback = types.SimpleNamespace(Speedometer=lambda *a, **k: (lambda p: None))
    if _missing(nets, "model"):
        from nets.module.module import load_checkpoint
        nets.model = types.SimpleNamespace(
            BatchEndParam=collections.namedtuple("BatchEndParam",
                                                 "epoch nbatch eval_metric locals"),
            load_checkpoint=load_checkpoint)
    if _missing(nets, "kvstore"):
        nets.kvstore = types.SimpleNamespace(create=lambda name: None)
    if _missing(nets.data, "PrefetchingIter"):
        nets.data.PrefetchingIter = lambda it: it
    if _missing(nets.sym, "_internal"):
        nets.sym._internal = types.SimpleNamespace(_square_sum=nets.sym.square_sum)
    if _missing(nets, "operator"):
        nets.operator = types.SimpleNamespace(CustomOp=object, CustomOpProp=object,
                                              register=lambda name: (lambda cls: cls))
        nets.sym.Custom = lambda data, label, op_type=None, name=None, **kw: \
            nets.sym.SoftmaxOutput(data, label, name=name)
    metric = nets.metric
    if _missing(metric, "alias"):
        by_names = metric.register

        def register(cls):
            by_names(cls.__name__.lower())(cls)
            return cls
        metric.register = register
        metric.alias = lambda *names: by_names(*names)
        metric.alias("nll_loss")(metric.CrossEntropy)
    if _missing(metric, "check_label_shapes"):
        metric.check_label_shapes = lambda labels, preds: None
    if "output_names" not in inspect.signature(metric.EvalMetric.__init__).parameters:
        base = metric.EvalMetric

        class EvalMetric(base):
            def __init__(self, name, output_names=None, label_names=None, **kwargs):
                base.__init__(self, name)
        metric.EvalMetric = EvalMetric
    ndarray_iter = nets.data.NDArrayIter

    def float32_iter(data, label=None, *args, **kwargs):
        def cast(d):
            if not isinstance(d, dict):
                return d
            return {k: v.astype(np.float32) if isinstance(v, np.ndarray) else v
                    for k, v in d.items()}
        return ndarray_iter(cast(data), cast(label), *args, **kwargs)
    nets.data.NDArrayIter = float32_iter


def main():
    install()
    program = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(program))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
