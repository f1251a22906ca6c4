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
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from registry.declarations.files import ModelsFile, StagesFile, decl_to_layer
from registry.declarations.models import ModelDecl
from registry.declarations.vocabulary import is_glob
from registry.declarations.yamlsource import UNSET
from registry.resolve.capabilities import Provenance
from registry.resolve.layers import put_path, yaml_provenance
from registry.resolve.merge import Layer, plain_keys

__all__ = ["MAX_ALIAS_HOPS", "KeyIndex", "alias_target", "entry_layers", "follow_alias",
           "matching_keys", "specificity", "via_target"]

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


class KeyIndex:
    """The keys of a ``models`` mapping prepared for :meth:`matching`: the globs compiled
    once, least specific first (ties in file order), and the set of exact ids.

    Args:
        keys: the mapping's keys (exact ids and globs), in file order.
    """

    __slots__ = ("_exact", "_globs")

    def __init__(self, keys: Iterable[str]) -> None:
        globs: list[tuple[int, int, str]] = []
        exact: set[str] = set()
        for index, key in enumerate(keys):
            if is_glob(key):
                globs.append((specificity(key), index, key))
            else:
                exact.add(key)
        globs.sort()
        self._globs = tuple((re.compile(fnmatch.translate(key)).match, key)
                            for _, _, key in globs)
        self._exact = frozenset(exact)

    def matching(self, model_id: str, target: str | None = None) -> list[tuple[str, bool]]:
        """:func:`matching_keys` of these keys."""
        matched = []
        for match, key in self._globs:
            if match(model_id) is not None:
                matched.append((key, False))
            elif target is not None and match(target) is not None:
                matched.append((key, True))
        if target is not None and target in self._exact:
            matched.append((target, True))
        if model_id in self._exact:
            matched.append((model_id, False))
        return matched


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
        (:class:`KeyIndex` does the same for many ids, preparing the keys once.)
    """
    return KeyIndex(keys).matching(model_id, target)


def entry_layers(
    cache: dict[tuple[str | int, ...], Layer],
    index: KeyIndex,
    entries: Mapping[str, ModelDecl],
    model_id: str,
    file: ModelsFile | StagesFile,
    base: tuple[str | int, ...],
    layer_name: str,
    target: str | None = None,
) -> list[Layer]:
    """The layers of the entries of ``file`` under ``base`` that apply to ``model_id``
    (``index`` made from ``entries``; an alias's globs and exact entry through its
    ``target`` too), in merge order. Each entry's layer is made once and kept in
    ``cache`` (by its path in the file, and the target it was matched through)."""
    layers = []
    for key, through in index.matching(model_id, target):
        prefix = (*base, key)
        cache_key = (*prefix, "\0via", str(target)) if through else prefix
        found = cache.get(cache_key)
        if found is None:
            values = decl_to_layer(entries[key])
            for unset_path in file.unset_paths:
                if tuple(unset_path[: len(prefix)]) == prefix:
                    put_path(values, [str(p) for p in unset_path[len(prefix) :]], UNSET)
            provenance = yaml_provenance(file, prefix, layer_name)
            if through and target is not None:
                provenance = via_target(provenance, target)
            found = Layer(values, functools.cache(provenance), plain_keys(values))
            cache[cache_key] = found
        layers.append(found)
    return layers


def via_target(
    provenance: Callable[[tuple[str, ...]], Provenance], target: str
) -> Callable[[tuple[str, ...]], Provenance]:
    """``provenance``, with every source naming the alias target it was matched through
    (``models.yaml:29, via alias_target anthropic/claude-sonnet-5``)."""

    def through(path: tuple[str, ...]) -> Provenance:
        found = provenance(path)
        return replace(found, source=f"{found.source}, via alias_target {target}")

    return through
