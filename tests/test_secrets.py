"""Secrets never leave: a planted marker, run through every command, is found nowhere.

The marker is the API key (``CAPC_API_KEY``), a key in the metadata URL's query string,
text in a models.yaml ``notes``, and the body a loopback server returns with a 401
(echoing the key) and a response header (``X-Echo: Bearer …``). Every command runs in
text and ``--json`` mode with DEBUG logging on (httpx's and httpcore's records
included); the marker must be in no stdout, stderr, log record, cache file, lock or
report. Below, one table per class: credential shapes, control characters in a key,
the URL requested, and redirects.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.redact import RedactingFilter, redact_text, redact_url
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply

CORE = "c4pcm4rk3r7f3a9q"
MARKER = f"sk-or-v1-{CORE}"
MODEL = "openai/gpt-4o-mini"


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    shutil.copy(ROOT / "stages.yaml", tmp_path / "stages.yaml")
    models = (ROOT / "models.yaml").read_text(encoding="utf-8")
    models += f'\n  "{MODEL}":\n    notes: "rotate the key {MARKER} monthly"\n'
    (tmp_path / "models.yaml").write_text(models, encoding="utf-8")
    return tmp_path / "models.yaml", tmp_path / "stages.yaml"


def _commands(url: str, models: Path, stages: Path, out: Path) -> list[list[str]]:
    common = ["--metadata", url, "--models", str(models), "--stages", str(stages)]
    lock_a, lock_b = str(out / "a.lock.json"), str(out / "b.lock.json")
    return [
        ["refresh", "--endpoints", MODEL, "--stages", str(stages)],
        ["compile", "extract_invoice", MODEL, *common],
        ["explain", "extract_invoice", MODEL, *common],
        ["show", MODEL, *common],
        ["check", *common],
        ["lock", "--output", lock_a, *common],
        ["lock", "--output", lock_b, *common],
        ["audit", *common],
        ["diff", lock_a, lock_b, "--models", str(models), "--stages", str(stages)],
        ["models", "--search", "gpt-4o", *common],
        ["cache", "info"],
    ]


QRY = "QRY7q2m4rkZ9"
#: Where the URL plants a marker: (query and fragment, the marker's core)
PLANTED = [(f"?api_key={MARKER}&x=1", CORE), (f"?jwt={QRY}&x=1", QRY),
           (f"?x=1#token={QRY}", QRY)]


@pytest.mark.parametrize(("query", "core"), PLANTED, ids=["api_key", "jwt", "fragment"])
def test_the_planted_marker_is_nowhere(
    query: str,
    core: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    openrouter_server: FakeOpenRouter,
) -> None:
    """Every command, text and --json, debug logging on: no trace of the marker."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(cache))
    monkeypatch.setenv("CAPC_API_KEY", MARKER)
    monkeypatch.setenv("CAPC_BASE_URL", openrouter_server.base_url)
    monkeypatch.setenv("CAPC_MIN_MODELS", "1")
    monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("CAPC_TTL", "0")  # every command fetches again
    echo = {"X-Echo": f"Bearer {MARKER}", "WWW-Authenticate": f"Bearer realm={MARKER}",
            "X-Echo-Auth": f"Authorization: Token {MARKER}"}
    openrouter_server.script("/api/v1/models", Reply(SEED_MODELS.read_bytes(), headers=echo))
    openrouter_server.script(
        f"/api/v1/models/{MODEL}/endpoints",
        Reply({"error": {"code": 401, "message": f"bad key {MARKER}"}}, status=401, headers=echo),
    )
    work = tmp_path / "work"
    work.mkdir()
    models, stages = _workspace(work)
    url = f"{openrouter_server.base_url}/models{query}"
    marks = {CORE, core}
    caplog.set_level(logging.DEBUG)
    ran = []
    for command in _commands(url, models, stages, work):
        for json_mode in (False, True):
            argv = [*command, "--json"] if json_mode else command
            if command[0] == "cache":
                argv = ["cache", "--json", "info"] if json_mode else argv
            code = main(argv)
            out, err = capsys.readouterr()
            ran.append((argv[0], code))
            assert not any(m in out or m in err for m in marks), argv
    records = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    assert any("HTTP Request" in r for r in records)  # httpx's INFO record was seen
    assert any("receive_response_headers" in r for r in records)  # and httpcore's DEBUG
    assert [r for r in records if any(m in r for m in marks)] == []
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != models.name]
    assert any(p.name.endswith(".lock.json") for p in files)
    assert any(p.parent == cache for p in files)
    assert [p for p in files if any(m.encode() in p.read_bytes() for m in marks)] == []
    # Every request carried the key in its header, never in the URL logged above.
    sent = [h.get("Authorization") for _, h in openrouter_server.requests]
    assert sent and set(sent) == {f"Bearer {MARKER}"}
    assert ("refresh", 1) in ran  # the 401 was met (and reported without the body)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://u:pw@host/api/v1/models", "https://host/api/v1/models"),
        ("https://host/m?api_key=abc123&x=1", "https://host/m?api_key=***&x=***"),
        ("https://host/m?token=t&access_token=u", "https://host/m?token=***&access_token=***"),
        ("https://host/m?sig=abc&author=openai", "https://host/m?sig=***&author=***"),
        # every query value (any name may carry one) and the fragment go
        ("http://h/m?jwt=QRYmark", "http://h/m?jwt=***"),
        ("http://h/m#token=QRYmark", "http://h/m"),
        ("http://h/m?a=1&b=#x", "http://h/m?a=***&b="),
        ("http://[::1", "http://[::1"),
        ("http://user:pw@[::1/x?key=1", "http://[::1/x?key=***"),
    ],
)
def test_urls_are_shown_without_credentials(text: str, shown: str) -> None:
    """Userinfo, every query value and the fragment are dropped; names are kept."""
    assert redact_url(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
        ("[(b'X-Echo', b'Bearer sk-or-v1-abcdef123')]", "[(b'X-Echo', b'Bearer ***')]"),
        ("key sk-or-v1-0123456789abcdef here", "key sk-*** here"),
        ("Basic dXNlcjpzZWNyZXQ= sent", "Basic *** sent"),
        ("Basic usage of task-list", "Basic usage of task-list"),
        ('GET http://u:p@h/m?apikey=1 "HTTP/1.1 200"', 'GET http://h/m?apikey=*** "HTTP/1.1 200"'),
        # no scheme or host; Authorization of any scheme, in each spelling
        ("/api/v1/models?api_key=QRYmark", "/api/v1/models?api_key=***"),
        ("b'GET /m?jwt=QRYmark HTTP/1.1'", "b'GET /m?jwt=*** HTTP/1.1'"),
        ("Authorization: Token QRYmark", "Authorization: Token ***"),
        ("Authorization: Foo QRYmark", "Authorization: ***"),
        ("authorization=QRYmark x", "authorization=*** x"),
        ("[(b'Authorization', b'Token QRYmark')]", "[(b'Authorization', b'Token ***')]"),
        ("Authorization: Bearer ***", "Authorization: Bearer ***"),
        # punctuation after a masked value is the sentence's (issue 21)
        ("http://[::1/models?api_key=QRYmark: not a valid URL",
         "http://[::1/models?api_key=***: not a valid URL"),
        ("http://[::1/models?api_key=***: not a valid URL",
         "http://[::1/models?api_key=***: not a valid URL"),
        ("see http://h/m?token=QRYmark. Then", "see http://h/m?token=***. Then"),
        ("/m?token=QRY.mark, sent", "/m?token=***, sent"),
    ],
)
def test_credential_shapes_are_masked_in_text(text: str, shown: str) -> None:
    """Bearer/Basic values, sk- keys and URLs in free text are masked, nothing else."""
    assert redact_text(text) == shown


