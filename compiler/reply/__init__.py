"""Replies: undo what the projection did, then validate with the original contract.

Takes a model's text and the :class:`~compiler.schema.projected.Projection` the request
was compiled with; returns the contract's pydantic value or raises a value-free error.
"""
