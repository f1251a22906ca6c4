"""Generate the bundled seed catalog ``registry/data/seed-models-2026-08-19.json``.

The seed lets the registry work offline with no metadata file: it is a subset of
OpenRouter's ``GET /api/v1/models`` snapshot of 2026-08-19
(``shared/data/openrouter/models-2026-08-19.json``, see that folder's ``SOURCES.md``).

What the script does, deterministically:

1. read the snapshot (``{"data": [...]}``);
2. keep the models listed in :data:`SEED_IDS` (it fails if one is missing, so a new
   snapshot cannot silently drop a model);
3. keep only factual keys (:data:`KEEP_KEYS`): ids, names, dates, limits, prices,
   parameters and reasoning options. Descriptions, benchmarks, links, Hugging Face ids,
   voices and alias targets are dropped;
4. write ``{"data": [...]}`` (the shape of ``GET /api/v1/models``) sorted by id, with
   ``indent=1`` and a trailing newline; key order inside a model follows the snapshot;
5. parse the result with :func:`registry.metadata.parse.parse_models` as a sanity check.

Usage, from the repository root (both arguments optional)::

    python scripts/make_seed.py [SNAPSHOT] [--out registry/data/seed-models-2026-08-19.json]

``SNAPSHOT`` defaults to ``../shared/data/openrouter/models-2026-08-19.json`` relative to
the repository root. Running it twice gives byte-identical output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SNAPSHOT = REPO_ROOT.parent / "shared" / "data" / "openrouter" / "models-2026-08-19.json"
DEFAULT_OUT = REPO_ROOT / "registry" / "data" / "seed-models-2026-08-19.json"

KEEP_KEYS: tuple[str, ...] = (
    "id",
    "canonical_slug",
    "name",
    "created",
    "context_length",
    "architecture",
    "pricing",
    "top_provider",
    "per_request_limits",
    "supported_parameters",
    "default_parameters",
    "reasoning",
    "expiration_date",
    "knowledge_cutoff",
)
"""Model keys copied into the seed; every other key is dropped."""

SEED_IDS: tuple[str, ...] = (
    # OpenAI: legacy chat, GPT-4o/4.1, o-series reasoning, GPT-5 family, open weights
    "openai/gpt-3.5-turbo",
    "openai/gpt-4o-mini",
    "openai/gpt-4o",
    "openai/gpt-4.1",
    "openai/gpt-4.1-mini",
    "openai/o1",
    "openai/o3-mini",
    "openai/o3",
    "openai/o4-mini",
    "openai/gpt-5",
    "openai/gpt-5-mini",
    "openai/gpt-5.1",
    "openai/gpt-5.2",
    "openai/gpt-5.4",
    "openai/gpt-5.5",
    "openai/gpt-oss-120b",
    # Anthropic: no reasoning (3 Haiku), reasoning without structured_outputs (Sonnet 4,
    # Opus 4.1), and current models
    "anthropic/claude-3-haiku",
    "anthropic/claude-sonnet-4",
    "anthropic/claude-opus-4.1",
    "anthropic/claude-haiku-4.5",
    "anthropic/claude-sonnet-4.5",
    "anthropic/claude-sonnet-4.6",
    "anthropic/claude-opus-4.6",
    # Google: Gemini 2.5 / 3 / 3.1 and open-weight Gemma
    "google/gemini-2.5-flash-lite",
    "google/gemini-2.5-flash",
    "google/gemini-2.5-pro",
    "google/gemini-3-flash-preview",
    "google/gemini-3.1-pro-preview",
    "google/gemma-3-27b-it",
    # Meta Llama
    "meta-llama/llama-3.1-8b-instruct",
    "meta-llama/llama-3.3-70b-instruct",
    "meta-llama/llama-4-maverick",
    "meta-llama/llama-4-scout",
    # Mistral (mistral-small-3.1 has no structured_outputs)
    "mistralai/mistral-large",
    "mistralai/mistral-medium-3.1",
    "mistralai/mistral-small-3.2-24b-instruct",
    "mistralai/mistral-small-3.1-24b-instruct",
    "mistralai/mistral-nemo",
    "mistralai/codestral-2508",
    # DeepSeek (v4-pro has time-of-day pricing overrides)
    "deepseek/deepseek-chat",
    "deepseek/deepseek-r1",
    "deepseek/deepseek-chat-v3.1",
    "deepseek/deepseek-v3.2",
    "deepseek/deepseek-v4-pro",
    # Qwen (qwen3-235b-a22b reasons but has no structured_outputs)
    "qwen/qwen-2.5-72b-instruct",
    "qwen/qwen3-32b",
    "qwen/qwen3-235b-a22b",
    "qwen/qwen3-coder",
    "qwen/qwen3-max",
    # xAI (the 2026-08-19 snapshot lists grok-4.20, 4.3, 4.5, 4.6 and build-0.1)
    "x-ai/grok-4.20",
    "x-ai/grok-4.3",
    # OpenRouter's router: prices are "-1" (variable), no reasoning object
    "openrouter/auto",
)
"""Model ids in the seed (all present in the 2026-08-19 snapshot)."""


def build_seed(
    snapshot: object, ids: tuple[str, ...] = SEED_IDS
) -> dict[str, list[dict[str, object]]]:
    """Select and trim the seed models from a decoded models snapshot.

    Args:
        snapshot: decoded ``GET /api/v1/models`` response (``{"data": [...]}``).
        ids: model ids to keep.

    Returns:
        ``{"data": [...]}`` with the chosen models sorted by id, each limited to
        :data:`KEEP_KEYS`.

    Raises:
        SystemExit: the snapshot is not a models list, or an id is missing from it.
    """
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("data"), list):
        raise SystemExit("snapshot is not a models list ({'data': [...]})")
    by_id = {m["id"]: m for m in snapshot["data"] if isinstance(m, dict) and "id" in m}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise SystemExit(f"ids missing from the snapshot: {', '.join(missing)}")
    models = [{k: v for k, v in by_id[i].items() if k in KEEP_KEYS} for i in sorted(set(ids))]
    return {"data": models}


def main(argv: list[str] | None = None) -> int:
    """Write the seed file.

    Args:
        argv: command-line arguments (without the program name); ``None`` uses sys.argv.

    Returns:
        The process exit status (0 on success).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("snapshot", nargs="?", type=Path, default=DEFAULT_SNAPSHOT)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    snapshot = json.loads(args.snapshot.read_text(encoding="utf-8"))
    seed = build_seed(snapshot)
    text = json.dumps(seed, indent=1) + "\n"

    from registry.metadata.parse import parse_models

    parsed = parse_models(json.loads(text), source=str(args.out))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(parsed)} models to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
