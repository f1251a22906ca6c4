"""Benchmark: how load, resolve, audit and lock scale with the size of the catalog.

Not a test (timings depend on the machine); the table is in docs/performance.md
("Scaling"). For each size (default 1,000, 10,000 and 50,000 models) a models list is
built from the largest shared snapshot (``models-all-2026-08-19.json``, else the
bundled seed) by repeating its entries with renamed ids (``openai/gpt-4o-mini`` stays,
copies become ``openai/gpt-4o-mini~2``, ...), written as compact JSON (no spaces) with
empty descriptions, so 50,000 models (about 66 MB) stay under the 64 MiB limit of a
metadata file; then one fresh process per size times:

1. ``Registry.load`` of the file with the example models.yaml and stages.yaml;
2. ``resolve()`` of every model (the figure per model should not grow with the size);
3. ``capc audit``'s work for the example stages' own pairs (``audit()``), and
4. ``capc lock``'s (``spool_lock``, its text written to ``os.devnull``) for the same
   pairs: both should cost the same at every size (proportional to the pairs, not to
   the catalog);

and reports its peak RSS. Each step is the median of ``--rounds`` runs (a fresh
registry each run, one untimed warm-up run first). After each load a full garbage
collection runs, untimed: the collector walks every object the load made (at 50,000
models about 10 ms a full collection), and without it that debt of the load lands in
whichever step comes next, at random. Last, with two sizes or more, the
goals of issue 19 these figures bear on, largest size against smallest, with ``met`` or
``NOT MET`` (``bench/goals.py``): resolve per model, the audit and the lock of the same
pairs each at most 2x (this machine's speed drifts that much between runs; a cost in
proportion to the catalog would be 50x from 1,000 to 50,000 models).

Then the lock's memory (``--lock-sizes``, default 1,000 and 10,000: the example stages
each listing that many models of a catalog of the largest size, so 4,000 and 40,000
pairs): one fresh process writes the lock as ``capc lock`` does (to a file, synced),
another only compiles the same pairs, dropping each result. Each reports its peak RSS,
and how far its RSS rose above what it held once the registry was loaded (the peak
after the load, where Linux can reset it: ``/proc/self/clear_refs``); the lock's own
memory is the difference, which should not grow with the lock's size.

Usage, from the repository root::

    python bench/scaling.py [--sizes 1000,10000,50000] [--rounds 3] [--lock-sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.goals import record, report

ROOT = Path(__file__).resolve().parents[1]
LARGEST = ROOT.parent / "shared" / "data" / "openrouter" / "models-all-2026-08-19.json"
SEED = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"


def build_snapshot(source: Path, size: int, target: Path) -> None:
    """Write a models list of ``size`` entries made from ``source``'s by renaming ids."""
    entries = json.loads(source.read_bytes())["data"]
    out = []
    for i in range(size):
        entry = dict(entries[i % len(entries)])
        entry["description"] = ""  # with compact JSON, 50,000 models stay under 64 MiB
        copy = i // len(entries)
        if copy:
            entry["id"] = f"{entry['id']}~{copy + 1}"
            if isinstance(entry.get("canonical_slug"), str):
                entry["canonical_slug"] = f"{entry['canonical_slug']}~{copy + 1}"
        out.append(entry)
    target.write_text(json.dumps({"data": out}, separators=(",", ":")), encoding="utf-8")


def write_lock_text(registry: Any, target: str, *, durable: bool = False) -> int:
    """``capc lock``'s work after the load: the lock of the registry's pairs, written to
    ``target`` (``os.devnull`` for the text alone, else through the atomic writer, synced),
    entry by entry where this checkout streams (``spool_lock``), else built whole.
    Returns the bytes written."""
    from compiler.artifacts import lock

    if not hasattr(lock, "spool_lock"):  # a checkout from before the streaming writer
        data = lock.dump_lock(lock.build_lock(registry)).encode("utf-8")
        if durable:
            lock.write_lock(data.decode("utf-8"), target)
        else:
            with open(target, "wb") as handle:
                handle.write(data)
        return len(data)
    with lock.spool_lock(registry) as spool:
        if durable:
            lock.write_lock(spool.chunks(), target)
            return Path(target).stat().st_size
        size = 0
        with open(target, "wb") as handle:
            for chunk in spool.chunks():
                size += handle.write(chunk)
        return size


