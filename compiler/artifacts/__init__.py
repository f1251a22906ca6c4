"""What compiles are written into: the lock file (format, schema, reader), audit, diff, cache.

Each runs :func:`compiler.request.compile_request` over stages x models and turns the
results into a document for other runtimes, auditors, reviewers or the CLI's compile cache.
"""
