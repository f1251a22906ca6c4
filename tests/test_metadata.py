"""registry.metadata (shapes, parse): tolerant parsing of OpenRouter metadata shapes."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pydantic
import pytest

from registry.errors import MetadataError
from registry.metadata.parse import (
    parse_endpoints,
    parse_endpoints_bundle,
    parse_models,
    parse_models_json,
    read_json,
)
from registry.metadata.shapes import Endpoint, ModelInfo, Pricing, ReasoningInfo
from tests.conftest import OPENROUTER

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "metadata"

needs_shared = pytest.mark.skipif(
    not OPENROUTER.is_dir(), reason="../shared/data/openrouter is absent"
)


def _models(name: str) -> dict[str, ModelInfo]:
    """Parse a shared snapshot by file name and index it by id."""
    path = OPENROUTER / name
    return {m.id: m for m in parse_models(read_json(path, source=name), source=name)}


# --- facts from the real snapshots ----------------------------------------------------


@needs_shared
def test_snapshot_counts() -> None:
    """The 2026-08-19 default list has 414 models and the output_modalities=all list 549."""
    assert len(_models("models-2026-08-19.json")) == 414
    assert len(_models("models-all-2026-08-19.json")) == 549


@needs_shared
def test_2025_04_has_no_supported_parameters() -> None:
    """The oldest snapshot publishes no supported_parameters, which parses as None."""
    models = _models("models-2025-04-24.json")
    assert models
    assert all(m.supported_parameters is None for m in models.values())


@needs_shared
def test_gpt_5_1_reasoning_efforts() -> None:
    """gpt-5.1 publishes its efforts in descending order, including "none"."""
    reasoning = _models("models-2026-08-19.json")["openai/gpt-5.1"].reasoning
    assert reasoning is not None
    assert reasoning.efforts_published
    assert reasoning.supported_efforts == ("high", "medium", "low", "none")
    assert reasoning.mandatory is False


@needs_shared
def test_claude_sonnet_4_5_publishes_no_efforts() -> None:
    """claude-sonnet-4.5 has a reasoning object without supported_efforts."""
    reasoning = _models("models-2026-08-19.json")["anthropic/claude-sonnet-4.5"].reasoning
    assert reasoning is not None
    assert reasoning.efforts_published is False
    assert reasoning.supported_efforts is None


@needs_shared
def test_router_minus_one_price_is_none() -> None:
    """openrouter/auto's "-1" prices (variable) parse to None, never a negative price."""
    pricing = _models("models-2026-08-19.json")["openrouter/auto"].pricing
    assert pricing is not None
    assert pricing.prompt is None
    assert pricing.completion is None


@needs_shared
def test_pricing_overrides_parse() -> None:
    """Both override kinds parse: prompt-size thresholds and UTC time windows."""
    models = _models("models-2026-08-19.json")
    sonnet = models["anthropic/claude-sonnet-4.5"].pricing
    assert sonnet is not None
    assert sonnet.overrides[0].min_prompt_tokens == 200000
    assert sonnet.overrides[0].prompt == Decimal("0.000006")
    windows = models["deepseek/deepseek-v4-pro-0813"].pricing
    assert windows is not None
    assert [(o.utc_start, o.utc_end) for o in windows.overrides] == [
        (1000, 100),
        (100, 400),
        (400, 600),
        (600, 1000),
    ]
    assert all(isinstance(o.prompt, Decimal) for o in windows.overrides)


@needs_shared
def test_context_length_zero_is_unknown_and_kept_for_reports() -> None:
    """Non-text models with context_length 0 read it as unknown; the 0 is kept to report."""
    models = _models("models-all-2026-08-19.json")
    zero = [m for m in models.values() if (m.out_of_range or {}).get("context_length") == "0"]
    assert len(zero) == 54
    assert all(m.context_length is None for m in zero)


# --- tolerance ------------------------------------------------------------------------


