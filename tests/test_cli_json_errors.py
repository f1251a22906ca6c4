"""``--json`` is uniform (issue 21): every command that takes ``--json`` prints an error
as one JSON object on stdout (``{"ok": false, "error": {...}}``; ``check``: ``{"ok":
false, "problems": [...]}``) and as one ``capc: error:`` line on stderr, with the exit
code of text mode. One table, command x failure class, each case a real ``capc``
process (two at a time: the table is about fifty processes)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import ROOT, SEED_MODELS

CAPC = [sys.executable, "-m", "compiler"]

#: command -> its argv before the failure's options ({reply} is a saved response file).
COMMANDS: dict[str, list[str]] = {
    "compile": ["compile", "extract_invoice", "openai/gpt-4o-mini", "--no-cache"],
    "explain": ["explain", "extract_invoice", "openai/gpt-4o-mini"],
    "routes": ["routes", "extract_invoice", "openai/gpt-4o-mini"],
    "reply": ["reply", "extract_invoice", "openai/gpt-4o-mini", "{reply}"],
    "show": ["show", "openai/gpt-4o-mini"],
    "check": ["check"],
    "lock": ["lock", "--output", "{tmp}/capc.lock.json"],
    "audit": ["audit"],
    "models": ["models"],
    "diff": ["diff", str(SEED_MODELS), str(SEED_MODELS)],
    "refresh": ["refresh", "--endpoints"],  # the models of --stages
    "cache": ["cache", "info"],
}

#: failure class -> (what replaces or extends the argv, the exit code, the error kind).
#: ``bad_yaml`` passes --models; the name arguments are replaced for unknown names.
FAILURES = {
    "bad_yaml": (2, "declaration"),
    "unknown_model": (2, "unknown_model"),
    "unknown_stage": (2, "unknown_stage"),
    "bad_metadata": (2, "metadata"),
    "unreachable_url": (1, "source_unavailable"),
    "bad_cache_dir": (2, "cache"),
}

#: Which failure classes each command can meet (an unknown name needs a name argument).
_ALL = set(FAILURES) - {"bad_cache_dir"}  # only cache info must open the metadata cache
APPLIES = {
    "compile": _ALL,
    "explain": _ALL,
    "routes": _ALL,
    "reply": _ALL,
    "show": _ALL,
    "audit": {"bad_yaml", "unknown_stage", "bad_metadata", "unreachable_url"},
    "check": {"bad_yaml", "bad_metadata", "unreachable_url"},
    "lock": {"bad_yaml", "bad_metadata", "unreachable_url"},
    "models": {"bad_yaml", "bad_metadata", "unreachable_url"},
    "diff": {"bad_yaml", "bad_metadata", "unreachable_url"},
    "refresh": {"bad_yaml", "unreachable_url"},  # its URL is CAPC_BASE_URL's
    "cache": {"bad_cache_dir"},
}

#: Where a case's error kind differs from its class's: diff cannot tell a broken models
#: list file from a broken lock file, so it says it is neither (kind "input").
KINDS = {("diff", "bad_metadata"): "input", ("refresh", "unreachable_url"): "refresh_failed"}

CASES = [(command, failure) for command in COMMANDS for failure in FAILURES
         if failure in APPLIES[command]]  # fmt: skip


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound by this
    process and never listened on, so no other process can take it meanwhile (a port
    released after binding could be reused by another test's server)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _argv(command: str, failure: str, tmp: Path, url: str) -> list[str]:
    argv = [a.replace("{tmp}", str(tmp)).replace("{reply}", str(tmp / "reply.json"))
            for a in COMMANDS[command]]  # fmt: skip
    if command == "cache":  # CAPC_CACHE_DIR is a file: see _env_for
        return [*argv, "--json"]
    if command == "refresh":  # bad_yaml: the stages --endpoints reads; else the list only
        if failure != "bad_yaml":
            return ["refresh", "--json"]
        return [*argv, "--stages", str(tmp / "bad-stages.yaml"), "--json"]
    models, metadata = str(ROOT / "models.yaml"), str(SEED_MODELS)
    if failure == "bad_yaml":
        models = str(tmp / "bad.yaml")
    elif failure == "unknown_model":
        argv[2 if command != "show" else 1] = "nope/not-a-model"
    elif failure == "unknown_stage":
        if command in ("show", "audit"):
            argv += ["--stage", "no_such_stage"]
        else:
            argv[1] = "no_such_stage"
    elif failure == "bad_metadata":
        metadata = str(tmp / "bad-metadata.json")
    elif failure == "unreachable_url":
        metadata = url
    if command == "diff":  # OLD is the metadata; diff has no --metadata
        argv[1] = metadata
        return [*argv, "--models", models, "--stages", str(ROOT / "stages.yaml"), "--json"]
    stages = [] if command == "models" else ["--stages", str(ROOT / "stages.yaml")]
    return [*argv, "--models", models, *stages, "--metadata", metadata, "--json"]


def _env_for(command: str, failure: str, env: dict[str, str], tmp: Path,
             url: str) -> dict[str, str]:  # fmt: skip
    """refresh fetches from CAPC_BASE_URL; cache info fails on a cache dir that is a file."""
    if command == "refresh" and failure == "unreachable_url":
        return {**env, "CAPC_BASE_URL": url.removesuffix("/models")}
    if failure == "bad_cache_dir":
        return {**env, "CAPC_CACHE_DIR": str(tmp / "reply.json")}
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CAPC, *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, check=False)  # fmt: skip


def test_every_command_reports_every_failure_as_json(tmp_path: Path, closed_port: int) -> None:
    """stdout is one JSON object with ok false, stderr one ``capc: error:`` line, no
    traceback, and the exit code is the one text mode gives."""
    (tmp_path / "bad.yaml").write_text("models:\n  openai/*: [oops\n", encoding="utf-8")
    (tmp_path / "bad-metadata.json").write_text("{not json", encoding="utf-8")
    reply = {"choices": [{"message": {"role": "assistant", "content": "{}"},
                          "finish_reason": "stop"}]}  # fmt: skip
    (tmp_path / "reply.json").write_text(json.dumps(reply), encoding="utf-8")
    (tmp_path / "bad-stages.yaml").write_text("stages:\n  s: [oops\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CAPC_")}
    env.update(CAPC_OFFLINE="0", CAPC_MAX_ATTEMPTS="1", CAPC_CACHE_DIR=str(tmp_path / "c"))
    url = f"http://127.0.0.1:{closed_port}/api/v1/models"
    jobs = [(c, f, _argv(c, f, tmp_path, url)) for c, f in CASES]
    # the text mode of a few cases: the same exit code without --json
    text_jobs = [(c, f, [a for a in argv if a != "--json"]) for c, f, argv in jobs[::7]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(
            lambda job: _run(job[2], _env_for(job[0], job[1], env, tmp_path, url), tmp_path),
            jobs + text_jobs))
    failures = []
    for (command, failure, argv), proc in zip(jobs, results, strict=False):
        code, kind = FAILURES[failure]
        kind = KINDS.get((command, failure), kind)
        where = f"{command} x {failure}: capc {' '.join(argv)}\n{proc.stdout}\n{proc.stderr}"
        try:
            document = json.loads(proc.stdout)
        except ValueError:
            failures.append(f"stdout is not JSON: {where}")
            continue
        lines = proc.stderr.splitlines()
        if proc.returncode != code or document.get("ok") is not False:
            failures.append(f"exit {proc.returncode}, ok {document.get('ok')}: {where}")
        elif "Traceback" in proc.stderr or len(lines) != 1 or not lines[0].startswith(
            "capc: error: "
        ):
            failures.append(f"stderr is not one error line: {where}")
        elif command == "check" and failure == "bad_yaml":
            [problem] = document["problems"]
            assert set(problem) == {"file", "line", "column", "key", "message"}, where
            assert (problem["line"], problem["column"]) == (3, 1), where
        elif command == "check" and failure == "bad_metadata":  # a problem as well
            [problem] = document["problems"]
            assert problem["key"] is None and "invalid JSON" in problem["message"], where
        elif document["error"]["kind"] != kind or document["error"]["exit_code"] != code:
            failures.append(f"error kind {document['error']['kind']}: {where}")
        elif document["error"]["message"] not in proc.stderr:
            failures.append(f"the JSON message is not the stderr line's: {where}")
    for (command, failure, _), proc in zip(text_jobs, results[len(jobs):], strict=True):
        if proc.returncode != FAILURES[failure][0] or "Traceback" in proc.stderr:
            failures.append(f"text mode: exit {proc.returncode}: {command} x {failure}")
    assert failures == [], "\n\n".join(failures)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compile", "--json"], "the following arguments are required: STAGE, MODEL"),
        (["models", "--json", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_usage_error_with_json_is_json(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse's complaints are errors like the others: exit 2, one line, JSON on stdout."""
    from compiler.cli.main import main

    assert main(argv) == 2
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["ok"] is False and document["error"]["kind"] == "usage"
    assert message in document["error"]["message"]
    assert err.count("\n") == 1 and err.startswith("capc: error: ")
    assert not err.startswith("capc: error: capc")  # the program is named once


def test_explain_json_refusal_is_one_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain --json on a refusal: the report and the error in one object, exit 1."""
    from compiler.cli.main import main
    from tests.conftest import refusing_stages

    argv = ["explain", "draft_reply", "anthropic/claude-sonnet-4.5", "--json",
            *refusing_stages(tmp_path)]  # fmt: skip
    assert main(argv) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["ok"] is False and document["error"]["kind"] == "adjustment_refused"
    assert "param.fixed" in document["error"]["kinds"]
    assert document["adjustments"] and err.startswith("capc: error: ")
