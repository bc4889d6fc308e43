"""The local store, ported from MXNet 1.9.1's ``tests/python/unittest/test_kvstore.py``
(init, push/pull of one key and of lists, the sum of several arrays pushed to a key, dense
and row_sparse, updaters, row_sparse_pull, ignored sparse pulls, store types) plus the
errors nets adds. Expected values are worked out by hand or with numpy."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError
from nets.test_utils import assert_almost_equal, rand_ndarray

SHAPE = (4, 4)
KEYS = [5, 7, 11]
STR_KEYS = ["b", "c", "d"]
NUM_DEVS = 4  # MXNet's tests push one array per device; nets sums a list the same way


def _zeros(stype="default"):
    z = nd.zeros(SHAPE)
    return z if stype == "default" else z.tostype(stype)


def init_kv(stype="default", name="local"):
    kv = nets.kv.create(name)
    kv.init(3, _zeros(stype))
    kv.init(KEYS, [_zeros(stype)] * len(KEYS))
    return kv


def init_kv_with_str(stype="default", name="local"):
    kv = nets.kv.create(name)
    kv.init("a", _zeros(stype))
    kv.init(STR_KEYS, [_zeros(stype)] * len(STR_KEYS))
    return kv


def check_equal_to(a, x):
    np.testing.assert_array_equal(a.asnumpy(), np.full(SHAPE, x, np.float32))


@pytest.mark.parametrize("name", ["local", "device"])
def test_single_kv_pair(name):
    for kv, key in ((init_kv(name=name), 3), (init_kv_with_str(name=name), "a")):
        kv.push(key, nd.ones(SHAPE))
        val = nd.zeros(SHAPE)
        kv.pull(key, out=val)
        check_equal_to(val, 1)


def test_init_copies_the_value():
    for key in (3, "a"):
        kv = nets.kv.create()
        value = nd.ones(SHAPE) * 4
        kv.init(key, value)
        value[:] = 0  # the store holds its own copy
        out = nd.zeros(SHAPE)
        kv.pull(key, out=out)
        check_equal_to(out, 4)


def test_list_kv_pair():
    for kv, keys in ((init_kv(), KEYS), (init_kv_with_str(), STR_KEYS)):
        kv.push(keys, [nd.ones(SHAPE) * 4] * len(keys))
        vals = [nd.zeros(SHAPE) for _ in keys]
        kv.pull(keys, out=vals)
        for v in vals:
            check_equal_to(v, 4)


def test_aggregator_sums_the_arrays_pushed_to_a_key():
    for kv, key, keys in ((init_kv(), 3, KEYS), (init_kv_with_str(), "a", STR_KEYS)):
        vals = [nd.ones(SHAPE) for _ in range(NUM_DEVS)]
        kv.push(key, vals)
        kv.pull(key, out=vals)
        for v in vals:
            check_equal_to(v, NUM_DEVS)
        vals = [[nd.ones(SHAPE) * 2.0 for _ in range(NUM_DEVS)] for _ in keys]
        kv.push(keys, vals)
        kv.pull(keys, out=vals)
        for vv in vals:
            for v in vv:
                check_equal_to(v, NUM_DEVS * 2.0)


def test_a_push_replaces_the_value_without_an_updater():
    kv = init_kv()
    kv.push(3, nd.ones(SHAPE) * 2)
    kv.push(3, nd.ones(SHAPE) * 5)
    out = nd.zeros(SHAPE)
    kv.pull(3, out=out)
    check_equal_to(out, 5)


def test_sparse_aggregator_sums_over_the_union_of_rows():
    kv = init_kv_with_str("row_sparse")
    vals = [rand_ndarray(SHAPE, "row_sparse", density=0.5) for _ in range(NUM_DEVS)]
    expected = sum(v.asnumpy() for v in vals)
    all_rows = nd.array(np.arange(SHAPE[0]), dtype="int64")
    kv.push("a", vals)
    outs = [_zeros("row_sparse") for _ in range(NUM_DEVS)]
    kv.row_sparse_pull("a", out=outs, row_ids=[all_rows] * NUM_DEVS)
    for o in outs:
        assert o.stype == "row_sparse"
        assert_almost_equal(o.asnumpy(), expected)
    # lists of keys
    vals = [[rand_ndarray(SHAPE, "row_sparse", density=0.5) for _ in range(NUM_DEVS)]
            for _ in STR_KEYS]
    kv.push(STR_KEYS, vals)
    outs = [[_zeros("row_sparse") for _ in range(NUM_DEVS)] for _ in STR_KEYS]
    kv.row_sparse_pull(STR_KEYS, out=outs, row_ids=[[all_rows] * NUM_DEVS] * len(STR_KEYS))
    for vv, oo in zip(vals, outs):
        expected = sum(v.asnumpy() for v in vv)
        for o in oo:
            assert_almost_equal(o.asnumpy(), expected)


def test_pushed_row_sparse_sum_keeps_only_the_union_of_rows():
    kv = nets.kv.create()
    kv.init("w", _zeros("row_sparse"))
    a = nd.sparse.row_sparse_array((np.ones((1, 4), np.float32), [1]), shape=SHAPE)
    b = nd.sparse.row_sparse_array((np.full((2, 4), 2, np.float32), [1, 3]), shape=SHAPE)
    kv.push("w", [a, b])
    out = _zeros("row_sparse")
    kv.pull("w", out=out, ignore_sparse=False)
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 3])
    expected = np.zeros(SHAPE, np.float32)
    expected[1], expected[3] = 3, 2
    np.testing.assert_array_equal(out.asnumpy(), expected)


def _updater(key, recv, local):
    """MXNet's test updater: ``local += recv``."""
    local += recv


