"""Learning-rate schedulers against MXNet's (stateful) rules, re-written here step by step."""
import math

import pytest

import nets
from nets.optim import (CosineScheduler, FactorScheduler, MultiFactorScheduler,
                        PolyScheduler)

UPDATES = range(0, 40)


def mx_warmup(n, base, warmup, begin, mode):
    if mode == "constant":
        return begin
    return begin + (base - begin) * n / warmup


def mx_factor(step, factor, stop, base, warmup=0, begin=0, mode="linear"):
    """MXNet's FactorScheduler, called with num_update = 0, 1, 2, ... in order."""
    count, lr, out = 0, base, []
    for n in UPDATES:
        if n < warmup:
            out.append(mx_warmup(n, base, warmup, begin, mode))
            continue
        while n > count + step:
            count += step
            lr *= factor
            lr = max(lr, stop)
        out.append(lr)
    return out


def mx_multifactor(steps, factor, base, warmup=0, begin=0, mode="linear"):
    ind, lr, out = 0, base, []
    for n in UPDATES:
        if n < warmup:
            out.append(mx_warmup(n, base, warmup, begin, mode))
            continue
        while ind < len(steps) and n > steps[ind]:
            ind += 1
            lr *= factor
        out.append(lr)
    return out


def mx_anneal(kind, max_update, base, final, pwr=2, warmup=0, begin=0, mode="linear"):
    lr, out = base, []
    for n in UPDATES:
        if n < warmup:
            out.append(mx_warmup(n, base, warmup, begin, mode))
            continue
        if n <= max_update:
            frac = (n - warmup) / (max_update - warmup)
            shape = (1 - frac) ** pwr if kind == "poly" else (1 + math.cos(math.pi * frac)) / 2
            lr = final + (base - final) * shape
        out.append(lr)
    return out


@pytest.mark.parametrize("warmup, mode", [(0, "linear"), (5, "linear"), (5, "constant")])
def test_schedules_match_mxnet(warmup, mode):
    w = {"warmup_steps": warmup, "warmup_begin_lr": 0.01, "warmup_mode": mode}
    mw = {"warmup": warmup, "begin": 0.01, "mode": mode}
    cases = [
        (FactorScheduler(step=4, factor=0.5, stop_factor_lr=1e-3, base_lr=0.1, **w),
         mx_factor(4, 0.5, 1e-3, 0.1, **mw)),
        (MultiFactorScheduler(step=[8, 12, 30], factor=0.3, base_lr=0.2, **w),
         mx_multifactor([8, 12, 30], 0.3, 0.2, **mw)),
        (PolyScheduler(max_update=25, base_lr=0.1, pwr=3, final_lr=0.02, **w),
         mx_anneal("poly", 25, 0.1, 0.02, 3, **mw)),
        (CosineScheduler(max_update=25, base_lr=0.1, final_lr=0.02, **w),
         mx_anneal("cos", 25, 0.1, 0.02, **mw)),
    ]
    for sched, expected in cases:
        got = [sched(n) for n in UPDATES]
        assert got == pytest.approx(expected, rel=1e-12), type(sched).__name__
        # pure functions of num_update: asking again, or out of order, gives the same
        assert [sched(n) for n in reversed(UPDATES)] == got[::-1]


def test_warmup_reaches_base_lr_set_later():
    sched = CosineScheduler(max_update=10, base_lr=0.1, warmup_steps=4)
    nets.optim.create("sgd", learning_rate=0.4, lr_scheduler=sched)
    assert sched(2) == pytest.approx(0.2)  # half way to the optimizer's 0.4
    assert sched(4) == pytest.approx(0.4)


@pytest.mark.parametrize("make, match", [
    (lambda: FactorScheduler(step=0), "step=0"),
    (lambda: FactorScheduler(step=2, factor=1.5), "factor=1.5"),
    (lambda: MultiFactorScheduler(step=[5, 3]), r"step=\[5, 3\]"),
    (lambda: MultiFactorScheduler(step=[]), r"step=\[\]"),
    (lambda: PolyScheduler(max_update=0), "max_update=0"),
    (lambda: CosineScheduler(max_update=5, warmup_steps=5), "max_update=5"),
    (lambda: CosineScheduler(max_update=9, warmup_steps=-1), "warmup_steps=-1"),
    (lambda: CosineScheduler(max_update=9, warmup_mode="cubic"), "warmup_mode='cubic'"),
    (lambda: FactorScheduler(step=2, base_lr=0.1, warmup_begin_lr=0.5), "warmup_begin_lr=0.5"),
])
def test_invalid_arguments(make, match):
    with pytest.raises(nets.NetsError, match=match):
        make()
