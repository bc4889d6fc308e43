"""The MXNet API names the compat programs use, and whether nets has each today.

``ROWS`` lists every MXNet name (module function/class, method, or the keyword
arguments that matter) the five programs call, the nets object the renamed program
reaches for it, and a regular expression that finds its use in a program's text
(which gives the "used by" column). ``status`` resolves the nets object and, for
keyword arguments, inspects its signature: ``missing`` when the name or one of the
keywords is absent; ``differs`` for the known behaviour differences in ``DIFFERS``;
``supported`` when it exists and a program uses it: every program runs renamed on nets
and reaches MXNet's metric (``test_compat_programs.py``); ``present`` when it exists and
no program uses it.

``SPARSE_TEST_NAMES`` lists the ``mx.`` names (and the ``mxnet.test_utils``
functions they star-import and call) that MXNet 1.9.1's sparse unit tests
``tests/python/unittest/test_sparse_ndarray.py`` (``nd``) and
``test_sparse_operator.py`` (``op``) use: every ``mx.`` followed by a dotted name in
those files; their status is presence only, by the same renaming.

Usage: ``python tests/compat/api_names.py`` prints the Markdown tables that
``docs/mxnet-compat.md`` carries, for the ``nets`` of this checkout (or of the
checkout ``COMPAT_NETS_ROOT`` names). Names resolve only inside that checkout's
``nets`` directory: an editable install of another checkout cannot answer for it.
"""
import importlib
import inspect
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETS_ROOT = os.path.abspath(os.environ.get("COMPAT_NETS_ROOT",
                                           os.path.dirname(os.path.dirname(HERE))))
NETS_DIR = os.path.join(NETS_ROOT, "nets")
PROGRAM_FILES = ["linear_classification", "factorization_machine", "matrix_factorization",
                 "wide_deep", "wide_deep_inference", "census"]
SHORT = {"linear_classification": "LC", "factorization_machine": "FM",
         "matrix_factorization": "MF", "wide_deep": "WD", "wide_deep_inference": "WDI",
         "census": "WD, WDI"}

