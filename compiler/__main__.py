"""``python -m compiler`` runs the ``capc`` command line."""

from compiler.cli.main import run

run()