def test_updater():
    for kv, key, keys in ((init_kv(), 3, KEYS), (init_kv_with_str(), "a", STR_KEYS)):
        kv._set_updater(_updater)
        vals = [nd.ones(SHAPE) for _ in range(NUM_DEVS)]
        kv.push(key, vals)
        kv.pull(key, out=vals)
        for v in vals:
            check_equal_to(v, NUM_DEVS)
        vals = [[nd.ones(SHAPE) for _ in range(NUM_DEVS)] for _ in keys]
        num_push = 4
        for _ in range(num_push):
            kv.push(keys, vals)
        kv.pull(keys, out=vals)
        for vv in vals:
            for v in vv:
                check_equal_to(v, NUM_DEVS * num_push)


def test_updater_receives_the_users_key():
    seen = []
    kv = init_kv_with_str()
    kv._set_updater(lambda key, recv, local: seen.append(key))
    kv.push(["b", "c"], [nd.ones(SHAPE)] * 2)
    assert seen == ["b", "c"]


def test_pushpull_pulls_into_the_value_or_out():
    kv = init_kv()
    kv._set_updater(_updater)
    v = nd.ones(SHAPE) * 3
    kv.pushpull(3, v)
    check_equal_to(v, 3)
    out = nd.zeros(SHAPE)
    kv.pushpull(3, nd.ones(SHAPE), out=out)
    check_equal_to(out, 4)


def test_broadcast_inits_and_pulls():
    kv = nets.kv.create()
    outs = [nd.zeros(SHAPE), nd.zeros(SHAPE)]
    kv.broadcast("x", nd.ones(SHAPE) * 7, out=outs)
    for o in outs:
        check_equal_to(o, 7)


