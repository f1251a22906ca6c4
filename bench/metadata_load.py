"""Benchmark: load the largest metadata snapshot from the cache and resolve every model.

Not a test (timings depend on the machine); the figure is recorded in
``docs/metadata.md``. What is timed, per round, in a fresh process state except for
Python's import cache:

1. ``registry.sources.load_metadata()`` with a fresh cached copy of
   ``models-all-2026-08-19.json`` (549 models, 1.28 MB): open the diskcache, read the
   entry, check its SHA-256, validate the fields resolution reads (no request is made;
   full ``ModelInfo`` objects are built only when asked for, which this does not do);
2. ``Registry.resolve(model_id)`` for every model in it, with no YAML declarations.

Each round's catalog and registry are freed after its timing ends, so no round pays
for tearing down the previous one. One untimed warm-up round comes first (it builds the
core-field validator once, as any process does on its first load).

Usage, from the repository root::

    python bench/metadata_load.py [SNAPSHOT] [--rounds 20]

``SNAPSHOT`` defaults to ``../shared/data/openrouter/models-all-2026-08-19.json``.
Prints the best, median and p90 milliseconds of each step.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SNAPSHOT = ROOT.parent / "shared" / "data" / "openrouter" / "models-all-2026-08-19.json"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0, or 2 when the snapshot is missing.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=DEFAULT_SNAPSHOT)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    if not args.snapshot.is_file():
        print(f"bench: {args.snapshot}: no such file", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from bench.run import stats
    from registry.cache import MetadataCache
    from registry.fetch import models_url
    from registry.resolver import Registry
    from registry.settings import Settings
    from registry.sources import load_metadata

    payload = args.snapshot.read_bytes()
    load_ms: list[float] = []
    resolve_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(cache_dir=Path(tmp), offline=False)
        with MetadataCache(settings.cache_dir) as cache:
            cache.store(
                models_url(settings),
                payload,
                kind="models",
                fetched_at=datetime.now(UTC),
                max_shrink=settings.max_shrink,
            )
        count = 0
        warm = Registry(catalog=load_metadata(settings=settings))
        for model_id in warm.catalog.ids():
            warm.resolve(model_id)
        del warm
        for _ in range(args.rounds):
            start = time.perf_counter()
            catalog = load_metadata(settings=settings)
            loaded = time.perf_counter()
            registry = Registry(catalog=catalog)
            for model_id in catalog.ids():
                registry.resolve(model_id)
            done = time.perf_counter()
            assert catalog.origin == "cache", catalog.note
            count = len(catalog)
            load_ms.append((loaded - start) * 1000)
            resolve_ms.append((done - loaded) * 1000)
            # Free this round's objects outside the timed region: a process that loads
            # once never pays for tearing down an earlier registry.
            del catalog, registry
    total = [a + b for a, b in zip(load_ms, resolve_ms, strict=True)]
    print(f"snapshot: {args.snapshot.name} ({len(payload)} bytes, {count} models)")
    steps = (("load from cache", load_ms), ("resolve all", resolve_ms), ("total", total))
    for name, values in steps:
        print(f"{name:>16}: best {min(values):7.1f} ms   {stats([v / 1000 for v in values])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
