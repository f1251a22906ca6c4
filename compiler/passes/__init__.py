"""The compile passes, one module each, run in order by :func:`compiler.request.compile_request`.

Each pass reads a :class:`~compiler.passes.draft.Draft` (the body so far, the intent, the
resolved model) and adds to its body and adjustments: enforcement, reasoning, budget,
sampling, routing. The finished draft is rendered and reported by :mod:`compiler.request`.
"""