@pytest.mark.parametrize("count", [1, 4])
def test_row_sparse_pull(count):
    kv = init_kv_with_str("row_sparse")
    kv.init("e", nd.ones(SHAPE).tostype("row_sparse"))
    rng = np.random.default_rng(count)
    vals = [_zeros("row_sparse") for _ in range(count)]
    row_ids = [nd.array(rng.integers(0, SHAPE[0], size=SHAPE[0]), dtype="int64")
               for _ in range(count)]
    kv.row_sparse_pull("e", out=vals[0] if count == 1 else vals,
                       row_ids=row_ids[0] if count == 1 else row_ids)
    for val, ids in zip(vals, row_ids):
        wanted = np.unique(ids.asnumpy())
        assert val.stype == "row_sparse"
        np.testing.assert_array_equal(val.indices.asnumpy(), wanted)
        expected = np.zeros(SHAPE, np.float32)
        expected[wanted] = 1
        np.testing.assert_array_equal(val.asnumpy(), expected)


def test_row_sparse_pull_takes_ids_of_any_shape_dtype_order_and_repeats():
    kv = nets.kv.create()
    table = np.arange(24, dtype=np.float32).reshape(6, 4)
    kv.init(0, nd.array(table))  # a dense value works too
    for ids in (nd.array([[4, 1], [1, 4]]), nd.array([4, 1, 4], dtype="int32"),
                nd.array([1.0, 4.0], dtype="float64")):
        out = nd.sparse.zeros("row_sparse", (6, 4))
        kv.row_sparse_pull(0, out=out, row_ids=ids)
        np.testing.assert_array_equal(out.indices.asnumpy(), [1, 4])
        np.testing.assert_array_equal(out.data.asnumpy(), table[[1, 4]])


def test_one_row_ids_array_serves_every_out_of_a_key():
    kv = nets.kv.create()
    kv.init(0, nd.ones(SHAPE).tostype("row_sparse"))
    outs = [_zeros("row_sparse") for _ in range(3)]
    kv.row_sparse_pull(0, out=outs, row_ids=nd.array([2, 0], dtype="int64"))
    for o in outs:
        np.testing.assert_array_equal(o.indices.asnumpy(), [0, 2])


def test_rows_a_row_sparse_value_lacks_stay_absent():
    kv = nets.kv.create()
    value = nd.sparse.row_sparse_array((np.ones((1, 4), np.float32), [2]), shape=SHAPE)
    kv.init(0, value)
    out = _zeros("row_sparse")
    kv.row_sparse_pull(0, out=out, row_ids=nd.array([0, 2], dtype="int64"))
    np.testing.assert_array_equal(out.indices.asnumpy(), [2])


def test_pull_ignores_a_row_sparse_out_unless_told_not_to():
    """MXNet's ``test_invalid_pull``: a row_sparse out is left unchanged by ``pull``."""
    kv = init_kv_with_str("row_sparse")
    kv.push("a", nd.ones(SHAPE).tostype("row_sparse"))
    out = _zeros("row_sparse")
    with pytest.warns(UserWarning, match="row_sparse_pull"):
        kv.pull("a", out=out)
    assert out.indices.shape == (0,)
    kv.pull("a", out=out, ignore_sparse=False)
    check_equal_to(out, 1)
    dense = nd.zeros(SHAPE)  # a dense out always receives the value
    kv.pull("a", out=dense)
    check_equal_to(dense, 1)


def test_types_rank_workers_barrier_and_capabilities():
    for name in ("local", "device", "local_allreduce_cpu", "local_update_cpu"):
        kv = nets.kvstore.create(name)
        assert kv.type == name
        assert (kv.rank, kv.num_workers) == (0, 1)
        kv.barrier()
        kv._barrier()
        assert kv.is_capable(nets.kv.KVStore.OPTIMIZER)
        assert isinstance(kv, nets.kv.KVStoreBase)
    assert nets.kv.create().type == "local"


def test_kvstore_is_kv():
    import nets.kvstore
    assert nets.kvstore is nets.kv
    from nets.kvstore import create
    assert create is nets.kv.create


def test_distributed_and_unknown_types_raise_clearly():
    for name in nets.kv.DIST_NAMES:  # outside a launched worker (or without Ray)
        with pytest.raises(NetsError, match=r"nets\[dist\]"):
            nets.kv.create(name)
    with pytest.raises(NetsError, match=r"unknown store type 'nccl'.*'local'"):
        nets.kv.create("nccl")
    with pytest.raises(NetsError, match="must be a string"):
        nets.kv.create(3)


