"""The ``capc`` command line: one module per command group, dispatched by :mod:`.main`.

Arguments come from the shell; each command calls the registry, the compiler or an
artifact and prints text or ``--json``. Only ``compiler/__main__.py`` imports this folder.
"""