def test_bare_array_and_unknown_keys() -> None:
    """A bare array parses; unknown keys are ignored and unknown parameters are kept."""
    payload = read_json(FIXTURES / "models-bare-list.json", source="bare")
    widget, router = parse_models(payload, source="bare")
    assert widget.id == "acme/widget-1"
    assert widget.supported_parameters == ("max_tokens", "temperature", "future_knob")
    assert not hasattr(widget, "sparkle_factor")
    assert router.context_length is None and (router.out_of_range or {})["context_length"] == "0"


def test_root_extras_are_ignored() -> None:
    """Root keys such as total_count and links do not disturb parsing."""
    payload = {"data": [{"id": "a/b"}], "total_count": 1, "links": {"next": None}}
    assert [m.id for m in parse_models(payload, source="x")] == ["a/b"]


def test_only_id_is_required() -> None:
    """A model with only an id parses with every other field None."""
    (model,) = parse_models([{"id": "a/b"}], source="x")
    assert model.pricing is None
    assert model.reasoning is None
    assert model.supported_parameters is None


def test_prices_are_exact_decimals() -> None:
    """High-precision price strings are parsed exactly, not through float."""
    payload = read_json(FIXTURES / "models-bare-list.json", source="bare")
    pricing = parse_models(payload, source="bare")[0].pricing
    assert pricing is not None
    assert pricing.prompt == Decimal("0.0000000416666666666667")
    assert pricing.completion == Decimal("0.000002")


def test_negative_prices_in_overrides_are_none() -> None:
    """Unknown ("-1") prices are None in overrides too; unmodelled price keys are kept."""
    payload = read_json(FIXTURES / "models-bare-list.json", source="bare")
    pricing = parse_models(payload, source="bare")[1].pricing
    assert pricing is not None
    threshold, window = pricing.overrides
    assert threshold.min_prompt_tokens == 100000
    assert threshold.model_extra == {}
    assert threshold.audio == Decimal("0.00002")  # a modelled price key since #17
    assert (window.utc_start, window.utc_end, window.completion) == (2300, 200, None)


def test_any_negative_price_is_unknown() -> None:
    """Any negative price (string or number) is treated as unknown, discount untouched."""
    pricing = Pricing.model_validate(
        {"prompt": "-0.5", "completion": -1, "image": "0", "discount": 0.25}
    )
    assert pricing.prompt is None
    assert pricing.completion is None
    assert pricing.image == Decimal("0")
    assert pricing.discount == 0.25


def test_efforts_null_versus_absent() -> None:
    """A null supported_efforts means "all accepted" and counts as published; absent does not."""
    assert ReasoningInfo.model_validate({"supported_efforts": None}).efforts_published
    assert not ReasoningInfo.model_validate({"mandatory": True}).efforts_published
    listed = ReasoningInfo.model_validate({"supported_efforts": ["max", "high", "low"]})
    assert listed.supported_efforts == ("max", "high", "low")


def test_models_are_frozen() -> None:
    """Parsed models cannot be mutated."""
    (model,) = parse_models([{"id": "a/b"}], source="x")
    with pytest.raises(pydantic.ValidationError):
        model.id = "c/d"  # type: ignore[misc]


def test_default_parameters_keep_numbers_and_nulls() -> None:
    """default_parameters keep ints, floats and nulls as published."""
    (model,) = parse_models(
        [{"id": "a/b", "default_parameters": {"temperature": 0.3, "top_k": 20, "top_p": None}}],
        source="x",
    )
    assert model.default_parameters == {"temperature": 0.3, "top_k": 20, "top_p": None}
    assert isinstance((model.default_parameters or {})["top_k"], int)


# --- bad shapes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("not json at all", "got a string"),
        ("<!DOCTYPE html><html>login</html>", "HTML"),
        ({"models": []}, "without a usable 'data' key"),
        ({"data": None}, "without a usable 'data' key"),
        ({"error": {"code": 401, "message": "No auth credentials found"}}, "401"),
        (42, "got a number"),
        (None, "got null"),
        ({"data": {"id": "a/b", "endpoints": []}}, "parse_endpoints"),
    ],
)
def test_wrong_overall_shape(payload: object, fragment: str) -> None:
    """A payload that is not a models list raises MetadataError naming the source."""
    with pytest.raises(MetadataError) as info:
        parse_models(payload, source="the-source.json")
    assert "the-source.json" in str(info.value)
    assert fragment in str(info.value)
    assert info.value.source == "the-source.json"