def test_errors_name_the_key_and_the_problem():
    kv = nets.kv.create()
    kv.init(1, nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="key 'x' is a str.*never mixed"):
        kv.init("x", nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="key 2 has not been initialized"):
        kv.pull(2, out=nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="key 2 has not been initialized"):
        kv.push(2, nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="already initialized"):
        kv.init(1, nd.zeros(SHAPE))
    with pytest.raises(NetsError, match=r"push: value for key 1 has shape \(2, 2\).*\(4, 4\)"):
        kv.push(1, nd.zeros((2, 2)))
    with pytest.raises(NetsError, match=r"pull: out for key 1 has shape \(3,\)"):
        kv.pull(1, out=nd.zeros((3,)))
    with pytest.raises(NetsError, match="2 keys need a list of 2 values"):
        kv.push([1, 2], nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="must be a nets NDArray"):
        kv.push(1, np.zeros(SHAPE))
    with pytest.raises(NetsError, match="must be row_sparse"):
        kv.row_sparse_pull(1, out=nd.zeros(SHAPE), row_ids=nd.array([0]))
    with pytest.raises(NetsError, match=r"row_ids\[0\]=9.0 is out of range"):
        kv.row_sparse_pull(1, out=_zeros("row_sparse"), row_ids=nd.array([9]))
    with pytest.raises(NetsError, match="push dense or row_sparse"):
        kv.push(1, nd.zeros(SHAPE).tostype("csr"))
    with pytest.raises(NetsError, match="no optimizer"):
        kv.save_optimizer_states("unused.npz")
    with pytest.raises(NetsError, match="keys are ints or strs"):
        kv.init(1.5, nd.zeros(SHAPE))


def _blocks(seed, shape, block, scale):
    """The table ``init(shape=..., init=Uniform(scale), seed=seed)`` makes, from numpy:
    row block ``b`` drawn from ``default_rng([seed, b])``, U(-scale, scale) in float32."""
    parts = []
    for b in range(-(-shape[0] // block)):
        rows = min(block, shape[0] - b * block)
        draw = np.random.default_rng([seed, b]).random((rows,) + shape[1:], dtype=np.float32)
        parts.append(draw * np.float32(2 * scale) - np.float32(scale))
    return np.concatenate(parts)


def test_init_makes_a_table_from_an_initializer_and_a_seed_by_row_blocks(monkeypatch):
    from nets.kv import shard
    monkeypatch.setattr(nets.random, "BLOCK_ROWS", 4)  # 11 rows: blocks of 4, 4 and 3
    kv = nets.kv.create()
    kv.init([0, 1], shape=[(11, 3), (2,)], init=nets.init.Uniform(0.5), seed=9)
    out = nd.zeros((11, 3))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), _blocks(9, (11, 3), 4, 0.5))
    small = nd.zeros((2,))
    kv.pull(1, out=small)
    np.testing.assert_array_equal(small.asnumpy(), _blocks(9, (2,), 4, 0.5))
    # any split into row ranges (a distributed store's shards) glues to the same table
    spec = (("uniform", 0.5), (11, 3), "<f4", 9)
    whole = shard.generate(spec, 0, 11)
    for cuts in ([0, 5, 11], [0, 1, 2, 8, 11], [0, 4, 8, 11]):
        parts = [shard.generate(spec, lo, hi).asnumpy() for lo, hi in zip(cuts, cuts[1:])]
        np.testing.assert_array_equal(np.concatenate(parts), whole.asnumpy())
    # the initializer routes by the key as a parameter name; the global seed is untouched
    nets.random.seed(3)
    before = nets.random.generator().random()
    nets.random.seed(3)
    kv2 = nets.kv.create()
    kv2.init("fc_bias", shape=(3, 2), init=nets.init.Normal(), seed=1)
    bias = nd.zeros((3, 2))
    kv2.pull("fc_bias", out=bias)
    assert not bias.asnumpy().any()
    assert nets.random.generator().random() == before


