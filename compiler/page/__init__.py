"""The audit page: ``capc audit --html`` and ``capc diff --html`` (one self-contained HTML
file), its cells and the rows it reads back from a lock."""
