"""The first compile of a pair does its shared work once, with the same results.

A stage none of whose overrides applies to a model shares the model's stage-less
resolution; models.yaml keys are matched through a :class:`KeyIndex` made once; a
provenance lookup goes by path, without the table; models merged from the same
sampling values share their rules; a projected schema's size is worked
out once; the catalog's one-line description once.
Each check compares with the result the straightforward way gives.
"""

from __future__ import annotations

import fnmatch
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import compile_request
from compiler.passes.budget import tools_tokens
from compiler.schema.frozen_json import freeze_json, thaw_json
from registry.declarations.files import load_models_file
from registry.declarations.vocabulary import is_glob
from registry.declarations.yamlsource import UNSET
from registry.errors import UnknownStageError
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import ModelInfo
from registry.resolve.aliases import KeyIndex, matching_keys, specificity
from registry.resolve.capabilities import Provenance
from registry.resolve.merge import (
    Layer,
    LazyProvenance,
    merge_layers,
    merge_onto,
    merge_values,
    plain_keys,
)
from registry.resolve.resolver import Registry
from tests.conftest import ROOT
from tests.test_resolution import MODEL, registry_with

STAGES = (
    "stages:\n"
    "  plain:\n    output_tokens: 500\n"
    "  tuned:\n    output_tokens: 500\n    overrides:\n"
    f"      '{MODEL}':\n        limits:\n          max_completion_tokens: 3000\n"
    "  elsewhere:\n    output_tokens: 500\n    overrides:\n"
    "      'other/model':\n        limits:\n          max_completion_tokens: 3000\n"
)


def test_a_stage_without_an_applying_override_shares_the_resolution(tmp_path: Path) -> None:
    """No override for the model: the stage's resolution is the stage-less one."""
    registry = registry_with(tmp_path, "models:\n  'acme/*':\n    notes: n\n", STAGES)
    alone = registry.resolve(MODEL)
    assert registry.resolve(MODEL, "plain") is alone
    assert registry.resolve(MODEL, "elsewhere") is alone
    tuned = registry.resolve(MODEL, "tuned")
    assert tuned is not alone and tuned.max_completion_tokens == 3000
    source = tuned.source_of("limits.max_completion_tokens")
    assert source is not None and source.layer == "stages.yaml"
    with pytest.raises(UnknownStageError):
        registry.resolve(MODEL, "missing")


def test_shared_resolutions_compile_as_separate_ones(tmp_path: Path) -> None:
    """Each stage's compile from a shared resolution equals one from a fresh registry."""
    shared = registry_with(tmp_path, "models: {}\n", STAGES)
    for stage in ("plain", "elsewhere", "tuned"):
        fresh = registry_with(tmp_path, "models: {}\n", STAGES)
        got = compile_request(stage, MODEL, registry=shared)
        want = compile_request(stage, MODEL, registry=fresh)
        assert got.body == want.body and got.report == want.report


def _reference(keys: list[str], model_id: str, target: str | None) -> list[tuple[str, bool]]:
    """matching_keys as written before KeyIndex: fnmatch per key, sorted afterwards."""
    globs = []
    exact_own = exact_target = False
    for index, key in enumerate(keys):
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


def test_key_index_matches_as_fnmatch_did() -> None:
    """Every order of a set of globs and exact ids, for ids, aliases and targets."""
    keys = ["*", "acme/*", "acme/model-*", "acme/model-5", "~acme/*", "~acme/model-latest",
            "a?me/*", "[ab]cme/model-[0-9]", "other/*"]
    ids = [("acme/model-5", None), ("~acme/model-latest", "acme/model-5"),
           ("bcme/model-7", None), ("other/x", "acme/model-5"), ("zzz", None)]
    for order in itertools.islice(itertools.permutations(keys), 0, None, 997):
        index = KeyIndex(order)
        for model_id, target in ids:
            want = _reference(list(order), model_id, target)
            assert index.matching(model_id, target) == want
            assert matching_keys(order, model_id, target) == want


def test_a_frozen_schema_is_sized_as_a_plain_one() -> None:
    """tools_tokens of a read-only schema (sized once) equals that of a plain copy."""
    schema = freeze_json({"type": "object", "properties": {
        "é": {"type": "string", "description": "ü" * 40}, "n": {"type": "integer"}}})
    for description in (None, "Return the result.", "ß" * 7):
        function = {"name": "out", "parameters": schema, "strict": True}
        if description is not None:
            function["description"] = description
        plain = {**function, "parameters": thaw_json(schema)}
        frozen_tools = [{"type": "function", "function": function}]
        plain_tools = [{"type": "function", "function": plain}]
        assert tools_tokens(frozen_tools) == tools_tokens(plain_tools)
        assert tools_tokens(frozen_tools) == tools_tokens(frozen_tools)  # the kept size


