"""Optimizers (MXNet's ``mx.optimizer``): SGD, Adam, AdamW, AdaGrad, row-wise AdaGrad
(FBGEMM's), group AdaGrad (MXNet's ``groupadagrad``), FTRL, RMSProp, Signum and signSGD,
the ``Optimizer`` base with its registry (``create('adam', ...)``, ``register``), the
``Record`` it keeps per parameter in ``Optimizer.state`` and the ``RowSelection`` it hands
to an optimizer's ``update_rows`` (``nets.ops.update``, shared with the update
operators), ``save_states``/``load_states`` (an optimizer's state to a file and back),
MXNet's ``Updater``/``get_updater``, and the learning-rate schedulers of
``nets.optim.lr_scheduler``.

With a row_sparse gradient and ``lazy_update=True`` (the default) an update reads and writes
only the gradient's rows of the weight and of every state, dense or row_sparse.
"""
from . import lr_scheduler
from .adagrad import AdaGrad, GroupAdaGrad, RowWiseAdaGrad
from .adam import Adam, AdamW
from .ftrl import FTRL, Ftrl
from .lr_scheduler import (CosineScheduler, FactorScheduler, LRScheduler, MultiFactorScheduler,
                           PolyScheduler)
from .optimizer import WD_MODES, Optimizer, Record, RowSelection, create, register
from .rmsprop import RMSProp
from .sgd import SGD
from .signum import Signum, SignSGD
from .states import load_states, save_states
from .updater import Updater, get_updater

__all__ = ["Optimizer", "Record", "RowSelection", "create", "register", "WD_MODES",
           "Updater", "get_updater", "save_states", "load_states", "SGD",
           "Adam", "AdamW", "AdaGrad", "RowWiseAdaGrad", "GroupAdaGrad", "FTRL", "Ftrl",
           "RMSProp", "Signum", "SignSGD",
           "lr_scheduler", "LRScheduler", "FactorScheduler", "MultiFactorScheduler",
           "PolyScheduler", "CosineScheduler"]
