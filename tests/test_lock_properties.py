"""Property: any stage the declarations allow gives a lock every reader accepts.

Stages are drawn (reasoning level, answer budget and cap, sampling, output ceiling and
policy, a contract from a small pool with a recursive one, caller tools or none) over
the shared snapshots: ``models-2026-08-19.json`` (one body per pair) and the
2026-05-18 models with their ``/endpoints`` (route plans). Each lock must follow the
published JSON Schema, load in the reader, diff with itself to nothing and pass
``capc lock --check`` offline. A fixed set of stages reaches every rung.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.artifacts.diff import diff_locks
from compiler.artifacts.lock import read_lock
from compiler.artifacts.lockfile import load_lock
from compiler.cli.main import main
from tests.conftest import OPENROUTER, ROOT

pytestmark = pytest.mark.skipif(not OPENROUTER.is_dir(), reason="../shared is absent")

PUBLISHED = json.loads((ROOT / "docs" / "schema" / "lock.schema.json").read_text("utf-8"))

#: The contract pool, written next to stages.yaml: flat with constraints and defaults,
#: recursive, a non-object root, and the example invoice (nested, enums, formats).
CONTRACTS = '''
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, RootModel


class Flat(BaseModel):
    label: Literal["bug", "question", "other"]
    score: float = Field(ge=0, le=1)
    note: str | None = None


class Tree(BaseModel):
    name: str = Field(min_length=1)
    children: list[Tree] = []


class Tags(RootModel[list[str]]):
    pass
'''
POOL = ["pool.py:Flat", "pool.py:Tree", "pool.py:Tags", "contracts/examples.py:Invoice", None]

#: (models list, endpoints file or None, model ids drawn from)
SNAPSHOTS = {
    "2026-08-19": ("models-2026-08-19.json", None, [
        "openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro",
        "meta-llama/llama-3.3-70b-instruct", "deepseek/deepseek-chat-v3.1", "openai/gpt-5.1",
        "mistralai/mistral-large"]),
    "2026-05-18": ("models-2026-05-18.json", "endpoints-all-2026-05-18.json", [
        "anthropic/claude-opus-4.7", "deepseek/deepseek-v4-pro", "google/gemma-4-31b-it",
        "arcee-ai/trinity-large-thinking", "openai/gpt-5.5", "qwen/qwen3.6-flash"]),
}
TOOLS = [{"name": "lookup", "description": "Find a record by key.",
          "properties": {"key": {"type": "string"}}}]
RUNGS = {"schema", "tool", "json", "prompt", "none"}


def lock_and_check(directory: Path, snapshot: str, stages: dict[str, Any]) -> dict[str, Any]:
    """Write stages.yaml, lock it, and check the lock with every reader; return it."""
    if not (directory / "contracts").exists():
        (directory / "contracts").symlink_to(ROOT / "contracts", target_is_directory=True)
        (directory / "pool.py").write_text(CONTRACTS, encoding="utf-8")
    stages_path = directory / "stages.yaml"
    stages_path.write_text(yaml.safe_dump({"stages": stages}, sort_keys=False), "utf-8")
    models, endpoints, _ = SNAPSHOTS[snapshot]
    config = ["--metadata", str(OPENROUTER / models), "--stages", str(stages_path),
              "--models", str(ROOT / "models.yaml"), "--output", str(directory / "l.json")]
    if endpoints is not None:
        config += ["--endpoints", str(OPENROUTER / endpoints)]
    assert main(["lock", *config]) == 0
    path = directory / "l.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(PUBLISHED).validate(document)
    assert read_lock(path) == document
    lock = load_lock(path)
    for stage, model in lock.pairs():
        entry = document["stages"][stage][model]
        if entry["status"] != "ok":
            continue
        first = lock.request(stage, model)
        for attempt, data in zip(first.plan, [entry, *(entry.get("attempts") or ())],
                                 strict=True):
            body = attempt.body([{"role": "user", "content": "hello"}])
            assert {k: v for k, v in body.items() if k != "messages"} == data["request"]
            shown = [] if data["instructions"] is None else [data["instructions"]]
            assert body["messages"] == [*shown, {"role": "user", "content": "hello"}]
    assert diff_locks(document, document) == []
    assert main(["lock", "--check", *config]) == 0
    return document


def rungs(document: dict[str, Any]) -> set[str]:
    """Every rung any entry or attempt of the lock reached."""
    found = set()
    for models in document["stages"].values():
        for entry in models.values():
            for data in [entry, *(entry.get("attempts") or ())]:
                if data.get("report") is not None:
                    found.add(data["report"]["rung"])
    return found


@st.composite
def stage_sets(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A snapshot and one to three stages over its models."""
    snapshot = draw(st.sampled_from(sorted(SNAPSHOTS)))
    ids = SNAPSHOTS[snapshot][2]
    stages: dict[str, Any] = {}
    for n in range(draw(st.integers(1, 3))):
        stage: dict[str, Any] = {}
        contract = draw(st.sampled_from(POOL))
        if contract is not None:
            stage["contract"] = contract
        level = draw(st.sampled_from([None, "none", "minimal", "low", "medium", "high",
                                      "xhigh", "max"]))
        if level is not None:
            stage["reasoning"] = level
        answer = draw(st.sampled_from([None, 64, 500, 4000, 32000]))
        if answer is not None:
            stage["output_tokens"] = answer
        if draw(st.booleans()):  # a cap covers the answer (a smaller one is a YAML error)
            cap = draw(st.sampled_from([256, 2000, 20000]))
            stage["max_tokens"] = cap if answer is None or cap >= answer else answer + cap
        sampling = draw(st.dictionaries(
            st.sampled_from(["temperature", "top_p", "top_k", "frequency_penalty", "seed"]),
            st.sampled_from([0, 1]), max_size=3))
        if sampling:
            stage["sampling"] = sampling
        ceiling = draw(st.sampled_from([None, "schema", "json", "prompt"]))
        policy = draw(st.sampled_from([None, "auto", "required", "compatibility"]))
        if ceiling is not None or policy is not None:
            stage["output"] = {k: v for k, v in (("ceiling", ceiling), ("policy", policy))
                               if v is not None}
        if draw(st.booleans()):
            stage["tools"] = TOOLS
        stage["models"] = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3,
                                        unique=True))
        stages[f"stage_{n}"] = stage
    return snapshot, stages