# (MXNet name, nets object path, keyword arguments the programs pass, usage regex)
ROWS = [
    ("mx.random.seed", "nets.random.seed", [], r"mx\.random\.seed"),
    ("mx.cpu / mx.gpu", "nets.cpu", [], r"mx\.cpu\(\)"),
    ("mx.kvstore.create", "nets.kvstore.create", [], r"mx\.kvstore\.create"),
    ("KVStore.rank / .num_workers", "nets.kvstore.KVStore.rank", [], r"kv\.rank"),
    ("mx.io.LibSVMIter", "nets.data.LibSVMIter",
     ["data_libsvm", "data_shape", "batch_size", "num_parts", "part_index"],
     r"mx\.io\.LibSVMIter"),
    ("mx.io.NDArrayIter (dict data/label, numpy and CSR values)", "nets.data.NDArrayIter",
     ["data", "label", "batch_size", "shuffle", "last_batch_handle"], r"mx\.io\.NDArrayIter"),
    ("mx.io.PrefetchingIter", "nets.data.PrefetchingIter", [], r"PrefetchingIter"),
    ("DataIter.provide_data / .provide_label", "nets.data.NDArrayIter.provide_data", [],
     r"\.provide_data"),
    ("DataIter.next (StopIteration at the end)", "nets.data.NDArrayIter.next", [],
     r"\.next\(\)"),
    ("DataIter.reset / iter(it)", "nets.data.NDArrayIter.reset", [], r"\.reset\(\)"),
    ("DataBatch.data / .label", "nets.data.DataBatch", [], r"batch\.data|batch\.label"),
    ("mx.nd.array (list of str; dtype='int32')", "nets.nd.array", ["dtype"],
     r"mx\.nd\.array"),
    ("mx.nd.arange", "nets.nd.arange", ["dtype"], r"mx\.nd\.arange"),
    ("mx.nd.softmax", "nets.nd.softmax", ["axis"], r"mx\.nd\.softmax"),
    ("mx.nd.one_hot", "nets.nd.one_hot", [], r"mx\.nd\.one_hot"),
    ("mx.nd.sparse.csr_matrix((data, indices, indptr), shape)", "nets.nd.sparse.csr_matrix",
     ["shape"], r"csr_matrix"),
    ("CSRNDArray.indices", "nets.nd.sparse.CSRNDArray.indices", [], r"\.indices"),
    ("NDArray.astype(np.int64)", "nets.nd.NDArray.astype", [], r"\.astype\("),
    ("NDArray.reshape / .asnumpy / .wait_to_read", "nets.nd.NDArray.wait_to_read", [],
     r"wait_to_read|\.asnumpy"),
    ("mx.symbol.Variable", "nets.symbol.Variable",
     ["shape", "stype", "init", "lr_mult", "wd_mult"], r"\.Variable\("),
    ("mx.symbol.dot / mx.symbol.sparse.dot (csr x row_sparse)", "nets.symbol.sparse.dot", [],
     r"\.dot\("),
    ("mx.symbol.broadcast_add", "nets.symbol.broadcast_add", [], r"broadcast_add"),
    ("mx.symbol._internal._square_sum", "nets.symbol._internal._square_sum",
     ["data", "axis", "keepdims"], r"_square_sum"),
    ("Symbol.square()", "nets.symbol.Symbol.square", [], r"x\.square\(\)"),
    ("Symbol.sum(axis, keepdims)", "nets.symbol.Symbol.sum", ["axis", "keepdims"],
     r"both\.sum"),
    ("mx.symbol.square(data=)", "nets.symbol.square", ["data"], r"symbol\.square\("),
    ("mx.symbol.Concat(*, dim) / mx.symbol.concat", "nets.symbol.Concat", ["dim"],
     r"\.[Cc]oncat\("),
    ("mx.symbol.slice(data, begin, end with None)", "nets.symbol.slice",
     ["data", "begin", "end"], r"symbol\.slice"),
    ("mx.symbol.split(num_outputs, squeeze_axis)", "nets.symbol.split",
     ["data", "num_outputs", "squeeze_axis"], r"symbol\.split"),
    ("mx.sym.Embedding / mx.symbol.sparse.Embedding (row_sparse weight, sparse_grad)",
     "nets.symbol.sparse.Embedding",
     ["data", "weight", "input_dim", "output_dim", "sparse_grad"], r"\.Embedding\("),
    ("mx.sym.FullyConnected", "nets.symbol.FullyConnected", ["data", "num_hidden"],
     r"FullyConnected"),
    ("mx.sym.Activation", "nets.symbol.Activation", ["data", "act_type"], r"Activation"),
    ("mx.sym.sum(data, axis)", "nets.symbol.sum", ["data", "axis"], r"sym\.sum\("),
    ("mx.sym.Flatten", "nets.symbol.Flatten", ["data"], r"Flatten"),
    ("mx.symbol.SoftmaxOutput(data, label, name)", "nets.symbol.SoftmaxOutput", ["name"],
     r"SoftmaxOutput"),
    ("mx.symbol.LogisticRegressionOutput", "nets.symbol.LogisticRegressionOutput",
     ["data", "label"], r"LogisticRegressionOutput"),
    ("mx.sym.LinearRegressionOutput", "nets.symbol.LinearRegressionOutput",
     ["data", "label"], r"LinearRegressionOutput"),
    ("mx.sym.MakeLoss", "nets.symbol.MakeLoss", [], r"MakeLoss"),
    ("mx.sym.Custom(*inputs, op_type=, **params)", "nets.symbol.Custom", ["op_type"],
     r"sym\.Custom"),
    ("mx.operator.CustomOp (assign, forward, backward)", "nets.operator.CustomOp", [],
     r"operator\.CustomOp\)"),
    ("mx.operator.CustomOpProp(need_top_grad)", "nets.operator.CustomOpProp",
     ["need_top_grad"], r"CustomOpProp"),
    ("mx.operator.register", "nets.operator.register", [], r"operator\.register"),
    ("mx.initializer.Normal(sigma)", "nets.initializer.Normal", ["sigma"],
     r"initializer\.Normal"),
    ("mx.init.Xavier(factor_type, magnitude)", "nets.init.Xavier",
     ["factor_type", "magnitude"], r"init\.Xavier"),
    ("mx.mod.Module / mx.module.Module", "nets.mod.Module",
     ["symbol", "data_names", "label_names", "context"], r"\.Module\("),
    ("Module.bind", "nets.mod.Module.bind", ["data_shapes", "label_shapes"], r"\.bind\("),
    ("Module.init_params", "nets.mod.Module.init_params", ["initializer"],
     r"\.init_params\("),
    ("Module.init_optimizer (kvstore None/'local'/'device'/KVStore, optimizer object)",
     "nets.mod.Module.init_optimizer", ["optimizer", "kvstore", "optimizer_params"],
     r"init_optimizer"),
    ("Module.prepare(batch or None, sparse_row_id_fn)", "nets.mod.Module.prepare",
     ["sparse_row_id_fn"], r"\.prepare\("),
    ("Module.forward_backward / update / update_metric", "nets.mod.Module.forward_backward",
     [], r"forward_backward"),
    ("Module.forward(batch, is_train) / get_outputs", "nets.mod.Module.forward",
     ["is_train"], r"mod\.forward\("),
    ("Module.score(iter, [metric names])", "nets.mod.Module.score", ["eval_data",
                                                                    "eval_metric"],
     r"\.score\("),
    ("Module.save_checkpoint(prefix, epoch, save_optimizer_states)",
     "nets.mod.Module.save_checkpoint", ["save_optimizer_states"], r"save_checkpoint"),
    ("Module.set_params(arg_params, aux_params)", "nets.mod.Module.set_params",
     ["arg_params", "aux_params"], r"set_params"),
    ("mx.model.load_checkpoint", "nets.model.load_checkpoint", [], r"load_checkpoint"),
    ("mx.model.BatchEndParam(epoch, nbatch, eval_metric, locals)",
     "nets.model.BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"],
     r"BatchEndParam"),
    ("mx.callback.Speedometer(batch_size, frequent)", "nets.callback.Speedometer", [],
     r"Speedometer"),
    ("mx.optimizer.create(name, learning_rate, rescale_grad)", "nets.optim.create",
     ["learning_rate", "rescale_grad"], r"optimizer\.create"),
    ("mx.metric.create([names]) incl. 'nll_loss', 'acc', 'MSE'", "nets.metric.create", [],
     r"metric\.create"),
    ("mx.metric.EvalMetric subclass (name, output_names, label_names, **kwargs)",
     "nets.metric.EvalMetric", ["output_names", "label_names"], r"metric\.EvalMetric"),
    ("mx.metric.register", "nets.metric.register", [], r"metric\.register"),
    ("mx.metric.alias", "nets.metric.alias", [], r"metric\.alias"),
    ("mx.metric.check_label_shapes", "nets.metric.check_label_shapes", [],
     r"check_label_shapes"),
]

