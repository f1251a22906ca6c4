"""registry.resolve.merge: later layers win, unset removes, the base is never changed, and the
values-only merge plus lazy provenance equal the full merge."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from registry.declarations.yamlsource import UNSET
from registry.resolve.capabilities import Provenance
from registry.resolve.merge import Layer, LazyProvenance, merge_layers, merge_onto, merge_values


def _layer(name: str, values: dict[str, Any]) -> Layer:
    return Layer(values, lambda path: Provenance(name, name, ".".join(path)))


BASE = merge_layers([_layer("default", {
    "reasoning": {"style": "effort", "can_disable": True},
    "sampling": {"ranges": {"temperature": {"min": 0.0, "max": 2.0}}},
    "supported_parameters": ["max_tokens"],
})])


def test_later_layers_win_and_unset_removes() -> None:
    """A later scalar replaces, nested mappings merge key by key, unset removes a leaf or
    a whole subtree with its provenance, and a scalar may replace a mapping."""
    layers = [
        _layer("metadata", {"reasoning": {"can_disable": False}, "limits": {"context_length": 8}}),
        _layer("models.yaml", {"sampling": {"ranges": UNSET}, "reasoning": {"style": "budget"}}),
        _layer("stages.yaml", {"limits": 5, "supported_parameters": ["seed"]}),
    ]
    values, prov = merge_onto(BASE, layers)
    assert values == {
        "reasoning": {"style": "budget", "can_disable": False},
        "sampling": {},
        "supported_parameters": ["seed"],
        "limits": 5,
    }
    assert prov["reasoning.can_disable"].layer == "metadata"
    assert prov["reasoning.style"].layer == "models.yaml"
    assert prov["limits"].layer == "stages.yaml"
    assert "limits.context_length" not in prov
    assert not any(k.startswith("sampling.ranges") for k in prov)


def test_the_base_is_never_changed() -> None:
    """Copy on write: merging onto a shared base leaves it as it was."""
    before = copy.deepcopy(BASE)
    merge_onto(BASE, [_layer("x", {"sampling": {"ranges": {"temperature": {"max": 1.0}}}})])
    merge_values(BASE[0], [_layer("x", {"reasoning": UNSET, "sampling": {"fixed": {"a": 1}}})])
    assert before == BASE


_keys = st.sampled_from(["reasoning", "sampling", "limits", "style", "max", "a"])
_leaf = st.one_of(st.integers(-3, 3), st.booleans(), st.lists(st.integers(0, 3), max_size=2),
                  st.just(UNSET))
_tree = st.recursive(_leaf, lambda inner: st.dictionaries(_keys, inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(_keys, _tree, max_size=3), max_size=4))
def test_values_merge_and_lazy_provenance_equal_the_full_merge(
    layer_values: list[dict[str, Any]],
) -> None:
    """For any layers, merge_values gives merge_onto's values and LazyProvenance its
    provenance table."""
    layers = [_layer(f"layer{i}", v) for i, v in enumerate(layer_values)]
    values, prov = merge_onto(BASE, layers)
    assert merge_values(BASE[0], layers) == values
    lazy = LazyProvenance(BASE, layers)
    assert dict(lazy) == prov
    assert len(lazy) == len(prov) and lazy == prov
