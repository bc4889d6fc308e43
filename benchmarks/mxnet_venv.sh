#!/usr/bin/env bash
# Create (or reuse) a Python venv holding Apache MXNet 1.9.1, the reference that
# tests/compat and benchmarks/bench_compat.py compare nets against.
#
# Usage: bash benchmarks/mxnet_venv.sh [VENV_DIR]      (default: /work/mxnet-venv)
#        PYTHON=python3.10 bash benchmarks/mxnet_venv.sh  (pick the interpreter)
#
# MXNet 1.9.1 uses `np.bool`, removed in NumPy 1.24, so NumPy is pinned below
# 1.24. scipy is needed by mx.nd.sparse.csr_matrix((data, indices, indptr)).
# The wheel on the package registry is pure `py3` with a bundled libmxnet.so
# (OpenBLAS + oneDNN, CPU only). Idempotent: an existing venv that already
# imports mxnet 1.9.1 is left alone; otherwise the missing pieces are installed.
set -euo pipefail

VENV="${1:-/work/mxnet-venv}"
PY="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] && \
   "$VENV/bin/python" -c 'import mxnet, scipy, sys; sys.exit(mxnet.__version__ != "1.9.1")' 2>/dev/null; then
    echo "mxnet 1.9.1 already importable in $VENV"
else
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet \
        "mxnet==1.9.1" "numpy<1.24" "scipy" "requests" "graphviz<0.9.0"
fi

# Smoke test: import, a sparse dot, and one SGD step through Module-free Gluon.
"$VENV/bin/python" - <<'PY'
import mxnet as mx, numpy as np
x = mx.nd.sparse.csr_matrix(np.eye(4, dtype=np.float32))
w = mx.nd.ones((4, 2))
assert mx.nd.sparse.dot(x, w).asnumpy().sum() == 8.0
net = mx.gluon.nn.Dense(1)
net.initialize()
trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
with mx.autograd.record():
    loss = ((net(mx.nd.ones((3, 4))) - 1) ** 2).mean()
loss.backward()
trainer.step(1)
print("mxnet", mx.__version__, "numpy", np.__version__, "OK")
PY