def _rss_kib(field: str) -> int | None:
    """``VmRSS`` or ``VmHWM`` (peak) of this process in KiB, or None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def lock_memory_child(mode: str, snapshot: Path, stages: Path, out: Path) -> dict[str, float]:
    """In a fresh process: ``lock`` (as capc lock) or ``compile`` (each pair compiled and
    dropped) the pairs of ``stages``; peak RSS, the rise above the loaded registry, time."""
    import gc
    import resource

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from compiler.artifacts.lock import RECORDED_FAILURES
    from compiler.request import compile_request
    from registry.resolve.resolver import Registry

    gc.set_threshold(10_000)  # as compiler.cli.main.run sets it for a capc process
    registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml", stages=stages)
    loaded = _rss_kib("VmRSS") or 0
    # ru_maxrss is not this program's alone: Linux keeps the parent's peak across the
    # fork and exec that started it; VmHWM is this image's (the peak up to here).
    before = _rss_kib("VmHWM")
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")  # reset VmHWM: the peak from here on
        reset = True
    except OSError:
        reset = False
    start = time.perf_counter()
    pairs = size = 0
    if mode == "lock":
        size = write_lock_text(registry, str(out), durable=True)
        pairs = sum(len(registry.stage(s).models) for s in registry.stage_names())
    else:
        for stage in registry.stage_names():
            for model in registry.stage(stage).models:
                with contextlib.suppress(*RECORDED_FAILURES):
                    compile_request(stage, model, registry=registry)
                pairs += 1
    took = time.perf_counter() - start
    high = _rss_kib("VmHWM") if reset else None
    peak = max(before, high or 0) if before is not None \
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": took, "pairs": pairs, "bytes": size, "peak_kib": peak,
            "rise_kib": (high - loaded) if high is not None else float("nan")}


def lock_memory(
    source: Path, sizes: list[int], env: dict[str, str], tmp: Path
) -> list[dict[str, Any]]:
    """The lock-memory series (module docstring): one row per size, printed as it comes."""
    import yaml

    catalog = tmp / f"models-lock-{max(sizes)}.json"
    build_snapshot(source, max(sizes), catalog)
    ids = [e["id"] for e in json.loads(catalog.read_bytes())["data"]]
    print(f"\nlock memory: the example stages x N models of a {max(sizes):,}-model catalog; "
          "rise = peak RSS after the load minus RSS at the load")
    print(f"{'models':>7} {'pairs':>7} {'lock MB':>8} {'lock s':>7} {'peak MiB':>9} "
          f"{'compile peak':>12} {'rise MiB':>9} {'compile rise':>12} {'lock own MiB':>12}")
    rows = []
    for size in sizes:
        document = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
        for stage in document["stages"].values():
            stage["models"] = ids[:size]
            if "contract" in stage:
                path, _, name = stage["contract"].partition(":")
                stage["contract"] = f"{ROOT / path}:{name}"
        stages = tmp / f"stages-{size}.yaml"
        stages.write_text(yaml.safe_dump(document), encoding="utf-8")
        got = {}
        for mode in ("compile", "lock"):
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--lock-child", mode,
                 str(catalog), str(stages), str(tmp / "capc.lock.json")],
                env=env, cwd=ROOT, capture_output=True, text=True, check=False)
            if out.returncode:
                raise RuntimeError(f"lock memory, {size} models, {mode}:\n{out.stderr.strip()}")
            got[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        lock, only = got["lock"], got["compile"]
        row = {"models": size, "pairs": lock["pairs"], "bytes": lock["bytes"],
               "seconds": lock["seconds"], "peak_mib": lock["peak_kib"] / 1024,
               "compile_peak_mib": only["peak_kib"] / 1024, "rise_mib": lock["rise_kib"] / 1024,
               "compile_rise_mib": only["rise_kib"] / 1024,
               "own_mib": (lock["rise_kib"] - only["rise_kib"]) / 1024}
        print(f"{size:>7} {row['pairs']:>7} {row['bytes'] / 1e6:>8.1f} {row['seconds']:>7.1f} "
              f"{row['peak_mib']:>9.0f} {row['compile_peak_mib']:>12.0f} {row['rise_mib']:>9.0f} "
              f"{row['compile_rise_mib']:>12.0f} {row['own_mib']:>12.0f}")
        rows.append(row)
        (tmp / "capc.lock.json").unlink(missing_ok=True)
    return rows


def child(snapshot: Path, rounds: int) -> dict[str, float]:
    """Run in the measuring process: the medians in seconds, and peak RSS in KiB."""
    import resource

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from compiler.artifacts.audit import audit
    from registry.resolve.resolver import Registry

    def load() -> Registry:
        registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                                 stages=ROOT / "stages.yaml")
        gc.collect()  # the load's own debt to the collector (its objects), paid untimed
        return registry

    times: dict[str, list[float]] = {"load": [], "resolve": [], "audit": [], "lock": []}
    pairs = 0
    for round_ in range(rounds + 1):
        start = time.perf_counter()
        registry = load()
        loaded = time.perf_counter()
        for model_id in registry.catalog.ids():
            registry.resolve(model_id)
        resolved = time.perf_counter()
        registry = load()
        start_audit = time.perf_counter()
        rows = audit(registry)
        audited = time.perf_counter()
        registry = load()
        start_lock = time.perf_counter()
        write_lock_text(registry, os.devnull)
        locked = time.perf_counter()
        pairs = len(rows)
        if round_:  # the first round is the warm-up
            times["load"].append(loaded - start)
            times["resolve"].append(resolved - loaded)
            times["audit"].append(audited - start_audit)
            times["lock"].append(locked - start_lock)
        del registry, rows
    result = {k: statistics.median(v) for k, v in times.items()}
    result["pairs"] = pairs
    # VmHWM: this image's peak (ru_maxrss keeps the parent's across fork and exec)
    result["rss_kib"] = _rss_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the series and print the table (exit status 2 on a bad argument)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000",
                        help="catalog sizes, comma-separated (default 1000,10000,50000)")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per size (default 3)")
    parser.add_argument("--lock-sizes", default="1000,10000",
                        help="models per stage of the lock-memory series, comma-separated "
                        "(default 1000,10000; 0 skips it)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lock-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.rounds)))
        return 0
    if args.lock_child is not None:
        mode, *paths = args.lock_child
        print(json.dumps(lock_memory_child(mode, *(Path(p) for p in paths))))
        return 0
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        lock_sizes = [int(s) for s in args.lock_sizes.split(",") if s and int(s)]
    except ValueError:
        print(f"bench: --sizes {args.sizes!r} or --lock-sizes {args.lock_sizes!r}: not whole "
              "numbers", file=sys.stderr)
        return 2
    if args.rounds < 1 or any(s < 1 for s in sizes + lock_sizes):
        print("bench: --rounds and every size must be at least 1", file=sys.stderr)
        return 2
    source = LARGEST if LARGEST.is_file() else SEED
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, models from {source.name}, "
          f"medians of {args.rounds} runs")
    print(f"{'models':>7} {'load ms':>9} {'resolve ms':>11} {'us/model':>9} {'audit ms':>9} "
          f"{'lock ms':>8} {'pairs':>6} {'us/pair':>8} {'lock/audit':>10} {'peak MiB':>9}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CAPC_OFFLINE"] = "1"
    measured: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="capc-scaling-") as tmp:
        env["CAPC_CACHE_DIR"] = tmp
        for size in sizes:
            snapshot = Path(tmp) / f"models-{size}.json"
            build_snapshot(source, size, snapshot)
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child", str(snapshot),
                 "--rounds", str(args.rounds)],
                env=env, cwd=ROOT, capture_output=True, text=True, check=False)
            if out.returncode:
                print(f"bench: size {size} failed:\n{out.stderr.strip()}", file=sys.stderr)
                return 1
            r = json.loads(out.stdout.strip().splitlines()[-1])
            pairs = int(r["pairs"])
            print(f"{size:>7} {r['load'] * 1e3:>9.1f} {r['resolve'] * 1e3:>11.1f} "
                  f"{r['resolve'] / size * 1e6:>9.1f} {r['audit'] * 1e3:>9.1f} "
                  f"{r['lock'] * 1e3:>8.1f} {pairs:>6} {r['audit'] / pairs * 1e6:>8.0f} "
                  f"{r['lock'] / r['audit']:>10.2f} {r['rss_kib'] / 1024:>9.1f}")
            snapshot.unlink()
            measured[size] = r
        if lock_sizes:
            try:
                lock_memory(source, lock_sizes, env, Path(tmp))
            except RuntimeError as exc:
                print(f"bench: {exc}", file=sys.stderr)
                return 1
    _goals(measured)
    return 0


def _goals(measured: dict[int, dict[str, float]]) -> None:
    """The goals of issue 19 the series bears on: the largest size against the smallest."""
    if len(measured) < 2:
        return
    small, big = min(measured), max(measured)
    a, b = measured[small], measured[big]
    versus = f"{big:,} models x {small:,}"
    record(f"resolve per model, {versus}", (b["resolve"] / big) / (a["resolve"] / small), 2,
           "x")
    record(f"audit of the stages.yaml pairs, {versus}", b["audit"] / a["audit"], 2, "x")
    record(f"lock of the same pairs, {versus}", b["lock"] / a["lock"], 2, "x")
    report()


if __name__ == "__main__":
    raise SystemExit(main())
