"""A lock is a pure function of its inputs: touch, a day later and online vs offline change
nothing; a change to any one input fails ``lock --check`` naming it; writing follows
symlinks, creates parents, refuses non-regular targets, and ``-`` is standard output."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from compiler.artifacts.compile_cache import contract_files
from compiler.artifacts.lock import LockFileError, build_lock, dump_lock, write_lock
from compiler.cli.main import main
from registry.metadata import catalog as catalog_module
from registry.metadata.catalog import Catalog, load_catalog
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

HELPER = '"""Shared fields."""\n\nfrom pydantic import BaseModel\n\n\nclass Base(BaseModel):\n' \
    '    """A base."""\n\n    label: str\n'
CONTRACT = '"""A contract importing a local helper."""\n\nfrom {helper} import Base\n\n\n' \
    'class Thing(Base):\n    """A thing."""\n\n    size: int = 1\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
            ) -> dict[str, Path]:
    """A stages.yaml whose contract imports a local helper module, plus pinned metadata
    and endpoints files; every path the lock depends on."""
    if not OPENROUTER.is_dir():
        pytest.skip("../shared/data/openrouter is absent")
    tag = "".join(c if c.isalnum() else "_" for c in request.node.name)
    helper, contract = f"capc_helper_{tag}", f"capc_contract_{tag}"
    (tmp_path / f"{helper}.py").write_text(HELPER)
    (tmp_path / f"{contract}.py").write_text(CONTRACT.format(helper=helper))
    monkeypatch.syspath_prepend(str(tmp_path))
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    shutil.copy(ROOT / "models.yaml", tmp_path / "models.yaml")
    stages = (ROOT / "stages.yaml").read_text() + (
        f"\n  thing:\n    contract: {contract}:Thing\n    output: schema\n"
        "    models: [openai/gpt-4o-mini]\n")
    (tmp_path / "stages.yaml").write_text(stages)
    shutil.copy(OPENROUTER / "models-2026-05-18.json", tmp_path / "models-2026-05-18.json")
    shutil.copy(OPENROUTER / "endpoints-all-2026-05-18.json", tmp_path / "endpoints.json")
    return {"models": tmp_path / "models.yaml", "stages": tmp_path / "stages.yaml",
            "metadata": tmp_path / "models-2026-05-18.json",
            "endpoints": tmp_path / "endpoints.json", "helper": tmp_path / f"{helper}.py",
            "contract": tmp_path / f"{contract}.py", "lock": tmp_path / "capc.lock.json"}


def lock_args(p: dict[str, Path], *extra: str) -> list[str]:
    return ["lock", "--models", str(p["models"]), "--stages", str(p["stages"]),
            "--metadata", str(p["metadata"]), "--endpoints", str(p["endpoints"]),
            "--output", str(p["lock"]), *extra]


def test_inputs_are_recorded_with_hashes(project: dict[str, Path]) -> None:
    """Every input by file name and SHA-256, the helper module included."""
    assert main(lock_args(project)) == 0
    inputs = json.loads(project["lock"].read_text())["inputs"]
    assert inputs["metadata"]["source"] == "models-2026-05-18.json"
    assert inputs["endpoints"]["source"] == "endpoints.json"
    assert {inputs["models_yaml"]["source"], inputs["stages_yaml"]["source"]} == {
        "models.yaml", "stages.yaml"}
    assert set(inputs["contracts"]) == {"contracts/examples.py", project["helper"].name,
                                        project["contract"].name}
    assert {p.name for p in contract_files(f"{project['contract'].stem}:Thing",
                                           project["stages"].parent)} == {
        project["helper"].name, project["contract"].name}


def test_touch_and_offline_change_nothing(
    project: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--check passes after a touch of every input, and with the network allowed (to a
    port nobody listens on: a request would change the endpoint data or fail)."""
    assert main(lock_args(project)) == 0
    later = datetime.now().timestamp() + 86400
    for key in ("models", "stages", "metadata", "endpoints", "helper", "contract"):
        os.utime(project[key], (later, later))
    assert main(lock_args(project, "--check")) == 0
    monkeypatch.delenv("CAPC_OFFLINE", raising=False)
    monkeypatch.setenv("CAPC_BASE_URL", "http://127.0.0.1:9/api/v1")
    assert main(lock_args(project, "--check")) == 0


