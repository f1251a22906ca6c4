"""Prices and costs: the published price sheet of a model or endpoint (prices), and the
cost of a call from it, worst case or from a response's usage (cost)."""
