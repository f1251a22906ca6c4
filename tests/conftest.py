"""Shared test helpers: where ../shared lives, and the example configuration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
OPENROUTER = SHARED / "data" / "openrouter"


@pytest.fixture
def shared_dir() -> Path:
    """Return ../shared/data/openrouter, skipping the test when it is absent."""
    if not OPENROUTER.is_dir():
        pytest.skip("../shared/data/openrouter is absent")
    return OPENROUTER


def refusing_stages(folder: Path) -> list[str]:
    """Write the example stages.yaml into ``folder`` with ``draft_reply`` refusing every
    adjustment (``policy: {'*': refuse}``), beside a copy of the contracts; return the
    ``--models``/``--stages`` options that point at it."""
    import shutil

    shutil.copytree(ROOT / "contracts", folder / "contracts")
    text = (ROOT / "stages.yaml").read_text(encoding="utf-8")
    head, tail = text.split("  draft_reply:\n", 1)
    (folder / "stages.yaml").write_text(
        f"{head}  draft_reply:\n    policy: {{'*': refuse}}\n{tail}", encoding="utf-8"
    )
    return ["--models", str(ROOT / "models.yaml"), "--stages", str(folder / "stages.yaml")]


@pytest.fixture
def node_ready() -> Iterator[None]:
    """Skip unless node is installed and examples/node has its packages (``npm ci``)."""
    import shutil
    import subprocess

    node_dir = ROOT / "examples" / "node"
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    import json

    wanted = json.loads((node_dir / "package.json").read_text(encoding="utf-8"))
    if not all((node_dir / "node_modules" / n).is_dir() for n in wanted["dependencies"]):
        if shutil.which("npm") is None:
            pytest.skip("examples/node has no node_modules and npm is not installed")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=node_dir, check=True,
                       capture_output=True, timeout=300)
    yield


# -- metadata sources (registry.sources.settings / fetch / cache / sources) -------------------



@pytest.fixture(autouse=True)
def _capc_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Never touch the real network: CAPC_OFFLINE=1 and a fresh cache dir per test.

    Other ``CAPC_`` variables from the developer's environment are removed, so the
    defaults of :class:`registry.sources.settings.Settings` apply unless a test sets them.
    """
    import os

    for name in [n for n in os.environ if n.upper().startswith("CAPC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path_factory.mktemp("capc-cache")))
    from registry.sources.failures import forget_unreachable

    forget_unreachable()  # a host that did not answer in one test is asked in the next


class Reply:
    """One scripted answer of :func:`openrouter_server` (see its docstring)."""

    def __init__(
        self,
        body: bytes | str | object = b"",
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        hang: bool = False,
        reset: bool = False,
        gzip: bool = False,
        short_by: int = 0,
        drip: float = 0.0,
    ) -> None:
        import json

        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.body: bytes = body
        self.status = status
        self.headers = dict(headers or {})
        self.hang = hang
        self.reset = reset
        self.gzip = gzip
        self.short_by = short_by
        self.drip = drip


class FakeOpenRouter:
    """A real HTTP server on 127.0.0.1 answering from per-path scripts.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/api/v1``.
        requests: ``(path, headers)`` of every request received, in order.
        bodies: the JSON body of every POST received, in order (POST is answered like GET).
        errors: exceptions a handler raised, other than a client closing its connection.
    """

    def __init__(self) -> None:
        import contextlib
        import http.server
        import socket
        import struct
        import threading

        self.scripts: dict[str, list[Reply]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.bodies: list[object] = []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                import json

                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.bodies.append(json.loads(raw or b"null"))
                self.do_GET()

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.requests.append((path, dict(self.headers.items())))
                script = server.scripts.get(path)
                if not script:
                    reply = Reply({"error": {"code": 404, "message": "not found"}}, status=404)
                else:
                    reply = script.pop(0) if len(script) > 1 else script[0]
                if reply.hang:
                    server.release.wait(10)
                    self.close_connection = True
                    return
                if reply.reset:
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.close_connection = True
                    return
                body = reply.body
                self.send_response(reply.status)
                if reply.gzip:
                    import gzip

                    body = gzip.compress(body)
                    self.send_header("Content-Encoding", "gzip")
                headers = {"Content-Type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body) + reply.short_by))
                if reply.short_by:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                with contextlib.suppress(OSError):
                    if reply.drip:
                        import time

                        for at in range(len(body)):
                            if server.release.is_set():
                                return
                            self.wfile.write(body[at : at + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip)
                        return
                    self.wfile.write(body)

        errors = self.errors = []

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                # A client that closes its connection (a deadline, a watchdog, a reset
                # between keep-alive requests) is normal here; anything else is kept in
                # ``errors`` rather than printed into the stderr a test reads.
                import sys

                exc = sys.exc_info()[1]
                if not isinstance(exc, ConnectionError):
                    errors.append(exc)

        self._httpd = Server(("127.0.0.1", 0), Handler)
        port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}/api/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def script(self, path: str, *replies: Reply) -> None:
        """Answer ``path`` (``/api/v1/models``) with ``replies`` in turn, the last one forever."""
        self.scripts[path] = list(replies)

    def hits(self, path: str) -> int:
        """Return how many requests ``path`` received."""
        return sum(1 for p, _ in self.requests if p == path)

    def close(self) -> None:
        """Release hanging handlers and stop the server."""
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


@pytest.fixture
def openrouter_server() -> Iterator[FakeOpenRouter]:
    """Start a :class:`FakeOpenRouter` on a free loopback port; stop it afterwards.

    Script answers with ``server.script("/api/v1/models", Reply(...), ...)``. A
    :class:`Reply` is a body (bytes, text or a JSON-able value) with ``status`` and
    ``headers``; ``hang`` never answers (until teardown), ``reset`` closes the connection
    with a TCP reset, ``gzip`` compresses the body, ``short_by`` announces that many more
    bytes than are sent and then closes the connection, ``drip`` sends the body one
    byte every ``drip`` seconds.
    """
    server = FakeOpenRouter()
    try:
        yield server
    finally:
        server.close()


SEED_MODELS = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"
"""The bundled seed (52 models): the models list the metadata-source tests serve."""


def online_settings(server: FakeOpenRouter, cache_dir: Path, **overrides: object) -> object:
    """Settings that talk to ``server`` with tiny timeouts and no waiting between attempts.

    Returns:
        A :class:`registry.sources.settings.Settings` (typed ``object`` to keep imports lazy).
    """
    from registry.sources.settings import Settings

    values: dict[str, object] = {
        "base_url": server.base_url,
        "cache_dir": cache_dir,
        "offline": False,
        "connect_timeout": 1.0,
        "read_timeout": 0.2,
        "deadline": 10.0,
        "max_attempts": 4,
        "backoff": 0.0,
        "retry_after_cap": 0.0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]
