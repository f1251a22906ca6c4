"""Deep merge of capability layers, keeping the provenance of every leaf.

A *layer* is a nested mapping in the shape of a models.yaml entry (see
``docs/configuration.md``) plus a function that names where each leaf came from.
Layers merge in order, later winning: mappings merge key by key, lists and scalars
replace, and the :data:`registry.declarations.yamlsource.UNSET` marker removes an inherited value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registry.declarations.yamlsource import UNSET
from registry.resolve.capabilities import Provenance

__all__ = ["Layer", "LazyProvenance", "merge_layers", "merge_onto", "merge_values", "plain_keys"]

Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Layer:
    """One source of capability values.

    Attributes:
        values: nested dicts in models.yaml entry shape (plain ``dict``, not any
            mapping: a non-dict value is a leaf); leaves may be ``UNSET``.
        provenance: maps a leaf path (tuple of keys) to its :class:`Provenance`.
        plain: whether no key of :attr:`values`, at any depth, has a dot or is not a
            string (:func:`plain_keys`), when the maker knows; ``None``: unknown.
    """

    values: Mapping[str, Any]
    provenance: Callable[[Path], Provenance]
    plain: bool | None = field(default=None, compare=False)


def _drop_below(prov: dict[str, Provenance], dotted: str) -> None:
    prefix = dotted + "."
    for key in [k for k in prov if k.startswith(prefix)]:
        del prov[key]


def _apply(
    target: dict[str, Any],
    values: Mapping[str, Any],
    layer: Layer,
    path: Path,
    prov: dict[str, Provenance],
    owned: set[int] | None = None,
) -> None:
    """Merge ``values`` into ``target``, recording each leaf's provenance in ``prov``.
    With ``owned``, a nested dict whose id is not in it is shared with a base tree and
    is copied before it is changed (copy on write); :func:`_apply_values` is the same
    without provenance."""
    for key, value in values.items():
        current = target.get(key)
        if isinstance(value, dict):
            if not isinstance(current, dict):
                if key in target:
                    prov.pop(".".join((*path, key)), None)
                current = {}
                target[key] = current
                if owned is not None:
                    owned.add(id(current))
            elif owned is not None and id(current) not in owned:
                current = dict(current)
                target[key] = current
                owned.add(id(current))
            _apply(current, value, layer, (*path, key), prov, owned)
            continue
        here = (*path, key)
        dotted = ".".join(here)
        if isinstance(current, dict):
            _drop_below(prov, dotted)
        if value is UNSET:
            target.pop(key, None)
            prov.pop(dotted, None)
        else:
            target[key] = list(value) if type(value) in (list, tuple) else value
            prov[dotted] = layer.provenance(here)


def merge_layers(layers: Sequence[Layer]) -> tuple[dict[str, Any], dict[str, Provenance]]:
    """Merge ``layers`` in order (later wins) and record each leaf's provenance.

    Args:
        layers: lowest precedence first.

    Returns:
        ``(values, provenance)``: the merged nested mapping, and dotted leaf path ->
        :class:`Provenance` of the layer that set it.

    >>> from registry.resolve.capabilities import Provenance
    >>> p = lambda path: Provenance("default", "-", ".".join(path))
    >>> merge_layers([Layer({"a": {"b": 1, "c": 2}}, p), Layer({"a": {"b": 3}}, p)])[0]
    {'a': {'b': 3, 'c': 2}}
    """
    merged: dict[str, Any] = {}
    prov: dict[str, Provenance] = {}
    for layer in layers:
        _apply(merged, layer.values, layer, (), prov)
    return merged, prov


def merge_onto(
    base: tuple[dict[str, Any], dict[str, Provenance]], layers: Sequence[Layer]
) -> tuple[dict[str, Any], dict[str, Provenance]]:
    """Like :func:`merge_layers`, starting from an already merged ``base`` (not modified).

    Lets a caller merge the layers every model shares once, and only the rest per model.
    Nested mappings of the result that no layer changed are shared with ``base``: treat
    the result as read-only.
    """
    merged, prov = dict(base[0]), dict(base[1])
    owned = {id(merged)}
    for layer in layers:
        _apply(merged, layer.values, layer, (), prov, owned)
    return merged, prov


def merge_values(base: Mapping[str, Any], layers: Sequence[Layer]) -> dict[str, Any]:
    """The values half of :func:`merge_onto`: the same merged mapping, no provenance.

    Nested mappings no layer changed are shared with ``base``: treat the result as
    read-only.
    """
    merged = dict(base)
    owned = {id(merged)}
    for layer in layers:
        _apply_values(merged, layer.values, owned)
    return merged


def _apply_values(target: dict[str, Any], values: Mapping[str, Any], owned: set[int]) -> None:
    """:func:`_apply` without provenance (copy on write against ``owned``): the hot path
    of every resolution, so kept to the few checks it needs."""
    for key, value in values.items():
        if isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
                owned.add(id(current))
            elif id(current) not in owned:
                current = target[key] = dict(current)
                owned.add(id(current))
            _apply_values(current, value, owned)
        elif value is UNSET:
            target.pop(key, None)
        elif type(value) in (list, tuple):
            target[key] = list(value)
        else:
            target[key] = value


_MISSING: Any = object()


def plain_keys(values: Mapping[str, Any]) -> bool:
    """Whether every key of ``values``, at any depth (nested plain dicts), is a string
    without a dot: then a dotted path names one key path."""
    for key, value in values.items():
        if type(key) is not str or "." in key:
            return False
        if isinstance(value, dict) and not plain_keys(value):
            return False
    return True


#: :func:`plain_keys` of long-lived bases (the defaults), by identity (kept beside it)
_BASES: dict[int, tuple[dict[str, Any], bool]] = {}


def _plain_tree(values: dict[str, Any]) -> bool:
    found = _BASES.get(id(values))
    if found is None or found[0] is not values:
        if len(_BASES) >= 8:
            _BASES.clear()
        found = _BASES[id(values)] = (values, plain_keys(values))
    return found[1]


class LazyProvenance(Mapping[str, Provenance]):
    """The provenance half of :func:`merge_onto`, worked out on first use.

    Most resolved models are compiled without anyone asking where a value came from, so
    the merge is repeated, with provenance, only when a lookup happens. Given the merged
    ``tree`` too, a lookup (``get``, ``[]``, ``in``) of one dotted path needs no table:
    the table holds a path exactly when it is a leaf of the tree, with the provenance of
    the last layer that sets it (else the base's), so that layer is looked for, latest
    first. That holds while no key has a dot in it (two key paths would then join to
    one dotted path); with such a key, and for iteration, the table is built.

    Args:
        base: the merged base, as :func:`merge_onto` takes it.
        layers: the layers merged onto it, lowest precedence first.
        tree: the values :func:`merge_values` gives for ``base`` and ``layers``, or
            ``None``.
    """

    __slots__ = ("_base", "_layers", "_simple", "_table", "_tree")

    def __init__(
        self, base: tuple[dict[str, Any], dict[str, Provenance]], layers: Sequence[Layer],
        tree: Mapping[str, Any] | None = None,
    ) -> None:
        self._base = base
        self._layers: tuple[Layer, ...] = tuple(layers)
        self._table: dict[str, Provenance] | None = None
        self._tree = tree
        self._simple: bool | None = None

    def _built(self) -> dict[str, Provenance]:
        table = self._table
        if table is None:  # two threads may both merge; they get equal tables
            table = self._table = merge_onto(self._base, self._layers)[1]
        return table

    def _by_path(self) -> bool:
        """Whether a lookup may go by path (a tree, and no key with a dot)."""
        simple = self._simple
        if simple is None:
            simple = self._simple = (
                type(self._base[0]) is dict and self._tree is not None
                and _plain_tree(self._base[0])
                and all(type(layer.values) is dict and (
                    layer.plain if layer.plain is not None else plain_keys(layer.values))
                    for layer in self._layers))
        return simple

    def get(self, path: str, default: Any = None) -> Any:
        table = self._table
        if table is not None or type(path) is not str or not self._by_path():
            # the table's own get: Mapping.get would catch a KeyError per missing path
            return self._built().get(path, default)
        keys = path.split(".")
        node: Any = self._tree
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        if isinstance(node, dict):  # a mapping, not a leaf
            return default
        for layer in reversed(self._layers):
            value: Any = layer.values
            for key in keys:
                if not isinstance(value, dict) or key not in value:
                    break
                value = value[key]
            else:
                if not isinstance(value, dict):
                    if value is UNSET:  # cannot be, the tree has it: ask the table
                        return self._built().get(path, default)
                    return layer.provenance(tuple(keys))
        found = self._base[1].get(path, _MISSING)
        return self._built().get(path, default) if found is _MISSING else found

    def __getitem__(self, path: str) -> Provenance:
        found = self.get(path, _MISSING)
        if found is _MISSING:
            raise KeyError(path)
        return found  # type: ignore[no-any-return]

    def __contains__(self, path: object) -> bool:
        if type(path) is not str:
            return path in self._built()
        return self.get(path, _MISSING) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __repr__(self) -> str:
        return f"LazyProvenance({self._built()!r})"

    def __reduce__(self) -> tuple[type[dict[str, Provenance]], tuple[dict[str, Provenance]]]:
        # Pickled and deep-copied as the plain table: the layers hold local functions.
        return dict, (dict(self._built()),)
