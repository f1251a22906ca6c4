"""Where metadata comes from: settings, URLs, HTTP fetch, the disk cache, the fallback order.

Bytes come from a file, OpenRouter's API or the cache; they leave parsed by
:mod:`registry.metadata` as a catalog or endpoint lists, for :mod:`registry.resolve`.
"""
