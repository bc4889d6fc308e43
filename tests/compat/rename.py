"""Mechanical MXNet -> nets renamer for the compat programs.

The rules, applied in this order to the whole program text (``\\b`` = word boundary):

=====================================  ==========================  =====================
pattern                                replacement                 why
=====================================  ==========================  =====================
``\\bimport mxnet as mx\\b``            ``import nets``             the usual import
``\\bmx\\.``                            ``nets.``                   every name keeps
                                                                   its name
``\\bmxnet\\b``                         ``nets``                    ``import mxnet``,
                                                                   ``from mxnet.x ...``
=====================================  ==========================  =====================

So ``mx.gluon.nn`` -> ``nets.gluon.nn``, ``mx.io`` -> ``nets.io``, ``mx.optimizer`` ->
``nets.optimizer``, ``mx.kvstore`` -> ``nets.kvstore``, ``from mxnet import gluon`` ->
``from nets import gluon``: nets answers MXNet's module names (``nets.io`` is
``nets.data``, ``nets.optimizer`` is ``nets.optim``, ``nets.gluon`` re-exports). Nothing
else changes: not argument names, not strings' other words, not the program's logic
(``mx`` inside a longer identifier such as ``max_`` or ``mxu`` is untouched thanks to the
word boundaries).

Usage: ``python tests/compat/rename.py PROGRAM.py [OUT.py]`` (stdout without OUT).
"""
import re
import sys

RULES = [
    (r"\bimport mxnet as mx\b", "import nets"),
    (r"\bmx\.", "nets."),
    (r"\bmxnet\b", "nets"),
]


def rename(text):
    """Return ``text`` with the MXNet names replaced by nets' names (rules above)."""
    for pattern, repl in RULES:
        text = re.sub(pattern, repl, text)
    return text


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: rename.py PROGRAM.py [OUT.py]")
    with open(sys.argv[1]) as f:
        out = rename(f.read())
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w") as f:
            f.write(out)
    else:
        sys.stdout.write(out)


if __name__ == "__main__":
    main()
