"""capc refresh / models / cache: tables, JSON, faults without tracebacks, no key leaks."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.sources.settings import load_settings
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply
from tests.test_sources import EP_BODY, EP_PATH, FAULTS, FULL, MODELS, SEED, cache_copy

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
KEY = "sk-or-v1-never-leak-7f3a9c21e8d04b56"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run capc in-process and return (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def notes(err: str) -> list[str]:
    """The ``capc: note:`` lines of ``err``, without the prefix (refresh, lock and cache
    clear print their status there: stdout is for data)."""
    return [line.removeprefix("capc: note: ") for line in err.splitlines()
            if line.startswith("capc: note: ")]  # fmt: skip


def errors(err: str) -> list[str]:
    """The lines of ``err`` that are not notes (coloured on a terminal or not)."""
    return [line for line in err.splitlines()
            if not re.sub(r"\x1b\[[0-9;]*m", "", line).startswith("capc: note: ")]  # fmt: skip


@pytest.fixture
def online(openrouter_server: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch) -> FakeOpenRouter:
    """Point capc at the loopback server with tiny timeouts and no waits between attempts."""
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    monkeypatch.setenv("CAPC_BASE_URL", openrouter_server.base_url)
    monkeypatch.setenv("CAPC_READ_TIMEOUT", "0.2")
    monkeypatch.setenv("CAPC_BACKOFF", "0")
    monkeypatch.setenv("CAPC_RETRY_AFTER_CAP", "0")
    monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "4")
    return openrouter_server


# -- capc models ----------------------------------------------------------------------


def test_models_table(capsys: pytest.CaptureFixture[str]) -> None:
    """A table with id, context, max output, structured outputs and efforts, then a footer."""
    code, out, err = run(capsys, "models", "--search", "gpt-5.5")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID", "CONTEXT", "MAX", "OUTPUT", "STRUCTURED", "REASONING", "EFFORTS"
    ]
    row = lines[1].split()
    assert row[0] == "openai/gpt-5.5" and row[3] == "yes"
    assert row[4] == "xhigh,high,medium,low,none"
    assert lines[-1] == f"1 of {len(SEED)} models; metadata: bundled seed (as of 2026-08-19)"
    assert err.startswith("capc: note: offline (CAPC_OFFLINE)") and err.count("\n") == 1


def test_models_supports_filter_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    """--supports keeps models listing every parameter; --json prints one object."""
    code, out, _ = run(capsys, "models", "--supports", "structured_outputs", "reasoning", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["metadata"]["origin"] == "seed"
    ids = [m["id"] for m in payload["models"]]
    assert ids and len(ids) < len(SEED)
    for model in payload["models"]:
        assert {"structured_outputs", "reasoning"} <= set(model["supported_parameters"])
        assert model["structured_outputs"] is True
    assert set(payload["models"][0]) >= {"id", "context_length", "max_output_tokens"}


def test_models_unknown_parameter_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --supports value exits 2 with one line and suggestions."""
    code, out, err = run(capsys, "models", "--supports", "strucured_outputs")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "'structured_outputs'" in err


def test_models_from_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    """--metadata FILE lists that file, named with its date; no note."""
    code, out, err = run(capsys, "models", "--metadata", str(SEED_MODELS), "--search", "claude")
    assert code == 0 and err == ""
    assert "seed-models-2026-08-19.json (file, as of 2026-08-19)" in out.splitlines()[-1]


# -- capc refresh and capc cache ------------------------------------------------------


