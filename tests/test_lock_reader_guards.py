"""The lock reader trusts no edited lock (issue 22, round 3).

A contract whose stored schema does not hash to its key is refused on load
(LockFileError naming the contract); a python-re contract whose pattern the python-re
rule refuses is never matched with Python's ``re`` (ContractError naming the pointer);
no catastrophic pattern is ever run here, only the refusals are asserted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.lock import LockFileError, build_lock, dump_lock
from compiler.artifacts.lockfile import load_lock
from compiler.errors import ContractError, ReplyValidationError
from compiler.reply.schema_check import pattern_matches
from compiler.schema.frozen_json import canonical_sha256
from registry.resolve.resolver import Registry
from tests.conftest import ROOT, SEED_MODELS

CONTRACT = '''
from pydantic import BaseModel, ConfigDict, Field


class Rx(BaseModel):
    model_config = ConfigDict(regex_engine="python-re")
    tag: str = Field(pattern=r"^[a-z]+$")
'''
STAGES = """stages:
  rx: {contract: "cts.py:Rx", output_tokens: 100, output: schema, models: [openai/gpt-4o-mini]}
"""


@pytest.fixture(scope="module")
def lock_document(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("lockrx")
    (root / "cts.py").write_text(CONTRACT, encoding="utf-8")
    (root / "stages.yaml").write_text(STAGES, encoding="utf-8")
    registry = Registry.load(metadata=SEED_MODELS, models=ROOT / "models.yaml",
                             stages=root / "stages.yaml")
    return root, json.loads(dump_lock(build_lock(registry)))


def _rekey(document: dict[str, Any], edit: Any) -> dict[str, Any]:
    """Edit the one contract's schema and give it the key its new schema hashes to."""
    [(old, record)] = document["contracts"].items()
    edit(record["schema"])
    new = canonical_sha256(record["schema"])
    rekeyed: dict[str, Any] = json.loads(json.dumps(document).replace(old, new))
    return rekeyed


def _write(root: Path, document: dict[str, Any], name: str) -> Path:
    path = root / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _set_pattern(pattern: str) -> Any:
    def edit(schema: dict[str, Any]) -> None:
        schema["properties"]["tag"]["pattern"] = pattern
    return edit


def test_the_untouched_lock_reads_replies(lock_document: tuple[Path, dict[str, Any]]) -> None:
    root, document = lock_document
    req = load_lock(_write(root, document, "ok.lock.json")).request("rx", "openai/gpt-4o-mini")
    assert req.parse_reply('{"tag": "abc"}', contract=False) == {"tag": "abc"}
    with pytest.raises(ReplyValidationError):
        req.parse_reply('{"tag": "ABC"}', contract=False)


def test_a_schema_that_does_not_hash_to_its_key_is_refused_on_load(
    lock_document: tuple[Path, dict[str, Any]]
) -> None:
    root, document = lock_document
    edited = json.loads(json.dumps(document))
    [record] = edited["contracts"].values()
    record["schema"]["properties"]["tag"]["pattern"] = "^(a+)+$"  # key left as it was
    with pytest.raises(LockFileError, match=r"contract 'Rx' .*does not hash to its key"):
        load_lock(_write(root, edited, "edited.lock.json"))


@pytest.mark.parametrize("pattern", ["^(a+)+$", "^(a|aa)+$", "^" + "[a-z]?" * 30 + "$"])
def test_a_rekeyed_catastrophic_python_re_pattern_is_never_run(
    lock_document: tuple[Path, dict[str, Any]], pattern: str
) -> None:
    """The key matches (re-hashed by hand), so the rule itself refuses the pattern, on
    both paths (contract=False, and contract=True whose type no longer hashes the same)."""
    root, document = lock_document
    edited = _rekey(json.loads(json.dumps(document)), _set_pattern(pattern))
    req = load_lock(_write(root, edited, "rekeyed.lock.json")).request(
        "rx", "openai/gpt-4o-mini")
    for contract in (False, True):
        with pytest.raises(ContractError, match=r"python-re.*/properties/tag/pattern: "):
            req.parse_reply(json.dumps({"tag": "a" * 40 + "!"}), contract=contract)


def test_pattern_matches_never_runs_a_refused_pattern_with_re() -> None:
    """Under python-re a refused pattern is matched with rust-regex when it compiles there,
    else refused; a back-reference (rust-regex cannot) is refused."""
    assert pattern_matches(r"^(a+)+$", "a" * 50 + "!", python_re=True) is False
    assert pattern_matches(r"^(a+)+$", "aaa", python_re=True) is True
    with pytest.raises(ContractError, match="back-reference"):
        pattern_matches(r"^(a+)\1$", "a" * 50 + "!", python_re=True)
