"""The capc compile cache: hits need no registry, and any input change misses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import registry.resolve.resolver
from compiler.cli.main import main
from tests.conftest import ROOT

SEED = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"


@pytest.fixture
def config(tmp_path: Path) -> list[str]:
    """A copy of the example configuration, and the compile arguments that use it."""
    for name in ("models.yaml", "stages.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    return [
        "compile",
        "classify_ticket",
        "openai/gpt-4o-mini",
        "--models",
        str(tmp_path / "models.yaml"),
        "--stages",
        str(tmp_path / "stages.yaml"),
        "--metadata",
        str(SEED),
    ]


def forbid_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any registry load fail, so only a cache hit can succeed."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the registry was loaded: not a cache hit")

    monkeypatch.setattr(registry.resolve.resolver.Registry, "load", refuse)


def test_second_compile_is_served_from_cache(
    config: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same invocation twice: the second needs no registry and prints the same output."""
    assert main(config) == 0
    first = capsys.readouterr().out
    forbid_loading(monkeypatch)
    assert main(config) == 0
    assert capsys.readouterr().out == first
    assert main([*config, "--json"]) == 0
    assert '"request"' in capsys.readouterr().out


@pytest.mark.parametrize("edit", ["models", "contract"])
def test_changed_input_misses(
    config: list[str], tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing models.yaml or the contract module invalidates the cached result."""
    assert main(config) == 0
    target = tmp_path / ("models.yaml" if edit == "models" else "contracts/examples.py")
    target.write_text(target.read_text() + "\n# edited\n")
    forbid_loading(monkeypatch)
    with pytest.raises(AssertionError, match="not a cache hit"):
        main(config)


def test_no_cache_flag_and_policy_stages_bypass(
    config: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-cache never reads the cache; a stage with a policy is never stored."""
    assert main(config) == 0
    forbid_loading(monkeypatch)
    with pytest.raises(AssertionError, match="not a cache hit"):
        main([*config, "--no-cache"])
    monkeypatch.undo()
    stages = tmp_path / "stages.yaml"
    stages.write_text(
        stages.read_text().replace(
            "    output: schema\n", "    output: schema\n    policy:\n      '*': report\n", 1
        )
    )
    assert main(config) == 0
    forbid_loading(monkeypatch)
    with pytest.raises(AssertionError, match="not a cache hit"):
        main(config)


def test_default_metadata_source_is_not_cached(
    config: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a local --metadata file the answer may change, so nothing is cached."""
    argv = config[:-2]
    assert main(argv) == 0
    forbid_loading(monkeypatch)
    with pytest.raises(AssertionError, match="not a cache hit"):
        main(argv)


_CODE_EDIT_WORKER = """
import json, sys
from pathlib import Path
import compiler
from compiler.cli.main import main

code, cache, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
argv, edits = json.loads(sys.argv[4]), json.loads(sys.argv[5])
assert Path(compiler.__file__).is_relative_to(code), compiler.__file__

def entries():
    return len(list((cache / "compiled").glob("*.json")))

counts = {}
main(argv)
main(argv)
counts["unchanged"] = entries()
for path in edits:
    with open(code / path, "a", encoding="utf-8") as fh:
        fh.write("\\n" if path.endswith(".json") else "\\n# edited\\n")
    main(argv)
    counts[path] = entries()
out.write_text(json.dumps(counts))
"""


def test_an_edit_in_any_subfolder_of_the_code_misses(config: list[str], tmp_path: Path) -> None:
    """The compile cache keys on every module and data file of both packages, subfolders
    included: editing one file in each folder makes the next compile a miss (a new entry),
    while the same code twice is a hit (no new entry)."""
    code = tmp_path / "code"
    for package in ("compiler", "registry"):
        shutil.copytree(
            ROOT / package, code / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    edits = []
    for folder in sorted({p.parent for p in code.rglob("*") if p.suffix in (".py", ".json")}):
        files = sorted(p for p in folder.iterdir() if p.suffix in (".py", ".json"))
        chosen = next((p for p in files if p.name != "__init__.py"), files[0])
        edits.append(chosen.relative_to(code).as_posix())
    assert {"compiler/passes", "registry/sources", "registry/data"} <= {
        edit.rpartition("/")[0] for edit in edits
    }
    cache, out = tmp_path / "cache", tmp_path / "counts.json"
    env = {**os.environ, "PYTHONPATH": str(code), "CAPC_CACHE_DIR": str(cache)}
    subprocess.run(
        [sys.executable, "-P", "-c", _CODE_EDIT_WORKER, str(code), str(cache), str(out),
         json.dumps(config), json.dumps(edits)],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    counts = json.loads(out.read_text())
    assert counts == {"unchanged": 1, **{edit: 2 + i for i, edit in enumerate(edits)}}