def test_refresh_then_cache_info_and_clear(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    """refresh fetches into the cache; cache info lists it; cache clear empties it."""
    online.script(MODELS, Reply(FULL))
    online.script(EP_PATH, Reply(EP_BODY))
    code, out, err = run(capsys, "refresh", "--endpoints", "openai/gpt-4o")
    assert (code, out, errors(err)) == (0, "", [])
    first, second = notes(err)
    shown = online.base_url.removeprefix("http://")
    assert first.startswith(f"models: fetched {len(SEED)} models from {shown}/models (fetch, ")
    assert second == "endpoints of openai/gpt-4o: fetched 2 endpoints"
    code, out, _ = run(capsys, "cache", "info", "--json")
    info = json.loads(out)
    assert code == 0 and info["exists"] and info["bytes"] > 0
    assert [(e["kind"], e["count"], e["fresh"]) for e in info["entries"]] == [
        ("models", len(SEED), True),
        ("endpoints", 2, True),
    ]
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and "fresh" in out and online.base_url.split("//")[1] in out
    code, out, err = run(capsys, "cache", "clear")
    assert (code, out) == (0, "") and err.startswith("capc: note: removed 2 entries from ")
    assert json.loads(run(capsys, "cache", "info", "--json")[1])["entries"] == []


def test_refresh_offline_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    """With CAPC_OFFLINE=1 refresh refuses in one line, exit 2."""
    code, _, err = run(capsys, "refresh")
    assert code == 2 and err == "capc: error: refresh needs the network, but CAPC_OFFLINE is set\n"


def test_cache_info_without_a_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cache directory yet: said plainly, nothing created."""
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path / "none"))
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and out == f"no cache at {tmp_path / 'none'}\n"
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_refresh_faults_end_in_good_data_and_one_line(
    fault: str, online: FakeOpenRouter, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every fault: fresh data (exit 0), or the previous copy kept (exit 1) and one line."""
    script, phrase = FAULTS[fault]
    online.script(MODELS, *script)
    if fault in ("read-timeout", "connection-reset"):
        monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "2")
    cache_copy(load_settings(), FULL, days=3)
    code, out, err = run(capsys, "refresh")
    assert "Traceback" not in out + err
    assert out == ""
    if phrase is None:
        assert (code, errors(err)) == (0, [])
        assert notes(err)[0].startswith(f"models: fetched {len(SEED) - 1} models")
        return
    assert code == 1
    assert notes(err)[0].startswith(f"models: kept {len(SEED)} models from ")
    err = "\n".join(errors(err)) + "\n"
    assert err.count("\n") == 1 and err.startswith("capc: error: refresh failed: ")
    assert phrase in err and "serving the cached copy from" in err and "3 days old" in err


