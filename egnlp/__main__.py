"""``python -m egnlp``: the ``egnlp`` program, for an environment whose scripts folder is not on PATH."""

from egnlp.cli import main

main()
