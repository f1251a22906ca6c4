"""The audit page without a browser: self-contained, safe, complete data; the row's new fields.

tests/test_audit_page_browser.py opens the same pages in Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.audit import AuditRow, audit
from compiler.artifacts.audit_detail import SEVERITIES, reasoning_change, severity_of
from compiler.artifacts.diff import diff_locks
from compiler.artifacts.lock import build_lock
from compiler.cli.main import main
from compiler.page.page import (
    audit_page,
    diff_page,
    input_file,
    registry_inputs,
    write_page,
)
from compiler.page.page_rows import rows_from_lock
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

#: The keys ``capc audit --json`` rows had before the page: kept, with the same meaning.
OLD_KEYS = {"stage", "model", "status", "error", "rung", "reasoning", "length_param",
            "max_tokens", "dropped", "adjustments", "cost"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script" and self.tags[-1][1].get("type") != "application/json":
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in = None


def _script(text: str, name: str) -> str:
    match = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', text, re.S)
    assert match is not None
    return match.group(1)


def page_data(text: str) -> dict[str, Any]:
    """The page's data as its script sees it: pooled strings put back."""
    pool = json.loads(_script(text, "capc-pool"))

    def inflate(value: dict[str, Any]) -> Any:
        return pool[value["$pool"]] if list(value) == ["$pool"] else value

    data: dict[str, Any] = json.loads(_script(text, "capc-data"), object_hook=inflate)
    return data


def registry_at(metadata: Path | None = None) -> Registry:
    return Registry.load(metadata=metadata, models=ROOT / "models.yaml",
                         stages=ROOT / "stages.yaml")


