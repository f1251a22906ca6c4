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
