"""The output contract and its JSON Schema: dialects, projection, checks, shown instructions.

A pydantic type becomes an :class:`~compiler.schema.contract.OutputContract`; it is projected
once per dialect for :mod:`compiler.passes.enforcement`, and :mod:`compiler.reply` reads the
projection back when a reply is parsed. Nothing here imports a pass.
"""