def test_describe_is_kept_only_when_not_stale() -> None:
    """A fresh catalog's description is worked out once; a stale one's each time."""
    fresh = Catalog(models={}, source="/x/models.json", fetched_at="2026-08-19", origin="file")
    assert fresh.describe() == "models.json (file, as of 2026-08-19)"
    assert fresh.describe() is fresh.describe()
    stale = Catalog(models={}, source="/x/models.json", fetched_at="2026-08-19", origin="file",
                    stale=True)
    assert stale.describe(age=False) == "models.json (file, as of 2026-08-19, stale)"
    assert stale.describe().startswith("models.json (file, as of 2026-08-19, stale, ")


_KEYS = st.sampled_from(["reasoning", "sampling", "limits", "style", "max", "a", "a.b", "b"])
_LEAF = st.one_of(st.integers(-3, 3), st.booleans(), st.lists(st.integers(0, 3), max_size=2),
                  st.just(UNSET))
_TREE = st.recursive(_LEAF, lambda inner: st.dictionaries(_KEYS, inner, max_size=3),
                     max_leaves=8)


def _paths(tree: Any, prefix: str = "") -> set[str]:
    """Every dotted path of ``tree`` (nodes and leaves) and a child of each."""
    found = {prefix + "a", prefix + "zz"}
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.add(prefix + key)
            found |= _paths(value, prefix + key + ".")
    return found


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _TREE, max_size=3), max_size=4), st.booleans())
def test_a_lookup_by_path_equals_the_table(layer_values: list[dict[str, Any]],
                                           marked: bool) -> None:
    """Given the merged tree, LazyProvenance answers each path as the full table does
    (keys with a dot included: those lookups build the table), without building it."""
    base = merge_layers([Layer({"reasoning": {"style": "effort"}, "limits": 1},
                               lambda path: Provenance("default", "-", ".".join(path)))])
    layers = [Layer(v, (lambda name: lambda path: Provenance(name, name, ".".join(path)))(
        f"layer{i}"), plain_keys(v) if marked else None) for i, v in enumerate(layer_values)]
    values, table = merge_onto(base, layers)
    lazy = LazyProvenance(base, layers, merge_values(base[0], layers))
    paths = _paths(values) | {p for layer in layer_values for p in _paths(layer)} | set(table)
    for path in sorted(paths):
        assert lazy.get(path) == table.get(path), path
        assert (path in lazy) == (path in table)
    assert dict(lazy) == table


def test_real_models_look_up_as_the_table_says() -> None:
    """Every leaf and parent of every model of the 2026-08-19 snapshot, resolved with the
    example models.yaml for each example stage, as the built table gives it."""
    snapshot = ROOT.parent / "shared" / "data" / "openrouter" / "models-2026-08-19.json"
    if not snapshot.is_file():
        pytest.skip("../shared data absent")
    registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    for model_id in registry.catalog.ids():
        resolved = registry.resolve(model_id)
        provenance = resolved.provenance
        assert isinstance(provenance, LazyProvenance)
        paths = _paths(dict(resolved.tree)) | {"provider.require_parameters", "x.y.z"}
        answers = {path: provenance.get(path) for path in paths}
        table = merge_onto(provenance._base, provenance._layers)[1]
        assert provenance._table is None  # answered without the table
        assert answers == {path: table.get(path) for path in paths}


def test_models_merged_from_the_same_sampling_share_their_rules(tmp_path: Path) -> None:
    """Models whose layers give the same sampling values share one SamplingRules,
    equal to the rules worked out alone; an entry of its own gives other rules."""
    published = {"context_length": 1000, "supported_parameters": ["max_tokens", "temperature"]}
    ids = ["acme/a", "acme/b", "acme/c"]
    catalog = Catalog(models={i: ModelInfo.model_validate({"id": i, **published}) for i in ids},
                      source="t.json", fetched_at="2026-08-19", origin="file")
    (tmp_path / "models.yaml").write_text(
        "models:\n  'acme/*':\n    sampling:\n      ranges: {temperature: {max: 1.0}}\n"
        "  acme/c:\n    sampling:\n      ranges: {temperature: {max: 0.5}}\n")
    registry = Registry(catalog=catalog,
                        models_file=load_models_file(tmp_path / "models.yaml"))
    a, b, c = (registry.resolve(i).sampling for i in ids)
    assert a is b and a.ranges["temperature"] == (0.0, 1.0)
    assert c.ranges["temperature"] == (0.0, 0.5)
    alone = Registry(catalog=catalog, models_file=load_models_file(tmp_path / "models.yaml"))
    assert alone.resolve("acme/b").sampling == b
