"""Resolution: layers merged with provenance into a frozen ResolvedModel; routing; checks.

Reads the catalog of :mod:`registry.metadata` and the declarations of :mod:`registry.declarations`;
:class:`~registry.resolve.resolver.Registry` hands each ResolvedModel to the compiler.
"""
