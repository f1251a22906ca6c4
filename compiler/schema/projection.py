"""Project a contract's JSON Schema into one dialect, reporting every change.

:func:`project` turns the canonical schema of an :class:`~compiler.schema.contract.OutputContract`
into the subset a :class:`~compiler.schema.dialects.Dialect` accepts, once per
``(contract.sha256, dialect)``, and returns a :class:`~compiler.schema.projected.Projection`
(its change kinds are catalogued in :mod:`compiler.schema.projected`). Titles are kept
as pydantic wrote them, and key order follows the contract, so the output is
deterministic. The rewriting itself is :mod:`compiler.schema.projector`, imported on the
first projection (jsonschema loads with it).
"""

from __future__ import annotations

import threading

from compiler.errors import ProjectionError
from compiler.schema.budgets import DEFAULT_BUDGET, ProjectionBudget
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import Dialect
from compiler.schema.projected import Projection

__all__ = ["project"]

_CACHE: dict[tuple[str, Dialect], Projection] = {}
_CACHE_LOCK = threading.Lock()


def project(
    contract: OutputContract, dialect: Dialect, budget: ProjectionBudget = DEFAULT_BUDGET
) -> Projection:
    """Project ``contract.schema`` into ``dialect`` (cached per schema hash and dialect).

    The cache key is the dialect *value*, not only its name, so a dialect changed
    with ``dataclasses.replace`` gets its own projection. The contract's schema is
    never modified.

    Args:
        contract: the output contract.
        dialect: the target dialect.
        budget: how large the projection may grow (nodes, depth, bytes); the default
            is :data:`compiler.schema.budgets.DEFAULT_BUDGET`.

    Returns:
        The projection; its ``blockers`` say whether the dialect can enforce it.

    Raises:
        ProjectionError: an external ``$ref`` or ``$dynamicRef``, an unresolvable
            ``$ref``, a ``$defs`` alias cycle, a schema over ``budget``, a schema
            shape that cannot be rewritten, or (a bug guard) a result that is not
            valid JSON Schema or breaks the dialect's rules without a blocker.

    >>> from pydantic import BaseModel
    >>> from compiler.schema.dialects import DIALECTS
    >>> class Note(BaseModel):
    ...     text: str = ""
    >>> p = project(OutputContract.from_type(Note), DIALECTS["openai-strict"])
    >>> p.schema["required"], sorted(p.nullable_added)
    (['text'], [('properties', 'text')])
    """
    key = (contract.sha256, dialect)
    cached = budget == DEFAULT_BUDGET  # a projection under another budget is not cached
    found = _CACHE.get(key) if cached else None
    if found is not None:
        return found
    from compiler.schema.projector import Projector

    try:
        projection = Projector(contract.schema, dialect, budget).run()
    except RecursionError as exc:  # a guard: the budget's depth normally fires first
        raise ProjectionError(
            f"{contract.name}: the schema nests too deeply to project (RecursionError); "
            "use fewer levels of nested models"
        ) from exc
    if not cached:
        return projection
    with _CACHE_LOCK:
        return _CACHE.setdefault(key, projection)
