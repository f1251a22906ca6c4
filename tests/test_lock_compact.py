"""The lock's shared report tables: smaller than the lock before them, and lossless."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.artifacts.diff import diff_locks
from compiler.artifacts.lock import LockFileError, build_lock, dump_lock, read_lock
from compiler.artifacts.lock_compact import expand_reports
from compiler.artifacts.lock_reply import portable_report
from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

#: Bytes of the example stages' lock (bundled seed, route plans) before issue 18.
PRE_18_LOCK_BYTES = 289_210


@pytest.fixture()
def example() -> tuple[Registry, dict[str, object]]:
    """The example stages' registry (bundled seed) and its lock document."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    return registry, build_lock(registry)


def test_the_example_lock_is_smaller_than_before_issue_18(
    example: tuple[Registry, dict[str, object]],
) -> None:
    """Reports share their schema runs and evidence: the lock is under the pre-18 size."""
    _, document = example
    assert document["schema_adjustments"] and document["evidence"]
    assert len(dump_lock(document).encode("utf-8")) < PRE_18_LOCK_BYTES


def test_expanded_reports_are_the_compilers_reports(
    example: tuple[Registry, dict[str, object]],
) -> None:
    """Resolving the tables gives each report exactly as the compiler made it (made
    portable: metadata evidence by file name, no note on how it was obtained)."""
    registry, document = example
    whole = expand_reports(document)
    assert "evidence" not in whole and "schema_adjustments" not in whole
    stages = whole["stages"]
    assert isinstance(stages, dict)
    for stage, models in stages.items():
        for model, entry in models.items():
            compiled = compile_request(stage, model, registry=registry)
            reports = [compiled.report, *(a.report for a in compiled.attempts)]
            stored = [entry["report"], *(a["report"] for a in entry.get("attempts") or ())]
            expected = [portable_report(r, registry.catalog) for r in reports]
            assert stored == expected, (stage, model)


def test_a_dangling_reference_is_not_a_lock(
    example: tuple[Registry, dict[str, object]], tmp_path: Path
) -> None:
    """read_lock names the entry whose report points at a missing table key."""
    _, document = example
    broken = json.loads(dump_lock(document))
    broken["schema_adjustments"] = {}
    path = tmp_path / "capc.lock.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(LockFileError, match="no schema_adjustments"):
        read_lock(path)
    broken = json.loads(dump_lock(document))
    broken["evidence"] = {}
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(LockFileError, match="no evidence"):
        read_lock(path)


def test_diff_explains_a_change_by_a_shared_schema_run(
    example: tuple[Registry, dict[str, object]],
) -> None:
    """A schema change is explained by the ``schema.*`` adjustments of the shared run
    (resolved, with their evidence text), as with whole reports."""
    _, document = example
    old = json.loads(dump_lock(document))
    new = json.loads(dump_lock(document))
    entry = new["stages"]["extract_invoice"]["anthropic/claude-sonnet-4.5"]
    entry["report"]["adjustments"] = [
        a for a in entry["report"]["adjustments"] if "schema_adjustments" not in a]
    entry["request"]["response_format"]["json_schema"]["schema"] = {"type": "object"}
    changes = diff_locks(old, new)
    assert [c.path for c in changes] == ["response_format.json_schema.schema"]
    why = changes[0].explanations
    assert why and {e.change for e in why} == {"no longer"}
    assert all(e.kind.startswith("schema.") for e in why)
    assert any(e.evidence is not None and e.evidence.startswith("models.yaml:") for e in why)


def test_entries_made_for_text_are_compact_entrys_entries() -> None:
    """LockEntries with tables (what spool_lock writes) gives, pair by pair, the entries
    and tables compact_entry makes of the plain entries (what build_lock returns), and
    the plain ones stay plain dicts; route plans (attempts) included."""
    from compiler.artifacts.lock import compile_all
    from compiler.artifacts.lock_compact import compact_entry
    from compiler.artifacts.lock_reply import LockEntries
    from compiler.schema.frozen_json import FrozenDict, FrozenList, thaw_json

    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    items = compile_all(registry) * 2  # the second time round, every piece is shared
    assert any(item.compiled is not None and item.compiled.attempts for item in items)
    plain_tables: tuple[dict[str, object], dict[str, object]] = ({}, {})
    shared_tables: tuple[dict[str, object], dict[str, object]] = ({}, {})
    plain, shared = LockEntries(registry.catalog), LockEntries(
        registry.catalog, tables=shared_tables)
    for item in items:
        entry = plain.entry(item.model, item.compiled, item.error, item.report)
        compact_entry(entry, *plain_tables)  # type: ignore[arg-type]
        made = shared.entry(item.model, item.compiled, item.error, item.report)
        assert thaw_json(made) == thaw_json(entry), (item.stage, item.model)
        for key in ("report", "metadata", "reply", "loop"):
            assert type(entry[key]) in (dict, type(None)), key
        assert isinstance(made["report"]["adjustments"], FrozenList)
        assert isinstance(made["metadata"], FrozenDict)
    assert thaw_json(shared_tables) == thaw_json(plain_tables)


@pytest.mark.parametrize("pair", [(1, True), (1, 1.0), (0.0, -0.0), ("1", 1), (None, "null"),
                                  ([1], (1,)), ({"a": 1}, {"a": True}), ([True], [1]),
                                  ({1: "v"}, {True: "v"}), ({1: "v"}, {"1": "v"})])
def test_a_shared_key_is_equal_only_for_equal_text(pair: tuple[object, object]) -> None:
    """Values json would write differently never share a key (1, True, 1.0, -0.0, and
    dict keys that are not strings: unkeyed, so never shared)."""
    from compiler.artifacts.lock_compact import UNKEYED, shared_key
    from compiler.artifacts.lock_text import lock_text

    one, two = pair
    same = lock_text(one) == lock_text(two)
    keys = shared_key(one), shared_key(two)
    if UNKEYED in keys:  # never shared: right whatever the texts
        assert isinstance(one, dict) and any(type(k) is not str for k in one), keys
    else:
        assert (keys[0] == keys[1]) == same


def test_adjustments_with_equal_values_of_different_text_are_not_shared() -> None:
    """``{1: "v"}`` and ``{True: "v"}`` are equal dicts that ``to_dict()`` writes apart."""
    from compiler.artifacts.lock_compact import SharedReports
    from compiler.artifacts.lock_text import lock_text
    from compiler.report import Adjustment

    reports = SharedReports({}, {}, source="s", name="n")
    for requested in ({1: "v"}, {True: "v"}):
        adjustment = Adjustment("param.dropped", "sampling.x", requested, None, "r")
        made = reports.adjustments([adjustment])
        assert lock_text(made) == lock_text([adjustment.to_dict()])
