"""nets.utils.clip_global_norm over dense, row_sparse and CSR arrays (never densified)."""
import math

import numpy as np
import pytest

import nets
from nets import nd
from nets.test_utils import assert_almost_equal, rand_ndarray
from nets.utils import clip_global_norm


def _arrays(dtype):
    return [rand_ndarray((6, 4), "default", dtype=dtype),
            rand_ndarray((7, 3), "row_sparse", 0.5, dtype=dtype),
            rand_ndarray((5, 5), "csr", 0.3, dtype=dtype),
            rand_ndarray((4, 2), "row_sparse", 0.0, dtype=dtype)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_global_norm(dtype, max_norm):
    arrays = _arrays(dtype)
    dense = [a.asnumpy().astype(np.float64) for a in arrays]
    parts = [(a.stype, getattr(a, "_indices", None)) for a in arrays]
    norm = math.sqrt(sum((d ** 2).sum() for d in dense))
    total = clip_global_norm(arrays, max_norm)
    assert isinstance(total, float)
    assert total == pytest.approx(norm, rel=1e-6)
    scale = min(1.0, max_norm / (norm + 1e-8))
    for a, d, (stype, idx) in zip(arrays, dense, parts):
        assert a.stype == stype and a.dtype == dtype
        if idx is not None:
            assert a._indices is idx  # scaled in place: same rows, same buffers
        assert_almost_equal(a.asnumpy(), d * scale, rtol=1e-6, atol=1e-7)
    new_norm = math.sqrt(sum((a.asnumpy().astype(np.float64) ** 2).sum() for a in arrays))
    assert new_norm == pytest.approx(min(norm, max_norm), rel=1e-5)


def test_clip_global_norm_large_array_accumulates_in_float64():
    x = np.full(300_000, 0.1, np.float32)  # several blocks of the float64 accumulator
    total = clip_global_norm([nd.array(x)], 1e9)
    assert total == pytest.approx(math.sqrt(300_000 * float(np.float32(0.1)) ** 2), rel=1e-12)


def test_clip_global_norm_nonfinite_warns_and_leaves_arrays():
    a, b = nd.array([1.0, np.inf]), nd.array([3.0, 4.0])
    with pytest.warns(UserWarning, match="NaN or infinite"):
        assert math.isinf(clip_global_norm([a, b], 1.0))
    assert_almost_equal(b.asnumpy(), [3.0, 4.0])
    assert math.isnan(clip_global_norm([nd.array([np.nan])], 1.0, check_isfinite=False))


def test_clip_global_norm_errors():
    with pytest.raises(nets.NetsError, match="at least one array"):
        clip_global_norm([], 1.0)
    with pytest.raises(nets.NetsError, match="max_norm=-1"):
        clip_global_norm([nd.ones((2,))], -1)
    with pytest.raises(nets.NetsError, match=r"arrays\[0\] must be a nets array"):
        clip_global_norm([np.ones(2)], 1.0)
