"""The output contract and its JSON Schema: dialects, projection, checks, shown instructions.

A pydantic type becomes an OutputContract, projected once per dialect for the enforcement
pass; :mod:`compiler.reply` reads the projection back. Nothing here imports a pass.
"""
