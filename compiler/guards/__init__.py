"""Guards on what a contract may make the host do: regex shapes that backtrack (regex_shape).
Pure functions over plain values; used by compiler/schema/ when a contract is built.
"""