#: MXNet name -> which sparse unit test file uses it (``nd``, ``op``).
SPARSE_TEST_NAMES = {
    'mx.base.MXNetError': 'nd',
    'mx.cpu': 'nd,op',
    'mx.name.NameManager': 'nd',
    'mx.nd.Convolution': 'op',
    'mx.nd.FullyConnected': 'nd,op',
    'mx.nd._internal._square_sum': 'op',
    'mx.nd.abs': 'op',
    'mx.nd.array': 'nd,op',
    'mx.nd.broadcast_add': 'nd',
    'mx.nd.cast_storage': 'op',
    'mx.nd.concat': 'nd',
    'mx.nd.contrib.getnnz': 'nd',
    'mx.nd.contrib.quadratic': 'op',
    'mx.nd.crop': 'op',
    'mx.nd.dot': 'op',
    'mx.nd.elemwise_add': 'nd,op',
    'mx.nd.elemwise_sub': 'op',
    'mx.nd.empty': 'nd,op',
    'mx.nd.flatten': 'op',
    'mx.nd.load': 'nd',
    'mx.nd.mean': 'op',
    'mx.nd.ones': 'nd,op',
    'mx.nd.random.gamma': 'nd',
    'mx.nd.random.normal': 'nd',
    'mx.nd.random.uniform': 'nd,op',
    'mx.nd.random_uniform': 'nd',
    'mx.nd.save': 'nd',
    'mx.nd.slice': 'nd',
    'mx.nd.sparse.FullyConnected': 'nd',
    'mx.nd.sparse.add': 'op',
    'mx.nd.sparse.array': 'nd',
    'mx.nd.sparse.csr_matrix': 'nd',
    'mx.nd.sparse.divide': 'op',
    'mx.nd.sparse.dot': 'op',
    'mx.nd.sparse.multiply': 'op',
    'mx.nd.sparse.retain': 'nd,op',
    'mx.nd.sparse.row_sparse_array': 'nd,op',
    'mx.nd.sparse.slice': 'nd',
    'mx.nd.sparse.subtract': 'op',
    'mx.nd.sparse.zeros': 'nd,op',
    'mx.nd.sparse.zeros_like': 'op',
    'mx.nd.sum': 'nd,op',
    'mx.nd.take': 'nd',
    'mx.nd.zeros': 'nd,op',
    'mx.nd.zeros_like': 'op',
    'mx.ndarray.NDArray': 'nd',
    'mx.sym.Concat': 'op',
    'mx.sym.Variable': 'op',
    'mx.sym._internal._hypot': 'op',
    'mx.sym._internal._maximum': 'op',
    'mx.sym._internal._minimum': 'op',
    'mx.sym._internal._scatter_elemwise_div': 'op',
    'mx.sym._internal._scatter_minus_scalar': 'op',
    'mx.sym._internal._scatter_plus_scalar': 'op',
    'mx.sym.contrib.SparseEmbedding': 'op',
    'mx.sym.relu': 'op',
    'mx.sym.reshape': 'op',
    'mx.sym.sigmoid': 'op',
    'mx.sym.sparse.Embedding': 'op',
    'mx.sym.sparse.abs': 'op',
    'mx.sym.sparse.arccos': 'op',
    'mx.sym.sparse.arccosh': 'op',
    'mx.sym.sparse.arcsin': 'op',
    'mx.sym.sparse.arcsinh': 'op',
    'mx.sym.sparse.arctan': 'op',
    'mx.sym.sparse.arctanh': 'op',
    'mx.sym.sparse.cbrt': 'op',
    'mx.sym.sparse.ceil': 'op',
    'mx.sym.sparse.cos': 'op',
    'mx.sym.sparse.cosh': 'op',
    'mx.sym.sparse.degrees': 'op',
    'mx.sym.sparse.dot': 'op',
    'mx.sym.sparse.elemwise_add': 'op',
    'mx.sym.sparse.elemwise_div': 'op',
    'mx.sym.sparse.elemwise_mul': 'op',
    'mx.sym.sparse.elemwise_sub': 'op',
    'mx.sym.sparse.expm1': 'op',
    'mx.sym.sparse.fix': 'op',
    'mx.sym.sparse.floor': 'op',
    'mx.sym.sparse.gamma': 'op',
    'mx.sym.sparse.gammaln': 'op',
    'mx.sym.sparse.log10': 'op',
    'mx.sym.sparse.log1p': 'op',
    'mx.sym.sparse.log2': 'op',
    'mx.sym.sparse.negative': 'op',
    'mx.sym.sparse.radians': 'op',
    'mx.sym.sparse.retain': 'op',
    'mx.sym.sparse.rint': 'op',
    'mx.sym.sparse.round': 'op',
    'mx.sym.sparse.rsqrt': 'op',
    'mx.sym.sparse.sign': 'op',
    'mx.sym.sparse.sin': 'op',
    'mx.sym.sparse.sinh': 'op',
    'mx.sym.sparse.sqrt': 'op',
    'mx.sym.sparse.square': 'op',
    'mx.sym.sparse.tan': 'op',
    'mx.sym.sparse.tanh': 'op',
    'mx.sym.sparse.trunc': 'op',
    'mx.sym.square': 'op',
    'mx.sym.sum': 'op',
    'mx.sym.where': 'op',
    'mx.symbol.BatchNorm': 'op',
    'mx.symbol.SoftmaxOutput': 'op',
    'mx.symbol.Variable': 'op',
    'mx.symbol._internal._square_sum': 'op',
    'mx.symbol.broadcast_add': 'op',
    'mx.symbol.cast_storage': 'op',
    'mx.symbol.sparse.add_n': 'op',
    'mx.symbol.sparse.dot': 'op',
    'mx.symbol.sparse.elemwise_add': 'op',
    'mx.test_utils.almost_equal': 'nd,op',
    'mx.test_utils.assert_allclose': 'nd',
    'mx.test_utils.assert_almost_equal': 'nd,op',
    'mx.test_utils.assert_exception': 'nd',
    'mx.test_utils.assign_each': 'op',
    'mx.test_utils.assign_each2': 'op',
    'mx.test_utils.check_numeric_gradient': 'op',
    'mx.test_utils.check_symbolic_backward': 'op',
    'mx.test_utils.check_symbolic_forward': 'op',
    'mx.test_utils.create_sparse_array': 'op',
    'mx.test_utils.create_sparse_array_zd': 'op',
    'mx.test_utils.default_context': 'nd,op',
    'mx.test_utils.rand_ndarray': 'nd,op',
    'mx.test_utils.rand_shape_2d': 'nd,op',
    'mx.test_utils.rand_shape_3d': 'nd,op',
    'mx.test_utils.rand_shape_nd': 'op',
    'mx.test_utils.rand_sparse_ndarray': 'nd,op',
    'mx.test_utils.random_arrays': 'nd',
    'mx.test_utils.random_sample': 'op',
    'mx.test_utils.same': 'nd,op',
}

