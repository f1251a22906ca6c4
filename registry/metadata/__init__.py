"""OpenRouter's published model metadata: its shapes, parsing, core fields, the catalog.

Payloads arrive from :mod:`registry.sources` (a file, the network or the cache) and
leave as a :class:`~registry.metadata.catalog.Catalog` that :mod:`registry.resolve` reads.
"""
