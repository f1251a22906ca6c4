"""to_openai_kwargs() through the real openai SDK: the JSON on the wire equals the body."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest

from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

# A stage with sampling parameters the openai SDK does not name (top_k, min_p,
# repetition_penalty), and routing declared for one model, next to the examples.
EXTRA_STAGES = """
  sample_widely:
    description: Sampling the SDK has no named argument for.
    contract: contracts/examples.py:TicketLabel
    output_tokens: 300
    sampling:
      temperature: 0.4
      top_k: 40
      min_p: 0.05
      repetition_penalty: 1.1
      seed: 7
      stop: ["END"]
    models:
      - meta-llama/llama-3.3-70b-instruct
    overrides:
      meta-llama/llama-3.3-70b-instruct:
        provider:
          order: [deepinfra, together]
          allow_fallbacks: false
"""

CASES = [
    ("deep_analysis", "anthropic/claude-sonnet-4.5"),  # reasoning + provider in extra_body
    ("draft_reply", "openai/gpt-5.1"),  # reasoning.effort, no response_format
    ("extract_invoice", "openai/gpt-4o-mini"),  # strict json_schema, temperature
    ("sample_widely", "meta-llama/llama-3.3-70b-instruct"),  # top_k, min_p, stop, routing
]


class _Recorder(BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions with a minimal chat.completion; keeps each body."""

    bodies: list[Any]

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw)
        type(self).bodies.append((self.path, body))
        reply = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "{}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[Any]]]:
    """Start a loopback HTTP server on a free port; yield its base URL and received bodies."""
    handler = type("Recorder", (_Recorder,), {"bodies": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler.bodies
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    """The example configuration plus one stage with sampling the SDK does not name."""
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    stages = (ROOT / "stages.yaml").read_text(encoding="utf-8") + EXTRA_STAGES
    (tmp_path / "stages.yaml").write_text(stages, encoding="utf-8")
    return Registry.load(models=ROOT / "models.yaml", stages=tmp_path / "stages.yaml")


@pytest.mark.parametrize(("stage", "model"), CASES)
def test_wire_body_equals_compiled_body(
    server: tuple[str, list[Any]], registry: Registry, stage: str, model: str
) -> None:
    """The openai SDK, given to_openai_kwargs(), sends exactly CompiledRequest.body."""
    base_url, bodies = server
    bodies.clear()
    messages = [{"role": "user", "content": "Ticket: the invoice total is wrong."}]
    compiled = compile_request(stage, model, messages, registry=registry)
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=10)
    try:
        reply = client.chat.completions.create(**compiled.to_openai_kwargs())
    finally:
        client.close()
    assert reply.choices[0].message.content == "{}"
    assert len(bodies) == 1
    path, wire = bodies[0]
    assert path == "/v1/chat/completions"
    assert wire == compiled.body


def test_cases_cover_extra_body_fields(registry: Registry) -> None:
    """The cases above really put reasoning, provider and top_k in extra_body."""
    extra: set[str] = set()
    for stage, model in CASES:
        kwargs = compile_request(stage, model, registry=registry).to_openai_kwargs()
        extra |= set(kwargs.get("extra_body", {}))
        assert "messages" in kwargs and "model" in kwargs
    assert {"reasoning", "provider", "top_k", "min_p", "repetition_penalty"} <= extra
