"""What compiles are written into: the lock file (format, schema, reader), audit, diff, cache.

The lock runs :func:`compiler.request.compile_request` over stages x models; the audit,
the diff and the CLI's compile cache read its results for auditors, reviewers and editors.
"""
