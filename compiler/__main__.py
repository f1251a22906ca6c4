"""``python -m compiler`` runs the ``capc`` command line."""

from compiler.cli import run

run()
