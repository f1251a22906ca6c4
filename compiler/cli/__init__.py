"""The ``capc`` command line: one module per command group, dispatched by :mod:`.main`.

Arguments come from the shell; each command calls the public API (registry, request,
artifacts) and prints text or ``--json``. Nothing in the package imports this folder.
"""
