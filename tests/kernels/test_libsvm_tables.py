"""The parser's double-double powers of ten (``kernels.libsvm.P10_HI``/``P10_LO``), built
with integer arithmetic at import, against exact rationals."""
from fractions import Fraction

import numpy as np

from nets.kernels import libsvm


def test_double_double_powers_of_ten_are_the_exact_powers_rounded_twice():
    """For each ``|k| <= DD_K``: ``hi`` is ``10**k`` correctly rounded, ``lo`` the exact
    remainder ``10**k - hi`` correctly rounded (``float`` of a ``Fraction`` rounds
    correctly), bit for bit."""
    ks = range(-libsvm.DD_K, libsvm.DD_K + 1)
    exact = [Fraction(10) ** k for k in ks]
    hi = np.array([float(x) for x in exact])
    lo = np.array([float(x - Fraction(h)) for x, h in zip(exact, hi.tolist())])
    assert libsvm.P10_HI.view(np.int64).tolist() == hi.view(np.int64).tolist()
    assert libsvm.P10_LO.view(np.int64).tolist() == lo.view(np.int64).tolist()
    k0 = libsvm.DD_K
    assert libsvm.P10_HI[k0] == 1.0 and libsvm.P10_LO[k0] == 0.0
    assert np.all(np.abs(libsvm.P10_LO) <= np.spacing(np.abs(libsvm.P10_HI)) / 2)
