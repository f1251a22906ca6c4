"""Limits and prices out of range, or not finite, read as unknown and are reported.

One row per field resolution reads and per kind of impossible value: the catalog reads
``None`` by every parser (lazy core, cached core part, whole models), resolution knows
nothing from it, and a note naming the model and the field reaches the compile report,
``capc show`` and ``capc check``; no body or lock ever holds infinity or a negative
limit. Other non-finite numbers fail the lookup of their model, naming the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from compiler import Intent, compile_request
from compiler.artifacts.lock import build_lock, dump_lock
from compiler.cli.main import main
from registry.metadata.catalog import load_catalog
from registry.metadata.core import core_json, core_of, parse_core_json
from registry.metadata.parse import parse_models
from registry.metadata.ranges import (
    ENDPOINT_LIMIT_FIELDS,
    ENDPOINT_PRICE_FIELDS,
    LIMIT_FIELDS,
    PRICE_FIELDS,
)
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

MODEL = "acme/model-1"
BASE: dict[str, Any] = {
    "id": MODEL, "context_length": 100000,
    "top_provider": {"context_length": 100000, "max_completion_tokens": 8000},
    "pricing": {"prompt": "0.000001", "completion": "0.000002"},
    "supported_parameters": ["max_tokens", "temperature", "response_format"],
}
#: (raw JSON token, the text the note gives)
LIMIT_VALUES = [("-5", "-5"), ("0", "0"), ("0.0", "0.0"), ("-0.5", "-0.5"),
                ("1e999", "infinite"), ("-1e999", "infinite"),
                # strings, booleans, fractions and numbers above the ceiling (2^31)
                ('"-5"', '"-5"'), ('"-1"', '"-1"'), ('"0"', '"0"'), ('"NaN"', '"NaN"'),
                ('"Infinity"', '"Infinity"'), ('"1e999"', '"1e999"'),
                ('"' + "9" * 5000 + '"', "(5,002 characters)"), ("true", "true"),
                ("false", "false"), ("1.5", "1.5"), ("9" * 400, "(400 characters)"),
                (str(2**31 + 1), str(2**31 + 1)), ('"-5.0"', '"-5.0"'),
                # text that is no number as OpenRouter writes one (digits only)
                ('" 16 "', 'a string " 16 "'), ('"16 "', 'a string "16 "'),
                ('"1_000"', 'a string "1_000"'), ('"\uff11\uff16"', "a string"),
                ('"1e5"', '"1e5"'), ('"+16"', 'a string "+16"')]
PRICE_VALUES = [('"-1"', '"-1"'), ('"-0.5"', '"-0.5"'), ("-1", "-1"), ('"-0"', '"-0"'),
                ("1e999", "infinite"), ('"Infinity"', '"Infinity"'), ('"NaN"', '"NaN"'),
                # finite as decimals but above the ceiling (1 USD per token, 100 per unit)
                ('"1e999"', '"1e999"'), ('"' + "9" * 5000 + '"', "(5,002 characters)"),
                ('"1000"', '"1000"'), ("1000", "1000"), ("true", "true"),
                ('" 0.1 "', 'a string " 0.1 "'), ('"0_1"', 'a string "0_1"'),
                ('"\uff10.1"', "a string"), ('"0.1\\n"', "a string")]
ROWS = [(f, raw, text) for f in LIMIT_FIELDS for raw, text in LIMIT_VALUES] + [
    (f, raw, text) for f in PRICE_FIELDS for raw, text in PRICE_VALUES]


def body_with(field: str, raw: str) -> bytes:
    """A one-model list whose ``field`` is the raw JSON token ``raw``."""
    model = json.loads(json.dumps(BASE))
    outer, _, inner = field.rpartition(".")
    (model[outer] if outer else model)[inner] = "@@VALUE@@"
    return json.dumps({"data": [model]}).replace('"@@VALUE@@"', raw).encode()


def read(core: dict[str, Any], field: str) -> Any:
    outer, _, inner = field.rpartition(".")
    holder = (core.get(outer) or {}) if outer else core
    return holder.get(inner)


@pytest.mark.parametrize(("field", "raw", "text"), ROWS)
def test_every_parser_reads_it_as_unknown_and_keeps_the_text(
    field: str, raw: str, text: str
) -> None:
    """parse_core_json, the stored core part and the whole ModelInfo agree."""
    body = body_with(field, raw)
    cores = parse_core_json(body)
    assert cores is not None
    [core] = cores
    assert read(dict(core), field) is None
    assert text in core["out_of_range"][field]  # type: ignore[typeddict-item]
    stored = core_json(body)
    assert stored is not None and parse_core_json(stored) == cores
    [info] = parse_models(json.loads(body), source="x")
    assert core_of(info) == core


@pytest.mark.parametrize(("field", "raw", "text"), ROWS)
def test_it_is_reported_and_never_sent(
    tmp_path: Path, field: str, raw: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A note in the resolved model, the compile report and capc show / check."""
    path = tmp_path / "models-2026-08-19.json"
    path.write_bytes(body_with(field, raw))
    registry = Registry.load(metadata=path)
    model = registry.resolve(MODEL)
    [note] = model.metadata_notes
    assert note.startswith(f"metadata of {MODEL}: {field} is ") and text in note
    assert note.endswith("; read as unknown")
    if field in PRICE_FIELDS:
        assert getattr(model, field.split(".")[1] + "_price") is None
    else:
        assert all(v is None or v > 0 for v in (model.context_length,
                                                 model.max_completion_tokens))
    request = compile_request(Intent(stage="t", output_tokens=500), MODEL, registry=registry)
    assert note in request.report.notes
    sent = json.dumps(request.body, allow_nan=False)  # never infinity
    assert request.body.get("max_tokens", 1) > 0 and "Infinity" not in sent
    argv = ["--metadata", str(path)]
    assert main(["show", MODEL, *argv]) == 0
    assert f"note: {note}" in capsys.readouterr().out
    assert main(["show", MODEL, *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [note]
    (tmp_path / "models.yaml").write_text(f"models:\n  {MODEL}:\n    notes: n\n")
    (tmp_path / "stages.yaml").write_text(f"stages:\n  s:\n    models: [{MODEL}]\n")
    check = ["check", *argv, "--models", str(tmp_path / "models.yaml"),
             "--stages", str(tmp_path / "stages.yaml")]
    assert main(check) == 0
    assert f"capc: note: {note}" in capsys.readouterr().err
    assert main([*check, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [note]


def test_in_range_values_give_no_note(tmp_path: Path) -> None:
    """A price of 0 is a price (free), a limit of 1 a limit, a string of digits (and
    nothing else, as documented) and 2^31 too: nothing to report."""
    model = json.loads(json.dumps(BASE))
    model["pricing"] = {"prompt": "0", "completion": 0}
    model["top_provider"]["max_completion_tokens"] = 1
    model["top_provider"]["context_length"] = "5"
    model["context_length"] = 2**31
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"data": [model]}), encoding="utf-8")
    resolved = Registry.load(metadata=path).resolve(MODEL)
    assert resolved.metadata_notes == ()
    assert (resolved.max_completion_tokens, str(resolved.prompt_price)) == (1, "0")
    core = load_catalog(path).core(MODEL)
    assert core is not None and core["top_provider"]["context_length"] == 5


def test_one_bad_limit_never_fails_the_list(tmp_path: Path) -> None:
    """A list with "NaN" in one model's limit still loads: that value is unknown (and
    noted), the other model is untouched."""
    bad = json.loads(json.dumps(BASE))
    bad["context_length"] = "NaN"
    good = {**json.loads(json.dumps(BASE)), "id": "acme/model-2"}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"data": [bad, good]}), encoding="utf-8")
    registry = Registry.load(metadata=path)
    assert registry.resolve("acme/model-2").metadata_notes == ()
    [note] = registry.resolve(MODEL).metadata_notes
    assert 'context_length is "NaN"' in note


