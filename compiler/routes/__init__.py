"""Route plans: one body per group of endpoints that can all serve it whole.

OpenRouter serves a request on one endpoint of the model; see docs/concepts.md.
"""