#: Behaviour that differs on purpose although the name exists.
DIFFERS = {
    "Module.save_checkpoint(prefix, epoch, save_optimizer_states)":
        "writes `<prefix>-NNNN.params.npz` / `.states.npz` (npz, never pickle) where "
        "MXNet writes `.params` / `.states`",
}


def _module_file(dotted):
    """The file of module ``dotted`` (``nets.x.y``) inside the checked checkout, or None."""
    base = os.path.join(NETS_ROOT, *dotted.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.exists(candidate):
            return candidate
    return None


def resolve(path):
    """The object at dotted ``path`` in the checked checkout's nets, or None. Modules
    are imported only when their file is in that checkout (an editable install of
    another checkout would otherwise supply modules this one lacks)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if _module_file(".".join(parts[:i])):
            obj = importlib.import_module(".".join(parts[:i]))
            break
    else:
        return None
    for name in parts[i:]:
        if not hasattr(obj, name):
            return None
        obj = getattr(obj, name)
        where = getattr(obj, "__file__", None) if inspect.ismodule(obj) else None
        if where and not os.path.abspath(where).startswith(NETS_DIR + os.sep):
            return None  # (a module built in memory, such as ``_internal``, has no file)
    return obj


def status(target, kwargs):
    """``('missing', why)`` or ``('present', '')`` for one row."""
    obj = resolve(target)
    if obj is None:
        return "missing", "no `%s`" % target
    if kwargs:
        func = obj.__init__ if inspect.isclass(obj) else obj
        try:
            params = inspect.signature(func).parameters
        except (TypeError, ValueError):
            return "present", ""
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return "present", ""
        absent = [k for k in kwargs if k not in params]
        if absent:
            return "missing", "no keyword %s" % ", ".join("`%s`" % k for k in absent)
    return "present", ""


def used_by(pattern):
    texts = {}
    for name in PROGRAM_FILES:
        with open(os.path.join(HERE, name + ".py")) as f:
            texts[name] = f.read()
    users = []
    for name, text in texts.items():
        if re.search(pattern, text):
            users.extend(SHORT[name].split(", "))
    return ", ".join(sorted(set(users), key=["LC", "FM", "MF", "WD", "WDI"].index))


def table():
    """The Markdown table: name | used by | nets status | note."""
    lines = ["| MXNet name | used by | nets status | note |", "|---|---|---|---|"]
    for name, target, kwargs, pattern in ROWS:
        st, why = status(target, kwargs)
        users = used_by(pattern)
        if st == "present" and name in DIFFERS:
            st, why = "differs", DIFFERS[name]
        elif st == "present" and users:
            st = "supported"
        shown = name if not kwargs else "%s (`%s`)" % (name, "`, `".join(kwargs))
        lines.append("| %s | %s | %s | %s |" % (shown, users, st, why))
    return "\n".join(lines)


def sparse_test_table():
    """The Markdown table of the names MXNet's sparse unit tests use."""
    from rename import rename
    lines = ["| MXNet name | used by | nets status |", "|---|---|---|"]
    for name, files in SPARSE_TEST_NAMES.items():
        target = rename(name)
        st = "present" if resolve(target) is not None else "missing"
        lines.append("| %s | %s | %s |" % (name, files, st))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, NETS_ROOT)
    print(table())
    print()
    print("### Names MXNet 1.9.1's sparse unit tests use")
    print()
    print("`nd`: test_sparse_ndarray.py, `op`: test_sparse_operator.py. Presence only.")
    print()
    print(sparse_test_table())
