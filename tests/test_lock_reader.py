"""The lock is enough to read a reply: the Python lock reader and the Node consumer
(examples/node) agree with ``CompiledRequest.parse_reply`` on a fixed corpus
(tests/lock_corpus.py: five stages x eleven models, every rung)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler.artifacts.lock import read_lock
from compiler.artifacts.lock_schema import lock_json_schema
from compiler.artifacts.lockfile import Lock, load_lock
from tests import lock_corpus
from tests.conftest import OPENROUTER, ROOT

NODE_DIR = ROOT / "examples" / "node"


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[lock_corpus.Case], list[Any]]:
    """The corpus lock, its cases and the compilations behind them."""
    if not OPENROUTER.is_dir():
        pytest.skip("../shared/data/openrouter is absent")
    return lock_corpus.build(tmp_path_factory.mktemp("corpus"), OPENROUTER)


def test_corpus_covers_every_rung(corpus: tuple[Path, list[lock_corpus.Case], Any]) -> None:
    """At least 60 replies, valid and invalid, at every rung, over at least 10 models."""
    lock, cases, _ = corpus
    assert len(cases) >= 60
    rungs = collections.Counter(c.rung for c in cases)
    assert set(rungs) == {"schema", "tool", "json", "prompt"}, rungs
    assert {c.valid for c in cases} == {True, False}
    assert len({c.model for c in cases}) >= 10
    jsonschema.Draft202012Validator(lock_json_schema()).validate(read_lock(lock))


@pytest.mark.parametrize("use_contract", [False, True])
def test_python_reader_agrees(
    corpus: tuple[Path, list[lock_corpus.Case], Any], use_contract: bool
) -> None:
    """The reader's outcome equals parse_reply's, with JSON Schema only and with the contract."""
    lock_path, cases, _ = corpus
    lock = load_lock(lock_path)
    wrong = []
    for case in (c for c in cases if c.variant is None):
        req = lock.request(case.stage, case.model).plan[case.attempt]
        got = lock_corpus.outcome(lambda t, r=req: r.parse_reply(t, contract=use_contract),
                                  case.text)
        if got != (case.valid, case.paths):
            wrong.append((case.id, (case.valid, case.paths), got))
    assert wrong == []


#: What CompiledRequest.parse_response raises for each response with no answer.
BLOCKED = {"refusal": "refused", "refusal_part": "refused", "filtered": "filtered",
           "error": "error", "error_string": "error", "error_string_choices": "error",
           "choice_error": "error", "text_parts": None}


def test_python_reader_blocks_what_parse_response_blocks(
    corpus: tuple[Path, list[lock_corpus.Case], Any]
) -> None:
    """A refusal, a content filter and an error in a response (an object, a string, a
    choice-level one): the lock reader raises the same ReplyBlockedError / ProviderError as
    the compiled request, never a validation failure, at every rung; content as text parts
    is read as their joined text (valid) by both."""
    lock_path, cases, _ = corpus
    lock = load_lock(lock_path)
    blocked = [c for c in cases if c.variant is not None]
    assert {c.rung for c in blocked} == {"schema", "tool", "json", "prompt"}
    wrong = []
    for case in blocked:
        req = lock.request(case.stage, case.model).plan[case.attempt]
        tool = None if req.reply is None else req.reply["tool"]
        got = lock_corpus.response_outcome(req.parse_response, case.response(tool))
        assert case.variant is not None
        want = (case.valid, case.paths, case.blocked)
        if not (got == want and case.blocked == BLOCKED[case.variant]):
            wrong.append((case.id, want, got))
        if case.variant == "text_parts" and not case.valid:
            wrong.append((case.id, "text parts are not read as the valid reply", got))
    assert wrong == []


def test_reader_bodies_equal_compiled_bodies(
    corpus: tuple[Path, list[lock_corpus.Case], list[Any]]
) -> None:
    """Every attempt's body from the lock is the compiled body for the same messages, and
    parse_response reads the tool call's arguments at rung tool."""
    lock_path, cases, items = corpus
    lock = load_lock(lock_path)
    messages = [{"role": "user", "content": "hello"}]
    for item in items:
        locked = lock.request(item.stage, item.model)
        assert len(locked.plan) == len(item.compiled.plan)
        for mine, theirs in zip(locked.plan, item.compiled.plan, strict=True):
            body = {k: v for k, v in theirs.body.items() if k != "messages"}
            head = [] if theirs.instructions is None else [theirs.instructions]
            assert mine.body(messages) == {**body, "messages": [*head, *messages]}
    tool_case = next(c for c in cases if c.rung == "tool" and c.valid)
    req = lock.request(tool_case.stage, tool_case.model).plan[tool_case.attempt]
    assert req.reply is not None and req.reply["source"] == "tool_arguments"
    req.parse_response(tool_case.response(req.reply["tool"]))


class _Server:
    """A loopback chat-completions server: answers each case by the id in the last
    message, and records every body that is not the one the lock says to send."""

    def __init__(self, lock: Lock, cases: dict[str, lock_corpus.Case]) -> None:
        self.mismatched: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                case = cases[body["messages"][-1]["content"]]
                req = lock.request(case.stage, case.model).plan[case.attempt]
                if body != req.body([{"role": "user", "content": case.id}]):
                    outer.mismatched.append(case.id)
                if self.headers.get("Authorization") != "Bearer test-key":
                    outer.mismatched.append(f"{case.id}: Authorization header")
                tool = None if req.reply is None else req.reply["tool"]
                data = json.dumps(case.response(tool)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.usefixtures("node_ready")
def test_node_consumer_agrees(
    corpus: tuple[Path, list[lock_corpus.Case], Any], tmp_path: Path
) -> None:
    """examples/node/consume.mjs sends every attempt through the openai package to a
    loopback server and reaches parse_reply's outcome on every case."""
    lock_path, cases, _ = corpus
    by_id = {c.id: c for c in cases}
    (tmp_path / "cases.json").write_text(json.dumps([
        {"id": c.id, "stage": c.stage, "model": c.model, "attempt": c.attempt,
         "messages": [{"role": "user", "content": c.id}]} for c in cases]))
    server = _Server(load_lock(lock_path), by_id)
    try:
        run = subprocess.run(
            ["node", str(NODE_DIR / "consume.mjs"), "--cases", str(lock_path),
             str(tmp_path / "cases.json")],
            capture_output=True, text=True, timeout=300,
            env={"PATH": os.environ["PATH"], "OPENROUTER_API_KEY": "test-key",
                 "OPENROUTER_BASE_URL": server.url})
    finally:
        server.close()
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(results) == len(cases)
    def expected(case: lock_corpus.Case) -> tuple[bool, tuple[str, ...], str | None]:
        return case.valid, case.paths, case.blocked

    wrong = [(r["id"], expected(by_id[r["id"]]), (r["valid"], r["paths"], r["blocked"]))
             for r in results
             if (r["valid"], tuple(r["paths"]), r["blocked"]) != expected(by_id[r["id"]])]
    assert wrong == []
    assert {r["blocked"] for r in results} == {None, "refused", "filtered", "error"}
    assert server.mismatched == []