def test_init_from_an_initializer_refuses_bad_arguments():
    kv = nets.kv.create()
    kv.init(0, nd.zeros(SHAPE))
    with pytest.raises(NetsError, match="already initialized"):
        kv.init(0, shape=SHAPE, init=nets.init.Uniform())
    with pytest.raises(NetsError, match="either value, or shape and init"):
        kv.init(1, nd.zeros(SHAPE), shape=SHAPE)
    with pytest.raises(NetsError, match="give value, or shape and init"):
        kv.init(1, shape=SHAPE)
    with pytest.raises(NetsError, match=r"shape=\(0, 2\); expected a tuple of positive ints"):
        kv.init(1, shape=(0, 2), init=nets.init.Uniform())
    with pytest.raises(NetsError, match="seed=-1; expected an int >= 0"):
        kv.init(1, shape=SHAPE, init=nets.init.Uniform(), seed=-1)
    class Custom(nets.init.Initializer):
        def _init_weight(self, name, values):
            values[...] = 2

    with pytest.raises(NetsError, match="whose rule is data"):
        kv.init(1, shape=SHAPE, init=Custom())
    with pytest.raises(NetsError, match="whose rule is data"):
        kv.init(1, shape=SHAPE, init=nets.init.Uniform(np.float32(0.5)))
    with pytest.raises(NetsError, match="init='uniform'; expected an initializer instance"):
        kv.init(1, shape=SHAPE, init="uniform")
    with pytest.raises(NetsError, match="dtype=int32"):
        kv.init(1, shape=SHAPE, init=nets.init.Uniform(), dtype="int32")
    with pytest.raises(NetsError, match="2 keys need a list of 2 shapes"):
        kv.init([1, 2], shape=SHAPE, init=nets.init.Uniform())
    with pytest.raises(NetsError, match="key 'x' is a str.*never mixed"):
        kv.init("x", shape=SHAPE, init=nets.init.Uniform())


def test_factorization_machine_program_pulls_only_each_batchs_rows(compat_programs):
    """tests/compat's factorization-machine program (MXNet's example, renamed to nets) with
    the ``local`` store (MXNet's default; the program's own is none): each
    ``Module.prepare(batch, sparse_row_id_fn)`` pulls exactly the batch's rows of ``w`` and
    ``v``, each update answers only rows of the batch (lazy Adam) besides the dense bias,
    and the program reaches the compat band
    around MXNet 1.9.1's metric (the single-process number)."""
    import json
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    name, REFERENCE = "factorization_machine", compat_programs.reference
    BATCH = 1000  # the program's default
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [compat_programs.nets_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    result = subprocess.run(
        [sys.executable, os.path.join(here, "fm_rows_driver.py"), compat_programs.path(name),
         *compat_programs.argv(name), "--seed", str(REFERENCE["init_seeds"][0]),
         "--kvstore", "local", "--batch-size", str(BATCH)],
        capture_output=True, text=True, timeout=600, cwd=compat_programs.folder, env=env)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    lines = {x.split(" ", 1)[0]: json.loads(x.split(" ", 1)[1]) for x in out.splitlines()
             if x.startswith(("RESULT ", "ROWS "))}
    rows = lines["ROWS"]
    batches = -(-REFERENCE["sizes"]["fm"]["train"] // BATCH) * 3  # 3 epochs
    assert len(rows["prepare"]) == batches and len(rows["changed"]) == batches
    assert all(exact for exact, _ in rows["prepare"])
    features = REFERENCE["sizes"]["fm"]["num_features"]
    assert max(n for _, n in rows["prepare"]) < features  # a batch's rows, never the table
    assert all(inside and whole == 1 for inside, _, whole in rows["changed"])
    assert rows["full_prepares"] == 3  # the program's own evaluation after each epoch
    compat_programs.check(name, lines["RESULT"])