@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(stage_sets())
def test_every_drawn_lock_is_valid_readable_and_up_to_date(
    drawn: tuple[str, dict[str, Any]],
) -> None:
    """Schema-valid, read back, diffed with itself to nothing, ``--check`` exits 0."""
    snapshot, stages = drawn
    with tempfile.TemporaryDirectory(prefix="capc-prop-") as tmp:
        lock_and_check(Path(tmp), snapshot, stages)


def test_fixed_stages_reach_every_rung(tmp_path: Path) -> None:
    """The drawn stages may miss a rung; these stages reach all five across the snapshots."""
    base = {"contract": "pool.py:Tree", "output_tokens": 500}
    (tmp_path / "routed").mkdir()
    reached = rungs(lock_and_check(tmp_path / "routed", "2026-05-18", {
        "strict": {**base, "contract": "pool.py:Flat",
                   "models": ["anthropic/claude-opus-4.7", "google/gemma-4-31b-it"]},
        "prompt": {**base, "output": "prompt", "models": ["openai/gpt-5.5"]},
        "free": {"output_tokens": 200, "tools": TOOLS, "models": ["openai/gpt-5.5"]},
    }))
    (tmp_path / "first").mkdir()
    reached |= rungs(lock_and_check(tmp_path / "first", "2026-08-19", {
        "json": {**base, "contract": "pool.py:Flat", "output": "json",
                 "models": ["openai/gpt-4o-mini"]},
    }))
    assert reached == RUNGS
