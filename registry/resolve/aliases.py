"""Which YAML entries apply to a model id, alias ids resolved through their target.

An alias id such as ``~anthropic/claude-sonnet-latest`` routes to another model,
published as its ``alias_target.slug`` (``anthropic/claude-sonnet-5`` in the 2026-08-19
``/models`` snapshot, the first with the key; OpenRouter's models guide,
https://openrouter.ai/docs/guides/overview/models, says the single-model endpoint
resolves aliases). It matches no
``anthropic/*`` glob itself, so without this step it would get none of the vendor's
rules. :func:`matching_keys` matches every glob against the id and against the target
(least specific first, ties in file order), then adds the target's exact entry, then
the alias's own exact entry, which wins over all. A layer matched only through the
target names it in its provenance (:func:`via_target`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from registry.declarations.vocabulary import is_glob
from registry.resolve.capabilities import Provenance

__all__ = ["MAX_ALIAS_HOPS", "alias_target", "follow_alias", "matching_keys", "specificity",
           "via_target"]

MAX_ALIAS_HOPS = 8
"""The longest alias chain followed (``~a`` -> ``~b`` -> ... -> a model); a longer one
is read as no alias, with a note."""


def specificity(pattern: str) -> int:
    """The number of literal characters of a glob (more wins)."""
    return sum(1 for ch in pattern if ch not in "*?[]")


def alias_target(core: Mapping[str, Any] | None, model_id: str) -> str | None:
    """The published ``alias_target.slug`` of ``model_id``'s core fields, or ``None``
    (no alias, an empty slug, or the id itself)."""
    found = None if core is None else core.get("alias_target")
    slug = None if not found else found.get("slug")
    return slug if isinstance(slug, str) and slug and slug != model_id else None


def follow_alias(
    core_of: Callable[[str], Mapping[str, Any] | None], model_id: str
) -> tuple[str | None, list[str]]:
    """The model an alias id finally routes to, and what is worth a note on the way.

    ``alias_target.slug`` may name another alias (a chain: followed, at most
    :data:`MAX_ALIAS_HOPS` hops, to the first id that is not one), the id itself (read
    as no alias), a loop (``~a`` -> ``~b`` -> ``~a``: no alias), or an id the metadata
    does not list (kept as the target, since OpenRouter resolves it and the globs that
    match it still say something, but noted).

    Args:
        core_of: the core fields of a model id, ``None`` for an id not listed.
        model_id: the id being resolved.

    Returns:
        ``(target, notes)``: the final target (``None`` for no alias) and one line per
        chain, loop, self-reference or unknown target, naming ``model_id``.
    """
    core = core_of(model_id)
    found = None if core is None else core.get("alias_target")
    slug = found.get("slug") if isinstance(found, Mapping) else None
    if not isinstance(slug, str) or not slug:
        return None, []
    who = f"metadata of {model_id}"
    if slug == model_id:
        return None, [f"{who}: alias_target is the id itself; read as no alias"]
    chain = [model_id, slug]
    while True:
        core = core_of(chain[-1])
        if core is None:
            hops = " -> ".join(chain)
            return chain[-1], [f"{who}: alias_target {chain[-1]} is not in the metadata "
                               f"({hops}); the declarations matching it apply, unchecked"]
        nxt = alias_target(core, chain[-1])
        if nxt is None:
            break
        chain.append(nxt)
        if nxt in chain[:-1]:
            return None, [f"{who}: alias_target loops ({' -> '.join(chain)}); read as no "
                          "alias"]
        if len(chain) > MAX_ALIAS_HOPS + 1:
            return None, [f"{who}: alias chain longer than {MAX_ALIAS_HOPS} hops "
                          f"({' -> '.join(chain)}); read as no alias"]
    if len(chain) > 2:
        return chain[-1], [f"{who}: alias_target {slug} is itself an alias; followed to "
                           f"{chain[-1]} ({' -> '.join(chain)})"]
    return chain[-1], []


def matching_keys(
    keys: Iterable[str], model_id: str, target: str | None = None
) -> list[tuple[str, bool]]:
    """The keys of a ``models`` mapping that apply to ``model_id``, in merge order.

    Args:
        keys: the mapping's keys (exact ids and globs), in file order.
        model_id: the model being resolved.
        target: its ``alias_target`` (see :func:`alias_target`), or ``None``.

    Returns:
        ``(key, through_target)`` pairs: the matching globs, least specific first
        (ties in file order), then ``target``'s exact key, then ``model_id``'s.
        ``through_target`` is true for a key that applies only because of ``target``.
    """
    order = list(keys)
    globs: list[tuple[int, int, str, bool]] = []
    exact_target = exact_own = False
    for index, key in enumerate(order):
        if not is_glob(key):
            exact_own = exact_own or key == model_id
            exact_target = exact_target or (target is not None and key == target)
            continue
        own = fnmatch.fnmatchcase(model_id, key)
        if own or (target is not None and fnmatch.fnmatchcase(target, key)):
            globs.append((specificity(key), index, key, not own))
    globs.sort()
    matched = [(key, through) for _, _, key, through in globs]
    if exact_target and target is not None:
        matched.append((target, True))
    if exact_own:
        matched.append((model_id, False))
    return matched


def via_target(
    provenance: Callable[[tuple[str, ...]], Provenance], target: str
) -> Callable[[tuple[str, ...]], Provenance]:
    """``provenance``, with every source naming the alias target it was matched through
    (``models.yaml:29, via alias_target anthropic/claude-sonnet-5``)."""

    def through(path: tuple[str, ...]) -> Provenance:
        found = provenance(path)
        return replace(found, source=f"{found.source}, via alias_target {target}")

    return through
