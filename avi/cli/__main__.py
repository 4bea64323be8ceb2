"""``python -m avi.cli``: the ``avi`` command group."""

from avi.cli import main

main()
