"""Generate the bundled endpoints seed ``registry/data/seed-endpoints-2026-05-18.json``.

The endpoints seed lets the registry know, offline, which provider endpoints serve the
models the example stages name. It is a subset of the 2026-05-18 bundle of
``GET /api/v1/models/{author}/{slug}/endpoints`` responses
(``shared/data/openrouter/endpoints-all-2026-05-18.json``, see that folder's
``SOURCES.md``).

What the script does, deterministically:

1. read the bundle (``{"fetched_at", "note", "endpoints": {model_id: <response>}}``);
2. keep the models that ``stages.yaml`` names (:meth:`StagesFile.model_ids
   <registry.declarations.files.StagesFile.model_ids>`: each stage's ``models`` and
   ``overrides`` keys); it fails if one is missing from the bundle;
3. keep only factual keys: :data:`KEEP_MODEL_KEYS` of each response's ``data`` object
   and :data:`KEEP_ENDPOINT_KEYS` of each endpoint. The model description (prose) is
   dropped, and so are the live latency and throughput figures (null in this
   unauthenticated fetch) and every key not listed;
4. write ``{"fetched_at", "note", "endpoints"}`` with the models sorted by id,
   ``indent=1`` and a trailing newline; endpoints keep their published order and key
   order inside an object follows the bundle; ``fetched_at`` is the bundle's own;
5. parse the result with :func:`registry.metadata.parse.parse_endpoints_bundle` as a
   sanity check.

Usage, from the repository root (all arguments optional)::

    python scripts/make_seed_endpoints.py [BUNDLE] [--stages stages.yaml]
        [--out registry/data/seed-endpoints-2026-05-18.json]

``BUNDLE`` defaults to ``../shared/data/openrouter/endpoints-all-2026-05-18.json``
relative to the repository root. Running it twice gives byte-identical output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BUNDLE = (
    REPO_ROOT.parent / "shared" / "data" / "openrouter" / "endpoints-all-2026-05-18.json"
)
DEFAULT_STAGES = REPO_ROOT / "stages.yaml"
DEFAULT_OUT = REPO_ROOT / "registry" / "data" / "seed-endpoints-2026-05-18.json"

KEEP_MODEL_KEYS: tuple[str, ...] = ("id", "name", "created", "architecture", "endpoints")
"""Keys of a response's ``data`` object copied into the seed (``description`` is not)."""

KEEP_ENDPOINT_KEYS: tuple[str, ...] = (
    "name",
    "model_id",
    "model_name",
    "provider_name",
    "tag",
    "context_length",
    "max_completion_tokens",
    "max_prompt_tokens",
    "quantization",
    "supported_parameters",
    "status",
    "pricing",
    "supports_tool_choice",
    "uptime_last_5m",
    "uptime_last_30m",
    "uptime_last_1d",
)
"""Keys of an endpoint copied into the seed; every other key is dropped."""

NOTE = (
    "bundled endpoints seed: the /endpoints responses of the models stages.yaml names, "
    "cut from endpoints-all-2026-05-18.json by scripts/make_seed_endpoints.py; "
    "factual keys only"
)
"""The ``note`` of the written bundle."""


def _trim_response(model_id: str, response: object) -> dict[str, object]:
    """Keep the factual keys of one ``/endpoints`` response (``{"data": {...}}``)."""
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("endpoints"), list):
        raise SystemExit(f"{model_id}: not an /endpoints response ({{'data': {{'endpoints'}}}})")
    kept: dict[str, object] = {k: v for k, v in data.items() if k in KEEP_MODEL_KEYS}
    kept["endpoints"] = [
        {k: v for k, v in endpoint.items() if k in KEEP_ENDPOINT_KEYS}
        for endpoint in data["endpoints"]
        if isinstance(endpoint, dict)
    ]
    return {"data": kept}


def build_seed(bundle: object, ids: tuple[str, ...]) -> dict[str, object]:
    """Select and trim the seed models from a decoded endpoints bundle.

    Args:
        bundle: decoded ``{"fetched_at", "note", "endpoints": {model_id: response}}``.
        ids: model ids to keep (bundle keys).

    Returns:
        ``{"fetched_at", "note", "endpoints"}`` with the chosen responses sorted by
        model id, each trimmed to :data:`KEEP_MODEL_KEYS` and :data:`KEEP_ENDPOINT_KEYS`.

    Raises:
        SystemExit: the bundle is not such a bundle, ``ids`` is empty, or an id is
            missing from the bundle.
    """
    bodies = bundle.get("endpoints") if isinstance(bundle, dict) else None
    if not isinstance(bundle, dict) or not isinstance(bodies, dict):
        raise SystemExit("bundle is not an endpoints bundle ({'endpoints': {model_id: ...}})")
    if not ids:
        raise SystemExit("no model ids to keep (the stages file names no model)")
    missing = [i for i in ids if i not in bodies]
    if missing:
        raise SystemExit(f"ids missing from the bundle: {', '.join(missing)}")
    return {
        "fetched_at": bundle.get("fetched_at"),
        "note": NOTE,
        "endpoints": {i: _trim_response(i, bodies[i]) for i in sorted(set(ids))},
    }


def main(argv: list[str] | None = None) -> int:
    """Write the endpoints seed file.

    Args:
        argv: command-line arguments (without the program name); ``None`` uses sys.argv.

    Returns:
        The process exit status (0 on success).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("bundle", nargs="?", type=Path, default=DEFAULT_BUNDLE)
    parser.add_argument("--stages", type=Path, default=DEFAULT_STAGES)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    from registry.declarations.files import load_stages_file
    from registry.metadata.parse import parse_endpoints_bundle

    ids = load_stages_file(args.stages).model_ids()
    bundle = json.loads(args.bundle.read_text(encoding="utf-8"))
    text = json.dumps(build_seed(bundle, ids), indent=1) + "\n"

    parsed = parse_endpoints_bundle(json.loads(text), source=str(args.out))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    count = sum(len(e.endpoints) for e in parsed.values())
    print(f"wrote {len(parsed)} models, {count} endpoints to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
