"""``nets.kv.Updater``: the store applies an optimizer through ``nets.optim.Updater``
(MXNet's ``optimizer.get_updater``), whose optimizer keeps each key's state
(``Optimizer.state``) and writes it to the states file ``Trainer.save_states`` writes
(``nets.optim.save_states``)."""
from ..optim import Updater

__all__ = ["Updater"]
