"""models.yaml and stages.yaml: line-aware loading, strict schemas, vocabulary, located errors.

Text comes from the user's YAML files; it leaves as validated declarations, with the
file:line of every key, for :mod:`registry.resolve` to merge over the metadata.
"""
