"""Large arrays drawn by row blocks (``nets.init.draw``): one seed from the global stream,
values a function of the spec that ``nets.kv.shard.generate`` reproduces for any row range
(what a distributed store's servers make), fans read from the whole shape, and the
single-stream path for small arrays and initializers whose rule is not data."""
import numpy as np
import pytest

import nets
from nets import init, nd
from nets.kv.shard import generate

BLOCK = 4  # (BLOCK_ROWS for these tests: 11 rows are blocks of 4, 4 and 3)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(nets.random, "BLOCK_ROWS", BLOCK)


@pytest.mark.parametrize("initializer", [init.Uniform(0.5), init.Normal(2.0),
                                         init.Xavier(rnd_type="gaussian", factor_type="in")])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_any_row_range_generated_equals_those_rows_of_the_drawn_array(small_blocks,
                                                                      initializer, dtype):
    nets.random.seed(1)
    arr = nd.zeros((11, 3), dtype=dtype)
    spec = init.draw(initializer, "fc_weight", arr)
    assert spec[1:3] == ((11, 3), np.dtype(dtype).str)
    whole = arr.asnumpy()
    for lo in range(11):
        for hi in range(lo + 1, 12):
            part = generate(spec, lo, hi)
            assert part.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(part.asnumpy(), whole[lo:hi], err_msg=(lo, hi))


def test_blocks_are_seeded_generators_from_one_seed_of_the_global_stream(small_blocks):
    nets.random.seed(2)
    seed = int(nets.random.generator().integers(2**63))
    after = nets.random.generator().random()
    nets.random.seed(2)
    arr = nd.zeros((11, 3))
    spec = init.draw(init.Uniform(0.5), "w", arr)
    assert spec == (("uniform", 0.5), (11, 3), "<f4", seed)
    assert nets.random.generator().random() == after
    for b, (lo, hi) in enumerate(((0, 4), (4, 8), (8, 11))):
        u = np.random.default_rng([seed, b]).random((hi - lo, 3), dtype=np.float32)
        np.testing.assert_array_equal(arr.asnumpy()[lo:hi],
                                      u * np.float32(1.0) - np.float32(0.5))


def test_constants_and_routed_names_take_no_seed(small_blocks):
    nets.random.seed(5)
    before = nets.random.generator().random()
    nets.random.seed(5)
    bias, ones = nd.zeros((11, 2)), nd.zeros((11, 2))
    assert init.draw(init.Uniform(0.5), "fc_bias", bias) == (("constant", 0), (11, 2),
                                                             "<f4", 0)
    assert init.draw(init.One(), "w", ones)[0] == ("constant", 1)
    assert nets.random.generator().random() == before
    assert not bias.asnumpy().any() and np.all(ones.asnumpy() == 1)


def test_row_sparse_arrays_drawn_by_blocks_keep_their_stype(small_blocks):
    nets.random.seed(3)
    arr = nd.sparse.zeros("row_sparse", (11, 2))
    spec = init.draw(init.Uniform(0.5), "w", arr)
    assert arr.stype == "row_sparse" and arr.indices.asnumpy().tolist() == list(range(11))
    part = generate(spec, 3, 9, "row_sparse")
    assert part.stype == "row_sparse"
    np.testing.assert_array_equal(part.asnumpy(), arr.asnumpy()[3:9])


def test_xavier_scale_is_the_whole_arrays_in_blocks_too(small_blocks):
    rows, cols = 4001, 5
    arr = nd.zeros((rows, cols))
    assert init.draw(init.Xavier(factor_type="avg", magnitude=3), "w", arr) is not None
    bound = np.sqrt(3 / ((rows + cols) / 2))  # a block of 4 rows would give sqrt(3 / 4.5)
    v = arr.asnumpy()
    assert v.max() <= bound and v.min() >= -bound and v.max() > 0.99 * bound
    assert generate(init.draw(init.Xavier(), "w", nd.zeros((rows, cols))), 8, 12).asnumpy() \
        .max() <= bound


def test_small_arrays_and_rules_that_are_not_data_use_the_global_stream(small_blocks):
    class Custom(init.Uniform):
        def _init_weight(self, name, values):
            nets.random.fill(("uniform", 0.5), values)

    for initializer, shape in ((init.Uniform(0.5), (3, 2)), (Custom(), (11, 2)),
                               (init.Uniform(np.float32(0.5)), (11, 2))):
        nets.random.seed(4)
        arr = nd.zeros(shape)
        assert init.draw(initializer, "w", arr) is None, (initializer, shape)
        nets.random.seed(4)
        expected = nd.zeros(shape)
        nets.random.fill(("uniform", 0.5), expected.values)
        np.testing.assert_array_equal(arr.asnumpy(), expected.asnumpy())


def test_a_module_gives_the_store_the_spec_only_while_the_drawn_value_stands(small_blocks):
    """``init_optimizer`` hands a store the spec of a parameter ``init_params`` drew by
    blocks only while nothing has written the array since (its version)."""
    data = nets.sym.Variable("data")
    weight = nets.sym.Variable("weight", shape=(11, 2))
    mod = nets.mod.Module(nets.sym.dot(data, weight), data_names=["data"], label_names=[])
    mod.bind(data_shapes=[("data", (3, 11))])
    mod.init_params(init.Uniform(0.5))
    array = mod._exec.arg_dict["weight"]
    spec = mod._drawn_spec("weight", array)
    assert spec is not None and spec[1] == (11, 2)
    np.testing.assert_array_equal(generate(spec, 0, 11).asnumpy(), array.asnumpy())
    array[:] = 1.0  # a write the module does not see
    assert mod._drawn_spec("weight", array) is None
