"""Benchmark: load the largest metadata snapshot from the cache and resolve every model.

Not a test (timings depend on the machine); the figure is recorded in
``docs/metadata.md``. What is timed, per round, in a fresh process state except for
Python's import cache:

1. ``registry.sources.load.load_metadata()`` with a fresh cached copy of
   ``models-all-2026-08-19.json`` (549 models, 1.28 MB): open the diskcache, read the
   entry, check its SHA-256, validate the fields resolution reads (no request is made;
   full ``ModelInfo`` objects are built only when asked for, which this does not do);
2. ``Registry.resolve(model_id)`` for every model in it, with no YAML declarations.

Each round's catalog and registry are freed after its timing ends, and a full garbage
collection runs before the next one starts, so no round pays for tearing down the
previous one or for a full collection of whatever else the process holds (which costs
in proportion to the whole heap, not to this work). One untimed warm-up round comes
first (it builds the core-field validator once, as any process does on its first load).

Usage, from the repository root::

    python bench/metadata_load.py [SNAPSHOT] [--rounds 30]

``SNAPSHOT`` (a models list in OpenRouter's ``{"data": [...]}`` shape) defaults to
``../shared/data/openrouter/models-all-2026-08-19.json``, or the bundled seed when
``../shared`` is absent. Prints the best, median and p90 milliseconds of each step;
``bench/run.py`` reports the same measure as its item 4.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LARGEST = ROOT.parent / "shared" / "data" / "openrouter" / "models-all-2026-08-19.json"
SEED = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"


def measure(snapshot: Path, rounds: int) -> tuple[list[float], list[float], int]:
    """Store ``snapshot`` in a fresh cache, then time loading it back and resolving it.

    Args:
        snapshot: a models list in OpenRouter's shape.
        rounds: timed rounds (after one untimed warm-up round).

    Returns:
        Seconds per round for the load, seconds per round for resolving every model,
        and how many models the snapshot lists.

    Raises:
        registry.errors.MetadataError: the snapshot is not a models list the cache takes.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from registry.resolve.resolver import Registry
    from registry.sources.cache import MetadataCache
    from registry.sources.load import load_metadata
    from registry.sources.settings import Settings
    from registry.sources.urls import models_url

    load_s: list[float] = []
    resolve_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="capc-bench-") as tmp:
        settings = Settings(cache_dir=Path(tmp), offline=True)
        with MetadataCache(settings.cache_dir) as cache:
            cache.store(
                models_url(settings),
                snapshot.read_bytes(),
                kind="models",
                fetched_at=datetime.now(UTC),
                max_shrink=settings.max_shrink,
            )
        warm = Registry(catalog=load_metadata(settings=settings))
        for model_id in warm.catalog.ids():
            warm.resolve(model_id)
        count = len(warm.catalog)
        del warm
        for _ in range(rounds):
            gc.collect()  # start each round from a settled heap, as a new process does
            start = time.perf_counter()
            catalog = load_metadata(settings=settings)
            loaded = time.perf_counter()
            registry = Registry(catalog=catalog)
            for model_id in catalog.ids():
                registry.resolve(model_id)
            done = time.perf_counter()
            if catalog.origin != "cache":
                raise RuntimeError(f"not served from the cache: {catalog.note}")
            load_s.append(loaded - start)
            resolve_s.append(done - loaded)
            # Free this round's objects outside the timed region: a process that loads
            # once never pays for tearing down an earlier registry.
            del catalog, registry
    return load_s, resolve_s, count


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0, or 2 when the snapshot is missing or not a models list.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.run import positive, stats
    from registry.errors import MetadataError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", nargs="?", type=Path, default=None,
                        help="models list (default: the largest shared snapshot, else the seed)")
    parser.add_argument("--rounds", type=positive, default=30, help="timed rounds (default 30)")
    args = parser.parse_args(argv)
    snapshot: Path = args.snapshot or (LARGEST if LARGEST.is_file() else SEED)
    if not snapshot.is_file():
        print(f"bench: {snapshot}: no such file", file=sys.stderr)
        return 2
    if args.snapshot is None and snapshot == SEED:
        print(f"bench: {LARGEST} is absent; using the bundled seed", file=sys.stderr)
    try:
        load_s, resolve_s, count = measure(snapshot, args.rounds)
    except MetadataError as exc:
        print(f"bench: {snapshot}: not a models list the cache takes ({exc})", file=sys.stderr)
        return 2
    total = [a + b for a, b in zip(load_s, resolve_s, strict=True)]
    print(f"snapshot: {snapshot.name} ({snapshot.stat().st_size} bytes, {count} models)")
    steps = (("load from cache", load_s), ("resolve all", resolve_s), ("total", total))
    for name, values in steps:
        print(f"{name:>16}: best {min(values) * 1e3:7.1f} ms   {stats(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