def test_element_without_id() -> None:
    """An element without an id is reported with the source and its index."""
    with pytest.raises(MetadataError, match=r"src: model #1 has no string 'id'"):
        parse_models([{"id": "a/b"}, {"name": "nameless"}], source="src")


def test_element_not_an_object() -> None:
    """A non-object element is reported with the source and its index."""
    with pytest.raises(MetadataError, match=r"src: model #2 is a string"):
        parse_models([{"id": "a/b"}, {"id": "c/d"}, "e/f"], source="src")


def test_field_error_names_index_id_and_field() -> None:
    """A body whose models are mostly malformed is refused whole; the message names the
    first one's index, id and field."""
    payload = [{"id": "a/b", "top_provider": {"is_moderated": "lots"}},
               {"id": "c/d", "architecture": 5}, {"id": "e/f"}]
    with pytest.raises(MetadataError) as info:
        parse_models(payload, source="src")
    message = str(info.value)
    assert "src" in message
    assert "model #0" in message
    assert "'a/b'" in message
    assert "top_provider.is_moderated" in message
    assert "(and errors in 1 other model(s))" in message
    assert isinstance(info.value.__cause__, pydantic.ValidationError)


def test_bad_price_string_is_unknown_with_a_note() -> None:
    """A price that is no number at all reads as unknown, recorded for the note."""
    (model,) = parse_models([{"id": "a/b", "pricing": {"prompt": "cheap"}}], source="src")
    assert model.pricing is not None and model.pricing.prompt is None
    assert model.out_of_range == {"pricing.prompt": 'a string "cheap"'}


def test_read_json_truncated_file_gives_line() -> None:
    """A truncated JSON file raises MetadataError naming the file and the line."""
    path = FIXTURES / "models-truncated.json"
    with pytest.raises(MetadataError) as info:
        read_json(path, source=str(path))
    message = str(info.value)
    assert "models-truncated.json" in message
    assert "line 6, column 24" in message
    assert "truncated" in message


def test_read_json_html_file() -> None:
    """An HTML page saved as .json is reported as HTML."""
    with pytest.raises(MetadataError, match="looks like HTML"):
        read_json(FIXTURES / "models-html.json", source="page")


def test_read_json_missing_file(tmp_path: Path) -> None:
    """A missing file raises MetadataError naming it."""
    path = tmp_path / "nope.json"
    with pytest.raises(MetadataError, match=r"nope\.json: cannot read file"):
        read_json(path, source=str(path))