def test_a_log_record_is_redacted_in_place() -> None:
    """The filter rewrites the message (args included) and keeps the record."""
    args = ("http://h/?token=z",)
    record = logging.LogRecord("httpx", logging.INFO, "f", 1, "GET %s", args, None)
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == "GET http://h/?token=***"


@pytest.mark.parametrize("key", ["abc\ndef", "abc\rdef", "ab\x01cd", "ab\x1bcd", "a\x7fb",
                                 "ab\u00e9cd", "ab\u201ccd", "ab\u00a0cd"])
def test_a_key_with_a_control_character_is_refused_at_load(
    key: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It would inject a header (a non-ASCII one cannot be sent at all); the error names
    the variable, never the key."""
    monkeypatch.setenv("CAPC_API_KEY", f"{key}-{CORE}")
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    assert main(["models", "--json"]) == 2
    out, err = capsys.readouterr()
    assert "CAPC_API_KEY" in err and ("control character" in err or "not ASCII" in err)
    assert CORE not in out + err


def test_userinfo_becomes_a_header_never_part_of_the_url_requested(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    openrouter_server: FakeOpenRouter,
) -> None:
    """``user:secret@`` in the base URL is sent as Basic auth; httpx's record lacks it."""
    from registry.sources.load import load_metadata
    from tests.conftest import online_settings

    openrouter_server.script("/api/v1/models", Reply(SEED_MODELS.read_bytes()))
    base = openrouter_server.base_url.replace("http://", f"http://user:{CORE}@")
    settings = online_settings(openrouter_server, tmp_path, base_url=base, min_models=1)
    caplog.set_level(logging.DEBUG)
    catalog = load_metadata(settings=settings)  # type: ignore[arg-type]
    assert catalog.origin == "fetch" and CORE not in catalog.source
    assert openrouter_server.requests[0][1]["Authorization"].startswith("Basic ")
    assert [r for r in caplog.records if CORE in r.getMessage()] == []


def test_authorization_is_not_sent_to_another_origin_on_a_redirect(
    tmp_path: Path, openrouter_server: FakeOpenRouter
) -> None:
    """A redirect to another origin loses the Authorization header (httpx's rule, pinned)."""
    from registry.sources.load import load_metadata
    from registry.sources.settings import Settings
    from tests.conftest import online_settings

    other = FakeOpenRouter()
    try:
        other.script("/api/v1/models", Reply(SEED_MODELS.read_bytes()))
        openrouter_server.script(
            "/api/v1/models", Reply(status=302, headers={"Location": f"{other.base_url}/models"})
        )
        settings = online_settings(openrouter_server, tmp_path, min_models=1, api_key=MARKER)
        assert isinstance(settings, Settings)
        assert load_metadata(settings=settings).origin == "fetch"
        assert openrouter_server.requests[0][1]["Authorization"] == f"Bearer {MARKER}"
        assert "Authorization" not in other.requests[0][1]
    finally:
        other.close()