def test_a_lock_of_the_real_router_models_holds_the_note(shared_dir: Path) -> None:
    """openrouter/auto publishes "-1" prices: its lock entry says so, and is valid JSON."""
    registry = Registry.load(metadata=shared_dir / "models-2026-08-19.json",
                             models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    text = dump_lock(build_lock(registry))
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the lock"))
    assert "Infinity" not in text and "NaN" not in text
    catalog = load_catalog(shared_dir / "models-2026-08-19.json")
    auto = catalog.core("openrouter/auto")
    assert auto is not None and dict(auto["out_of_range"]) == {
        "pricing.prompt": '"-1"', "pricing.completion": '"-1"'}


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        (lambda m: m.update(created="@@"), "created"),
        (lambda m: m.update(default_parameters={"temperature": "@@"}),
         "default_parameters.temperature"),
        (lambda m: m["pricing"].update(image="@@"), "pricing.image"),
    ],
)
def test_other_non_finite_numbers_are_malformed_fields_of_their_model(
    tmp_path: Path, spoil: Any, field: str
) -> None:
    """1e999 elsewhere is never read as infinity: that model's lookup reads the field as
    unknown with a note naming it (docs/metadata.md, Malformed fields), and compiling it
    (which reads only the core fields) still works."""
    model = json.loads(json.dumps(BASE))
    spoil(model)
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"data": [model]}).replace('"@@"', "1e999"), encoding="utf-8")
    catalog = load_catalog(path)
    info = catalog.require(MODEL)
    assert info.out_of_range == {field: "a number Infinity, not a finite number"}
    registry = Registry.load(metadata=path)
    body = compile_request(Intent(stage="t", output_tokens=10), MODEL, registry=registry).body
    assert not any(isinstance(v, float) and math.isinf(v) for v in body.values())