def test_read_json_not_utf8(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 raise MetadataError, not UnicodeDecodeError."""
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(MetadataError, match=r"latin1\.json"):
        read_json(path, source=str(path))


def test_error_response_file() -> None:
    """An API error body saved as a file is reported with its message."""
    payload = read_json(FIXTURES / "models-error-response.json", source="err")
    with pytest.raises(MetadataError, match="No auth credentials found"):
        parse_models(payload, source="err")


# --- endpoints ------------------------------------------------------------------------


def test_endpoints_fixture_and_routing_slug() -> None:
    """Endpoints parse; routing_slug prefers tag and falls back to a provider-name guess."""
    payload = read_json(FIXTURES / "endpoints-no-tag.json", source="ep")
    listing = parse_endpoints(payload, source="ep")
    assert listing.id == "acme/widget-1"
    untagged, tagged = listing.endpoints
    assert untagged.tag is None
    assert untagged.routing_slug == "acme-cloud"
    assert untagged.pricing is not None and untagged.pricing.discount == 0
    assert tagged.routing_slug == "other-host/fp8"
    assert tagged.status == -2
    assert tagged.uptime_last_30m == 97.5
    assert tagged.supports_tool_choice == {
        "auto": True,
        "none": True,
        "required": False,
        "function": False,
    }
    assert Endpoint().routing_slug is None


def test_parse_endpoints_accepts_bare_data_object() -> None:
    """The bare data object of an /endpoints response is accepted too."""
    listing = parse_endpoints({"id": "a/b", "endpoints": []}, source="x")
    assert listing.endpoints == ()


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"data": [{"id": "a/b"}]}, "parse_models"),
        ({"data": {"id": "a/b"}}, "no 'endpoints' array"),
        ("<html>", "HTML"),
        ({"error": {"code": 404, "message": "Model not found"}}, "Model not found"),
    ],
)
def test_parse_endpoints_bad_shapes(payload: object, fragment: str) -> None:
    """Payloads that are not /endpoints responses raise MetadataError naming the source."""
    with pytest.raises(MetadataError) as info:
        parse_endpoints(payload, source="ep-src")
    assert "ep-src" in str(info.value)
    assert fragment in str(info.value)


def test_parse_endpoints_field_error() -> None:
    """A bad endpoint field is wrapped with the model id and the field path."""
    payload = {"data": {"id": "a/b", "endpoints": [{"quantization": 5}]}}
    with pytest.raises(MetadataError, match=r"'a/b'.*endpoints\.0\.quantization"):
        parse_endpoints(payload, source="ep")


def test_parse_endpoints_bundle_keys_and_errors() -> None:
    """A bundle is keyed by its own keys; a bad member names its key; a non-bundle fails."""
    body = json.loads((FIXTURES / "endpoints-no-tag.json").read_text())
    bundle = {"fetched_at": "x", "note": "y", "endpoints": {"acme/widget-1:free": body}}
    parsed = parse_endpoints_bundle(bundle, source="b")
    assert list(parsed) == ["acme/widget-1:free"]
    assert parsed["acme/widget-1:free"].id == "acme/widget-1"
    with pytest.raises(MetadataError, match=r"b \[bad/one\]"):
        parse_endpoints_bundle({"endpoints": {"bad/one": {"data": []}}}, source="b")
    with pytest.raises(MetadataError, match="endpoints bundle"):
        parse_endpoints_bundle(body, source="b")


# --- the one-pass parser -------------------------------------------------------------


def _as_response(path: Path) -> bytes:
    """A file's models as a ``{"data": [...]}`` body (fixtures may be bare arrays)."""
    payload = read_json(path, source=path.name)
    return json.dumps(payload if isinstance(payload, dict) else {"data": payload}).encode()


@pytest.mark.parametrize(
    "path",
    [*sorted(OPENROUTER.glob("models-*.json")), *sorted(FIXTURES.glob("models-*.json"))],
    ids=lambda p: p.name,
)
def test_one_pass_parse_equals_decode_then_parse(path: Path) -> None:
    """parse_models_json gives exactly what decoding then parse_models gives (every
    shared snapshot and fixture that parses), prices and field sets included."""
    try:
        expected = parse_models(read_json(path, source=path.name), source=path.name)
    except MetadataError:
        assert parse_models_json(path.read_bytes()) is None
        return
    got = parse_models_json(_as_response(path))
    assert got == expected
    assert got is not None
    assert [m.model_fields_set for m in got] == [m.model_fields_set for m in expected]
    prices = [(m.pricing.prompt, m.pricing.completion) for m in got if m.pricing]
    assert all(type(p) is Decimal for pair in prices for p in pair if p is not None)


@pytest.mark.parametrize(
    "raw",
    [
        b'[{"id": "a/b"}]',  # a bare array: parse_models accepts it, the fast path does not
        b'{"data": [{"name": "no id"}]}',
        b'{"data": [{"id": "a/b", "alias_target": "many"}]}',  # parse_models mends it
        b'{"data": [{"id": "a/b"}',  # truncated
        b"<html>login</html>",
        b'{"error": {"code": 401, "message": "no"}}',
    ],
)
def test_one_pass_parse_declines_what_it_cannot_explain(raw: bytes) -> None:
    """Anything but a well-formed response returns None, so the caller's slower path
    (which names index, id and field) decides."""
    assert parse_models_json(raw) is None
