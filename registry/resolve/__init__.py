"""Resolution: layers merged with provenance into a frozen ResolvedModel, routing, checks.

Reads a catalog from :mod:`registry.metadata` (through :mod:`registry.sources`) and the
declarations of :mod:`registry.declarations`; :class:`~registry.resolve.resolver.Registry`
hands the result to the compiler.
"""