ENDPOINT_ROWS = [(f, raw, text) for f in ENDPOINT_LIMIT_FIELDS for raw, text in LIMIT_VALUES] + [
    (f, raw, text) for f in ENDPOINT_PRICE_FIELDS for raw, text in PRICE_VALUES]


@pytest.mark.parametrize(("field", "raw", "text"), ENDPOINT_ROWS)
def test_endpoint_limits_and_prices_too(tmp_path: Path, field: str, raw: str, text: str) -> None:
    """An /endpoints record's value reads as unknown; the compile of the route plan
    reports it with the endpoint's tag, and no body holds it."""
    record: dict[str, Any] = {
        "tag": "acme/fp8", "context_length": 100000, "max_completion_tokens": 8000,
        "max_prompt_tokens": 90000, "supported_parameters": BASE["supported_parameters"],
        "pricing": {"prompt": "0.000001", "completion": "0.000002", "request": "0",
                    "image": "0"}}
    outer, _, inner = field.rpartition(".")
    (record[outer] if outer else record)[inner] = "@@VALUE@@"
    text_json = json.dumps({"data": {"id": MODEL, "endpoints": [record]}})
    path = tmp_path / "endpoints.json"
    path.write_text(text_json.replace('"@@VALUE@@"', raw), encoding="utf-8")
    (tmp_path / "models.json").write_text(json.dumps({"data": [BASE]}), encoding="utf-8")
    registry = Registry.load(metadata=tmp_path / "models.json", endpoints=path)
    [caps] = registry.endpoint_caps(MODEL)
    assert field in dict(caps.out_of_range) and text in dict(caps.out_of_range)[field]
    request = compile_request(Intent(stage="t", output_tokens=500), MODEL, registry=registry)
    note = next(n for n in request.report.notes if n.startswith("endpoint acme/fp8 of "))
    assert f": {field} is " in note and note.endswith("; read as unknown")
    sent = json.dumps([a.body for a in request.plan], allow_nan=False)
    assert "Infinity" not in sent and all(a.body.get("max_tokens", 1) > 0 for a in request.plan)


def test_check_notes_only_the_models_the_yaml_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model no stage or models.yaml entry names does not fill check's stderr."""
    path = tmp_path / "models-2026-08-19.json"
    path.write_bytes(body_with("context_length", "0"))
    (tmp_path / "models.yaml").write_text("models:\n  other/*:\n    notes: n\n")
    (tmp_path / "stages.yaml").write_text("stages:\n  s:\n    output_tokens: 10\n")
    argv = ["check", "--metadata", str(path), "--models", str(tmp_path / "models.yaml"),
            "--stages", str(tmp_path / "stages.yaml"), "--json"]
    main(argv)
    assert json.loads(capsys.readouterr().out)["notes"] == []
