"""``python -m nets ...``: the ``nets`` command line (``nets.cli``)."""
import sys

from .cli import main

sys.exit(main())
