"""The compile passes, one module each: enforcement, reasoning, budget, sampling, routing.

Each reads and extends a :class:`~compiler.passes.draft.Draft` made by
:func:`compiler.request.compile_request`, which renders the finished body and its report.
"""