def test_models_during_a_fault_serve_the_stale_copy(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    """capc models with a failing upstream lists the stale copy and says so in one line."""
    online.script(MODELS, Reply(status=503))
    cache_copy(load_settings(), FULL, days=3)
    code, out, err = run(capsys, "models", "--search", "gpt-4o-mini")
    assert code == 0
    assert "stale-cache" in out.splitlines()[-1] and "stale, 3 days old" in out.splitlines()[-1]
    assert err.count("\n") == 1 and "HTTP 503 after 4 attempts" in err


def test_refresh_without_cache_falls_back_to_seed(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    """No cache and a failing upstream: the seed is kept, exit 1, one line per failure."""
    online.script(MODELS, Reply(status=500))
    code, out, err = run(capsys, "refresh", "--endpoints", "openai/gpt-4o", "--json")
    payload = json.loads(out)
    assert code == 1 and payload["ok"] is False
    assert payload["models"]["origin"] == "seed" and payload["models"]["stale"] is True
    assert payload["endpoints"][0]["count"] is None
    lines = err.splitlines()
    assert len(lines) == 2 and "bundled seed" in lines[0] and "none used" in lines[1]


def test_progress_only_on_a_terminal(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request is a progress step on a TTY (the spinner's line), never in --json
    mode (tests/test_cli_terminal.py runs the spinner itself in a pseudo-terminal)."""
    online.script(MODELS, Reply(status=500), Reply(FULL))
    steps = _progress_steps(monkeypatch)
    code, _, err = run(capsys, "refresh")
    assert code == 0 and errors(err) == []
    assert steps == [
        f"GET {online.base_url}/models",
        f"GET {online.base_url}/models (attempt 2 of 4)",
    ]
    steps.clear()
    code, _, err = run(capsys, "refresh", "--json")
    assert (code, err, steps) == (0, "", [])


def _progress_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make stderr look like a terminal and record each progress step of a wait (the
    spinner itself never starts: its delay is an hour)."""
    from compiler.cli import terminal

    steps: list[str] = []
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(terminal, "PROGRESS_DELAY", 3600.0)
    update = terminal.Wait.__call__
    monkeypatch.setattr(terminal.Wait, "__call__",
                        lambda self, line: (steps.append(line), update(self, line))[1])
    return steps


def _endpoints_of(model_id: str) -> tuple[str, dict[str, object]]:
    """The loopback path of a model's endpoints and a one-endpoint body for it."""
    body = {
        "data": {
            "id": model_id,
            "endpoints": [{"tag": "p", "provider_name": "P", "supported_parameters": ["seed"]}],
        }
    }
    return f"/api/v1/models/{model_id}/endpoints", body


def _stages_file(directory: Path, *models: str) -> Path:
    """Write a stages.yaml whose one stage names ``models``; return its path."""
    path = directory / "stages.yaml"
    listed = ", ".join(models)
    path.write_text(f"stages:\n  s:\n    models: [{listed}]\n", encoding="utf-8")
    return path


def test_refresh_endpoints_alone_refreshes_the_stages_models(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--endpoints without MODEL: every model of ./stages.yaml (or --stages), in file order."""
    online.script(MODELS, Reply(FULL))
    for model_id in ("x/one", "x/two"):
        path, body = _endpoints_of(model_id)
        online.script(path, Reply(body))
    _stages_file(tmp_path, "x/two", "x/one")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "refresh", "--endpoints", "--json")
    payload = json.loads(out)
    assert (code, err, payload["ok"]) == (0, "", True)
    assert [(r["model"], r["origin"], r["count"]) for r in payload["endpoints"]] == [
        ("x/two", "fetch", 1), ("x/one", "fetch", 1)
    ]
    assert (payload["endpoints_requested"], payload["endpoints_fetched"]) == (2, 2)
    (tmp_path / "other").mkdir()
    other = _stages_file(tmp_path / "other", "x/one")
    code, out, err = run(capsys, "refresh", "--endpoints", "--stages", str(other))
    assert (code, out, errors(err)) == (0, "", [])
    assert notes(err)[1:] == ["endpoints of x/one: fetched 1 endpoints"]
    assert online.hits(_endpoints_of("x/one")[0]) == 2
    assert online.hits(_endpoints_of("x/two")[0]) == 1


@pytest.mark.parametrize(
    ("stages", "phrase"),
    [(None, "no ./stages.yaml; give --stages PATH"), ("stages: {s: {}}\n", "names no model")],
)
def test_refresh_endpoints_alone_needs_stages_that_name_models(
    stages: str | None, phrase: str, online: FakeOpenRouter,
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No stages file, or one naming no model: exit 2, one line, nothing fetched."""
    if stages is not None:
        (tmp_path / "stages.yaml").write_text(stages, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "refresh", "--endpoints")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("capc: error: ") and phrase in err
    assert online.requests == []


def test_refresh_all_endpoints_covers_the_refreshed_list(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--all-endpoints: every model of the fetched list, after the named ones, each once; a
    model whose fetch fails is one stderr line and exit 1."""
    monkeypatch.setenv("CAPC_MIN_MODELS", "1")  # a 3-model list with no cached copy
    ids = [m["id"] for m in SEED[:3]]
    online.script(MODELS, Reply({"data": SEED[:3]}))
    for model_id in ids[:2]:
        path, body = _endpoints_of(model_id)
        online.script(path, Reply(body))
    code, out, err = run(capsys, "refresh", "--endpoints", ids[1], "--all-endpoints")
    assert code == 1 and out == ""
    lines = notes(err)
    err = "\n".join(errors(err)) + "\n"
    assert lines[0].startswith("models: fetched 3 models from ")
    assert lines[1:] == [
        f"endpoints of {ids[1]}: fetched 1 endpoints",
        f"endpoints of {ids[0]}: fetched 1 endpoints",
        "endpoints: fetched for 2 of 3 models",
    ]
    assert err.count("\n") == 1 and ids[2] in err
    assert err.startswith("capc: error: refresh failed: ")
    assert [online.hits(_endpoints_of(i)[0]) for i in ids] == [1, 1, 1]
    code, out, _ = run(capsys, "refresh", "--all-endpoints", "--json")
    payload = json.loads(out)
    assert code == 1 and payload["ok"] is False
    assert [r["model"] for r in payload["endpoints"]] == ids
    assert (payload["endpoints_requested"], payload["endpoints_fetched"]) == (3, 2)


def test_refresh_endpoints_progress_counts_on_a_terminal(
    online: FakeOpenRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a TTY each model gets a counter step before its request; never with --json."""
    online.script(MODELS, Reply(FULL))
    for model_id in ("x/one", "x/two"):
        path, body = _endpoints_of(model_id)
        online.script(path, Reply(body))
    steps = _progress_steps(monkeypatch)
    code, _, err = run(capsys, "refresh", "--endpoints", "x/one", "x/two")
    assert code == 0 and errors(err) == []
    assert steps == [
        f"GET {online.base_url}/models",
        "endpoints 1/2 x/one",
        f"GET {online.base_url}/models/x/one/endpoints",
        "endpoints 2/2 x/two",
        f"GET {online.base_url}/models/x/two/endpoints",
    ]
    steps.clear()
    code, _, err = run(capsys, "refresh", "--endpoints", "x/one", "--json")
    assert (code, err, steps) == (0, "", [])


def test_refresh_failure_in_a_real_process_has_no_traceback(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """The installed entry point: one stderr line, exit 1, even with nothing listening."""
    env = dict(os.environ)
    env.update(
        CAPC_OFFLINE="0",
        CAPC_BASE_URL="http://127.0.0.1:9/api/v1",
        CAPC_MAX_ATTEMPTS="2",
        CAPC_BACKOFF="0",
        CAPC_CACHE_DIR=str(tmp_path / "c"),
    )
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "refresh"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
    )
    assert result.returncode == 1
    assert errors(result.stderr) == [
        "capc: error: refresh failed: fetch failed (cannot connect after 2 attempts); "
        "no usable cached copy: until a refresh succeeds, commands use the bundled seed "
        "(as of 2026-08-19)"
    ]


# -- the API key never leaks ----------------------------------------------------------


def test_api_key_never_leaks(
    online: FakeOpenRouter,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key is sent as the Bearer header, and is absent from cache, reports, output, logs."""
    monkeypatch.setenv("CAPC_API_KEY", KEY)
    online.script(MODELS, Reply(FULL))
    online.script(EP_PATH, Reply(status=500), Reply(EP_BODY))
    online.script("/api/v1/models/openai/missing/endpoints", Reply(status=401))
    outputs: list[str] = []
    with caplog.at_level(logging.DEBUG):
        for argv in (
            ["refresh", "--endpoints", "openai/gpt-4o", "openai/missing"],
            ["refresh", "--json", "--endpoints", "openai/missing"],
            ["models", "--json"],
            ["models", "--search", "gpt"],
            ["compile", "extract_invoice", "openai/gpt-4o-mini", *EXAMPLE, "--json"],
            ["compile", "extract_invoice", "openai/gpt-4o-mini", *EXAMPLE],
            ["cache", "info", "--json"],
            ["cache", "info"],
        ):
            _, out, err = run(capsys, *argv)
            outputs += [out, err]
        online.script(MODELS, Reply(status=503))
        from registry.sources.load import load_metadata

        load_metadata(refresh=True)  # a failure, logged with its note
    shown = online.base_url.removeprefix("http://")
    assert json.loads(outputs[8])["report"]["metadata"].startswith(f"{shown}/models (cache, ")
    sent = [h.get("Authorization") for _, h in online.requests]
    assert sent and all(h == f"Bearer {KEY}" for h in sent)
    for text in outputs:
        assert KEY not in text
    assert caplog.records, "logs were captured"
    for record in caplog.records:
        assert KEY not in record.getMessage()
        assert KEY not in str(record.args)
    cache_dir = load_settings().cache_dir
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert any(p.name == "cache.db" for p in files)
    secret = KEY.encode()
    for path in files:
        assert secret not in path.read_bytes(), path