def test_the_page_is_self_contained_and_its_policy_pins_its_own_code() -> None:
    """No external reference; the CSP allows no source but the hashes of its own inline
    script and style."""
    registry = registry_at()
    text = audit_page(audit(registry), registry, inputs=registry_inputs(registry))
    parser = _Tags()
    parser.feed(text)
    for tag, attrs in parser.tags:
        for name in ("src", "href", "action", "data", "poster"):
            value = attrs.get(name)
            assert value is None or value.startswith("data:"), (tag, name, value)
        assert tag not in ("iframe", "object", "embed", "img")
    policy = next(a["content"] for t, a in parser.tags
                  if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert policy is not None and policy.startswith("default-src 'none';")
    for code, directive in ((parser.scripts, "script-src"), (parser.styles, "style-src")):
        assert len(code) == 1
        digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy


def test_one_cell_per_pair_with_the_route_plan_and_the_inputs_hashed() -> None:
    """The data holds every row as ``capc audit --json`` gives it, plus the vendor; the
    inputs are named with their SHA-256."""
    registry = registry_at()
    rows = audit(registry)
    data = page_data(audit_page(rows, registry, inputs=registry_inputs(registry)))
    assert data["kind"] == "audit" and data["stages"] == registry.stage_names()
    assert [(c["stage"], c["model"]) for c in data["cells"]] == [(r.stage, r.model) for r in rows]
    assert data["cells"][0] == {**json.loads(json.dumps(rows[0].to_dict())),
                                "vendor": rows[0].model.split("/")[0]}
    assert any(len(c["attempts"]) > 1 for c in data["cells"])
    assert any(r["excluded_by"] for c in data["cells"] for r in c["routes"])
    inputs = {i["what"]: i for i in data["sides"][0]["inputs"]}
    stages = (ROOT / "stages.yaml").read_bytes()
    assert inputs["stages.yaml"] == {"what": "stages.yaml", "name": "stages.yaml",
                                     "sha256": hashlib.sha256(stages).hexdigest()}
    assert inputs["metadata"]["date"] == "2026-08-19" and inputs["metadata"]["sha256"] is None
    assert [s["name"] for s in data["severities"]] == [s.name for s in SEVERITIES]


def test_no_string_can_close_the_data_script() -> None:
    """A model id holding ``</script>`` stays data: the page's JSON escapes ``<``, ``>``, ``&``."""
    registry = registry_at()
    evil = "x/</script><script>alert(1)</script>&amp;\u2028"
    row = AuditRow(stage="s", model=evil, error=None, rung="none", reasoning=None,
                   length_param=None, max_tokens=None, dropped=(), adjustments={}, cost=None)
    text = audit_page([row], registry, inputs=[])
    assert "alert(1)</script>" not in text and text.count("<script") == 3
    assert page_data(text)["cells"][0]["model"] == evil


def test_audit_json_keeps_its_keys_and_adds_the_page_fields() -> None:
    """Backwards compatible: every old key is there with its old meaning; new keys only add."""
    registry = registry_at()
    for row in audit(registry):
        data = row.to_dict()
        assert set(data) >= OLD_KEYS
        assert set(data) - OLD_KEYS == {"reasoning_change", "severity", "attempts", "routes",
                                        "details", "report_notes"}
        assert sum(data["adjustments"].values()) == len(data["details"])
        if data["attempts"]:
            assert data["attempts"][0]["request"]["model"] == row.model
            assert data["attempts"][0]["rung"] == row.rung


@pytest.mark.parametrize(("adjustments", "reasoning", "expected"), [
    ([], {"effort": "high"}, "kept"),
    ([], None, "off"),
    ([], {"enabled": False}, "off"),
    ([{"kind": "reasoning.unsupported", "requested": "low", "applied": None}], None, "dropped"),
    ([{"kind": "reasoning.effort_lowered", "requested": "high", "applied": "medium"}],
     {"effort": "medium"}, "lowered"),
    ([{"kind": "reasoning.budget_clamped", "requested": 1024, "applied": 2048}],
     {"max_tokens": 2048}, "raised"),
    ([{"kind": "reasoning.effort_mapped", "requested": "xhigh", "applied": "high"}],
     {"effort": "high"}, "lowered"),
    ([{"kind": "reasoning.cannot_disable", "requested": "none", "applied": None}],
     {"enabled": True}, "forced on"),
])
def test_reasoning_change(adjustments: list[dict[str, Any]], reasoning: Any,
                          expected: str) -> None:
    assert reasoning_change(adjustments, reasoning) == expected


def test_severity_takes_the_most_serious_class() -> None:
    assert severity_of([]) == "none"
    assert severity_of(["routing.require_parameters", "route.attempt"]) == "routing"
    assert severity_of(["routing.param_dropped", "route.attempt"]) == "params"
    assert severity_of(["schema.closed_object", "output.downgraded"]) == "output"
    assert severity_of(["schema.closed_object"], status="error") == "failed"
    assert severity_of([], status="not_applicable") == "na"


def test_the_diff_page_of_two_locks_has_the_changed_pairs_with_both_sides(
    shared_dir: Path,
) -> None:
    """Rows read back from locks (no prices) give the same cells as the audit, cost aside."""
    old_registry = registry_at(shared_dir / "models-2026-05-01.json")
    new_registry = registry_at(shared_dir / "models-2026-08-19.json")
    old, new = build_lock(old_registry), build_lock(new_registry)
    changes = diff_locks(old, new)
    new_rows = rows_from_lock(new)
    audited = {(r.stage, r.model): r.to_dict() for r in audit(new_registry)}
    for row in new_rows:
        assert {**audited[(row.stage, row.model)], "cost": None} == row.to_dict()
    sides = [{"label": "old", "text": "old", "inputs": []},
             {"label": "new", "text": "new", "inputs": []}]
    data = page_data(diff_page(changes, rows_from_lock(old), new_rows, sides=sides, pairs=14))
    assert [(c["stage"], c["model"]) for c in data["cells"]] == [
        ("deep_analysis", "deepseek/deepseek-chat-v3.1"), ("draft_reply", "openai/gpt-5.1")]
    cell = data["cells"][1]
    assert cell["old"]["reasoning"] == {"effort": "minimal"}
    assert cell["new"]["reasoning"] == {"effort": "low"}
    assert {c["path"] for c in cell["changes"]} == {"max_tokens", "reasoning.effort",
                                                    "loop.timeout_seconds"}  # fmt: skip


def test_cli_writes_the_page_and_reports_an_unwritable_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "audit.html"
    args = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
    assert main(["audit", *args, "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert "STAGE" in captured.out and f"wrote {out}" in captured.err
    assert page_data(out.read_text(encoding="utf-8"))["kind"] == "audit"
    assert main(["audit", *args, "--html", str(tmp_path / "missing" / "b.html")]) == 0
    capsys.readouterr()  # missing folders are created; a file in the way is an error
    assert main(["audit", *args, "--html", str(out / "a.html")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the page" in err and "Traceback" not in err


def test_an_input_that_is_not_a_local_file_has_no_hash(tmp_path: Path) -> None:
    assert input_file("metadata", "https://openrouter.ai/api/v1/models") == {
        "what": "metadata", "name": "https://openrouter.ai/api/v1/models", "sha256": None}
    path = tmp_path / "models.json"
    path.write_bytes(b"{}")
    assert input_file("metadata", path.as_uri())["sha256"] == hashlib.sha256(b"{}").hexdigest()


def test_an_object_shaped_like_a_pool_reference_shows_as_itself() -> None:
    """A lock edited to hold ``{"$pool": 0}`` (the shape of the page's own references)
    shows that object, not the pool's first item."""
    old = build_lock(registry_at())
    new = json.loads(json.dumps(old))
    stage, models = next(iter(new["stages"].items()))
    model, entry = next((m, e) for m, e in models.items() if e["status"] == "ok")
    entry["request"]["metadata"] = {"$pool": 0}
    changes = diff_locks(old, new)
    sides = [{"label": "old", "text": "old", "inputs": []},
             {"label": "new", "text": "new", "inputs": []}]
    data = page_data(diff_page(changes, rows_from_lock(old), rows_from_lock(new),
                               sides=sides, pairs=14))
    [cell] = data["cells"]
    assert (cell["stage"], cell["model"]) == (stage, model)
    assert cell["new"]["attempts"][0]["request"]["metadata"] == {"$pool": 0}
    assert [c["path"] for c in cell["changes"]] == ["metadata.$pool"]
    # the other references of that cell still resolve
    assert cell["new"]["attempts"][0]["request"] == {
        k: v for k, v in entry["request"].items() if k != "messages"}


def test_an_unchanged_page_is_left_as_it_is(tmp_path: Path) -> None:
    target = tmp_path / "audit.html"
    write_page("<p>one</p>\n", target)
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    write_page("<p>one</p>\n", target)
    assert target.stat().st_mtime_ns == 1_000_000_000
    write_page("<p>two</p>\n", target)
    assert target.read_text(encoding="utf-8") == "<p>two</p>\n"
    assert target.stat().st_mtime_ns != 1_000_000_000
    assert [p.name for p in tmp_path.iterdir()] == ["audit.html"]  # no temporary left