@pytest.mark.parametrize(("key", "named"), [
    ("models", "models_yaml:"), ("stages", "stages_yaml:"), ("metadata", "metadata:"),
    ("endpoints", "endpoints:"), ("helper", "contract module capc_helper_"),
])
def test_one_input_changed_is_named(
    project: dict[str, Path], capsys: pytest.CaptureFixture[str], key: str, named: str
) -> None:
    """Appending a harmless byte to any one input fails --check and names that input."""
    assert main(lock_args(project)) == 0
    capsys.readouterr()
    path = project[key]
    text = path.read_text()
    path.write_text(text.rstrip() + ("\n\n" if key != "metadata" else "\n"))
    if key in ("metadata", "endpoints"):
        path.write_text(json.dumps(json.loads(text), indent=1))
    assert main(lock_args(project, "--check")) == 1
    err = capsys.readouterr().err
    assert "changed input(s): " in err and named in err, err


def test_a_day_later_and_stale_age_leave_the_lock_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stale catalog's age (the clock) is not in the lock: a day later it is byte-equal."""
    fresh = load_catalog(OPENROUTER / "models-2026-05-18.json") if OPENROUTER.is_dir() else None
    if fresh is None:
        pytest.skip("../shared/data/openrouter is absent")
    stale = Catalog(models=fresh.models, source="https://openrouter.ai/api/v1/models",
                    fetched_at="2026-05-18T10:00:00+00:00", origin="stale-cache", stale=True,
                    note="fetch failed; serving the cached copy, stale: 3 days old")

    def lock_text(days: int) -> str:
        real = datetime

        class Later(real):
            @classmethod
            def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
                return real.now(tz) + timedelta(days=days)  # type: ignore[arg-type]

        monkeypatch.setattr(catalog_module, "datetime", Later)
        from registry.declarations.files import load_models_file, load_stages_file

        registry = Registry(catalog=stale, models_file=load_models_file(ROOT / "models.yaml"),
                            stages_file=load_stages_file(ROOT / "stages.yaml"))
        return dump_lock(build_lock(registry, coverage="first"))

    today, tomorrow = lock_text(0), lock_text(1)
    assert today == tomorrow
    assert "days old" not in today and "fetch failed" not in today


def test_writing_follows_symlinks_and_refuses_non_regular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output through a symlink updates its target; parents are created; a FIFO is
    refused; '-' prints the lock."""
    real = tmp_path / "real" / "capc.lock.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert write_lock("new\n", link) == real.resolve()
    assert link.is_symlink() and real.read_text() == "new\n"
    deep = tmp_path / "a" / "b" / "capc.lock.json"
    write_lock("x\n", deep)
    assert deep.read_text() == "x\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LockFileError, match="not a regular file"):
        write_lock("x\n", fifo)
    stages = str(ROOT / "stages.yaml")
    assert main(["lock", "--stages", stages, "--coverage", "first", "--output", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == 2
    assert main(["lock", "--stages", stages, "--output", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_local_part_of_an_installed_extend_path_package_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from pkg import mod`` where ``pkg`` is installed elsewhere but extends its
    ``__path__`` (pkgutil) to a local ``pkg/`` folder: ``pkg/mod.py`` is what Python
    imports, so it is recorded (an edit to it must change the lock and the compile
    cache's key); a local namespace folder's module is recorded too."""
    from compiler.artifacts.lock_inputs import contract_modules

    installed = tmp_path / "site"
    (installed / "acmex").mkdir(parents=True)
    (installed / "acmex" / "__init__.py").write_text(
        "from pkgutil import extend_path\n__path__ = extend_path(__path__, __name__)\n")
    project = tmp_path / "project"
    (project / "acmex").mkdir(parents=True)
    (project / "acmex" / "local_mod.py").write_text("X = 1\n")
    (project / "ns").mkdir()
    (project / "ns" / "mod.py").write_text("Y = 2\n")
    (project / "c.py").write_text("from acmex import local_mod\nfrom ns import mod\n")
    monkeypatch.syspath_prepend(str(installed))
    from compiler.artifacts import lock_inputs

    excluded = (*lock_inputs._excluded_prefixes(), f"{installed.resolve()}/")
    monkeypatch.setattr(lock_inputs, "_excluded_prefixes", lambda: excluded)  # installed
    found = contract_modules("c.py:C", project)
    assert (project / "acmex" / "local_mod.py").resolve() in found
    assert (project / "ns" / "mod.py").resolve() in found
