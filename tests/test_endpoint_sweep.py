"""Pinned to each single endpoint in turn, the body fits that endpoint (2026-05-18 data).

``models-2026-05-18.json`` and ``endpoints-all-2026-05-18.json`` come from one fetch,
so every model's real endpoints are known. One process, one registry; the benchmark
``bench/endpoint_sweep.py`` times the same sweep.
"""

from __future__ import annotations

import pytest

from compiler import Intent, compile_request
from compiler.errors import PromptTooLongError
from compiler.passes.routing import needed_parameters
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

MODELS = OPENROUTER / "models-2026-05-18.json"
ENDPOINTS = OPENROUTER / "endpoints-all-2026-05-18.json"
pytestmark = pytest.mark.skipif(not ENDPOINTS.is_file(), reason="../shared data absent")
MESSAGES = [{"role": "user", "content": "Please work on the attached text."}]


def test_pinned_and_unpinned_endpoint_sweep() -> None:
    """Each model x stage x pinned endpoint fits it; unpinned, one endpoint serves the body."""
    registry = Registry.load(metadata=MODELS, endpoints=ENDPOINTS, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    pinned = unpinned = 0
    for name in registry.stage_names():
        base = Intent.from_stage(name, registry.stage(name), base_dir=registry.stage_dir())
        for model_id in registry.catalog.ids():
            listed = registry.endpoints(model_id)
            endpoints = [] if listed is None else list(listed.endpoints)
            try:
                req = compile_request(base, model_id, MESSAGES, registry=registry)
            except PromptTooLongError:
                continue
            body_params = {k: v for k, v in req.body.items()
                           if k not in ("model", "messages", "provider")}
            if endpoints:
                needed = needed_parameters(body_params)
                assert any(needed <= set(e.supported_parameters) for e in endpoints), model_id
                unpinned += 1
            for endpoint in endpoints:
                tag = endpoint.routing_slug
                assert tag is not None
                intent = Intent(**{**_fields(base), "provider": {"only": [tag],
                                                                 "allow_fallbacks": False}})
                req = compile_request(intent, model_id, MESSAGES, registry=registry)
                sent = {k: v for k, v in req.body.items()
                        if k not in ("model", "messages", "provider")}
                matched = [e for e in endpoints if e.routing_slug == tag
                           or (e.routing_slug or "").startswith(tag + "/")]
                assert any(needed_parameters(sent) <= set(e.supported_parameters)
                           for e in matched), (name, model_id, tag)
                total = sent.get("max_tokens", sent.get("max_completion_tokens"))
                for e in matched:
                    if total is not None and e.max_completion_tokens:
                        assert total <= e.max_completion_tokens
                    if total is not None and e.context_length:
                        assert total < e.context_length
                assert req.body["provider"]["only"] == [tag] or req.report.by_kind(
                    "routing.restricted")
                pinned += 1
    assert unpinned > 300 * 4
    assert pinned > 900 * 4


def _fields(intent: Intent) -> dict[str, object]:
    """Return an Intent's fields as a dict (slots dataclass)."""
    return {f: getattr(intent, f) for f in intent.__dataclass_fields__}
