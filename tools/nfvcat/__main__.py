"""``python -m nfvcat``: the console script, as ``nfvcat``."""

from nfvcat.cli import run

run()
