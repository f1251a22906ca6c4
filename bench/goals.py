"""The speed goals of issue 19 and the measures only they need (used by ``bench/run.py``).

:func:`record` keeps a measured figure beside its goal; :func:`report` prints every goal
with its figure and ``met`` / ``NOT MET``. :func:`projection_measures` and
:func:`lock_vs_audit` time what the other measures of ``bench/run.py`` do not: the first
projection of each example contract against pydantic's ``model_json_schema()``,
projection at 1,000 and 10,000 fields, ``capc lock``'s work against ``capc
audit``'s for the same pairs, and the lock's own memory as the lock grows
(:func:`lock_memory_goal`). The scaling series (1k to 50k models) is
``bench/scaling.py``.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: (goal, figure text, met) in the order recorded.
RESULTS: list[tuple[str, str, bool]] = []


def record(goal: str, value: float, limit: float, unit: str) -> None:
    """Keep ``value`` (in ``unit``) against the goal ``value <= limit``."""
    RESULTS.append((f"{goal} <= {limit:g} {unit}", f"{value:.2f} {unit}", value <= limit))


def report() -> None:
    """Print every recorded goal beside its figure, and whether it is met."""
    print("\ngoals (issue 19), medians of this run:")
    width = max((len(goal) for goal, _, _ in RESULTS), default=0)
    for goal, figure, met in RESULTS:
        print(f"  {goal:{width}}  {figure:>12}  {'met' if met else 'NOT MET'}")


def projection_measures(rounds: int) -> None:
    """First projections of the example contracts, and projection at 1k and 10k fields."""
    import pydantic

    import contracts.examples as examples
    from compiler.schema import projection
    from compiler.schema.budgets import ProjectionBudget
    from compiler.schema.contract import OutputContract
    from compiler.schema.dialects import DIALECTS

    # The earlier measures leave a large heap; a full collection would scan it all and
    # land in a random sample. Freeze it, as a fresh process (a small heap) would not pay.
    gc.collect()
    gc.freeze()
    try:
        _projections(rounds, pydantic, examples, projection, ProjectionBudget, OutputContract,
                     DIALECTS)
    finally:
        gc.unfreeze()


def _projections(rounds: int, pydantic: Any, examples: Any, projection: Any, budget_type: Any,
                 contract_type: Any, dialects: Any) -> None:
    OutputContract, DIALECTS = contract_type, dialects
    for name in ("Invoice", "TicketLabel", "Analysis"):
        ratios = []
        for dialect in ("openai-strict", "anthropic", "gemini"):
            for _ in range(rounds):
                # A new class each time, so neither pydantic nor the projection cache helps.
                fresh = pydantic.create_model(name, __base__=getattr(examples, name))
                start = time.perf_counter()
                fresh.model_json_schema()
                schema_s = time.perf_counter() - start
                contract = OutputContract.from_type(fresh)
                projection._CACHE.clear()
                start = time.perf_counter()
                projection.project(contract, DIALECTS[dialect])
                ratios.append((time.perf_counter() - start) / schema_s)
        ratio = statistics.median(ratios)
        print(f"10. first projection of {name:11} / model_json_schema(): median {ratio:.2f}x "
              "(openai-strict, anthropic, gemini)")
        record(f"first projection of {name}, x model_json_schema()", ratio, 2, "x")
    big = budget_type(nodes=1_000_000, bytes=100_000_000)
    wide = {fields: OutputContract.from_type(pydantic.create_model(
        f"Wide{fields}", **{f"f{i}": (int, 0) for i in range(fields)})) for fields in (1000, 10000)}
    strict = DIALECTS["openai-strict"]
    # 10,000 properties are over openai-strict's 5,000 (a blocker, so the dialect rules are
    # not checked again); without its size limits both sizes are enforceable: like for like.
    unlimited = dataclasses.replace(strict, max_properties=None, max_total_chars=None)
    for label, dialect in (("openai-strict", strict), ("openai-strict, no size limits", unlimited)):
        took: dict[int, list[float]] = {1000: [], 10000: []}
        for _ in range(max(3, rounds // 3)):  # interleaved, so drift hits both sizes alike
            for fields, contract in wide.items():
                # As in measure 11: the earlier rounds' garbage, and the collector's count
                # of objects promoted since its last full pass, are not this round's.
                gc.collect()
                start = time.perf_counter()
                projection.project(contract, dialect, big)
                took[fields].append(time.perf_counter() - start)
        small, large = statistics.median(took[1000]), statistics.median(took[10000])
        print(f"10. {label} projection of 1,000 / 10,000 fields: median {small * 1e3:.1f} / "
              f"{large * 1e3:.1f} ms ({large / small:.2f}x)")
        record(f"projection of 10,000 fields, x 1,000 fields ({label})", large / small, 10, "x")
    small_calls, large_calls = (_calls(lambda c=contract: projection.project(c, unlimited, big))
                                for contract in wide.values())
    print(f"10. the same without size limits, function calls (deterministic, not a goal): "
          f"{small_calls:,} / {large_calls:,} ({large_calls / small_calls:.2f}x)")
    took = {1000: [], 10000: []}
    for _ in range(max(3, rounds // 3)):  # for scale: pydantic's own walk of the same models
        for fields, contract in wide.items():
            gc.collect()
            start = time.perf_counter()
            contract.target.model_json_schema()
            took[fields].append(time.perf_counter() - start)
    small, large = statistics.median(took[1000]), statistics.median(took[10000])
    print(f"10. pydantic's model_json_schema() of the same two models (for scale, not a goal): "
          f"{small * 1e3:.1f} / {large * 1e3:.1f} ms ({large / small:.2f}x)")


def _calls(work: Callable[[], Any]) -> int:
    """The Python and C function calls ``work()`` makes (cProfile's count; the same on
    any load)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.runcall(work)
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def lock_vs_audit(snapshot: Path, root: Path, rounds: int, every: Path | None = None) -> None:
    """``capc lock``'s work against ``capc audit``'s for the same pairs, three ways:

    - in-process, the stages.yaml pairs: ``spool_lock`` (its text written to
      ``os.devnull``) against ``audit()``, a fresh registry each run (load excluded),
      interleaved;
    - in-process, the same for ``every`` (the example stages x every model of the
      snapshot), when given;
    - as a user meets it: ``capc lock --output FILE`` against ``capc audit``, fresh
      processes, interleaved, the stages.yaml pairs and (when given) ``every``'s (load,
      imports and output included).
    """
    from bench.scaling import write_lock_text
    from compiler.artifacts.audit import audit
    from registry.resolve.resolver import Registry

    def lock(registry: Registry) -> None:
        write_lock_text(registry, os.devnull)

    def compare(stages: Path, samples: int) -> tuple[float, float]:
        def timed(work: Callable[[Registry], Any]) -> float:
            registry = Registry.load(metadata=snapshot, models=root / "models.yaml",
                                     stages=stages)
            gc.collect()  # the last run's garbage is not this run's to collect
            start = time.perf_counter()
            work(registry)
            return time.perf_counter() - start

        timed(audit)
        timed(lock)
        audits, locks = [], []
        for _ in range(samples):  # interleaved, so drift hits both alike
            audits.append(timed(audit))
            locks.append(timed(lock))
        return statistics.median(audits), statistics.median(locks)

    a, b = compare(root / "stages.yaml", max(15, rounds))
    print(f"11. stages.yaml pairs of {snapshot.name}, in-process: audit {a * 1e3:.1f} ms, "
          f"lock {b * 1e3:.1f} ms ({b / a:.2f}x)")
    record("capc lock, x audit of the same pairs (stages.yaml, in-process)", b / a, 1.2, "x")
    if every is not None:
        a, b = compare(every, max(3, rounds // 3))
        print(f"11. every example stage x every model of {snapshot.name}, in-process: "
              f"audit {a * 1e3:.0f} ms, lock {b * 1e3:.0f} ms ({b / a:.2f}x)")
        record("capc lock, x audit of the same pairs (every model, in-process)", b / a, 1.2,
               "x")
    a, b = _lock_audit_processes(snapshot, root, root / "stages.yaml", max(5, rounds))
    print(f"11. capc audit of the stages.yaml pairs of {snapshot.name}: {a * 1e3:.0f} ms; "
          f"capc lock --output FILE: {b * 1e3:.0f} ms ({b / a:.2f}x; fresh processes)")
    record("capc lock, x capc audit of the same pairs (fresh processes)", b / a, 1.2, "x")
    if every is not None:
        a, b = _lock_audit_processes(snapshot, root, every, max(3, rounds // 3))
        print(f"11. capc audit of every example stage x every model of {snapshot.name}: "
              f"{a * 1e3:.0f} ms; capc lock --output FILE: {b * 1e3:.0f} ms ({b / a:.2f}x; "
              "fresh processes)")
        record("capc lock, x capc audit of the same pairs (every model, fresh processes)",
               b / a, 1.2, "x")


def _lock_audit_processes(snapshot: Path, root: Path, stages: Path,
                          samples: int) -> tuple[float, float]:
    """Median wall seconds of ``capc audit`` and of ``capc lock --output FILE`` (the pairs
    of ``stages``), each a fresh process, interleaved, after one warm-up each; the
    audit's table goes to ``os.devnull``, as the lock's text goes to its file."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CAPC_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory(prefix="capc-bench-lock-") as tmp:
        env["CAPC_CACHE_DIR"] = str(Path(tmp) / "cache")
        base = [sys.executable, "-m", "compiler"]
        given = ["--metadata", str(snapshot), "--models", str(root / "models.yaml"),
                 "--stages", str(stages)]
        commands = ([*base, "audit", *given],
                    [*base, "lock", *given, "--output", str(Path(tmp) / "capc.lock.json")])

        def run(argv: list[str]) -> float:
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=root, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, check=False)
            took = time.perf_counter() - start
            if done.returncode not in (0, 1):  # 1: some pair failed, as in the audit
                raise SystemExit(f"bench: {' '.join(argv)} failed:\n{done.stderr.decode()}")
            return took

        for argv in commands:
            run(argv)
        took: list[list[float]] = [[], []]
        for _ in range(samples):
            for index, argv in enumerate(commands):
                took[index].append(run(argv))
    return statistics.median(took[0]), statistics.median(took[1])


def lock_memory_goal(source: Path) -> None:
    """The lock's own memory at 4,000 and 20,000 pairs (``bench/scaling.py``'s series on
    a 5,000-model catalog): how much it grows per byte the lock grows."""
    from bench.scaling import lock_memory

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CAPC_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory(prefix="capc-bench-lock-") as tmp:
        env["CAPC_CACHE_DIR"] = tmp
        small, large = lock_memory(source, [1000, 5000], env, Path(tmp))
    growth = (large["own_mib"] - small["own_mib"]) * 2**20 / (large["bytes"] - small["bytes"])
    print(f"11. capc lock's own memory (above compiling the same pairs): "
          f"{small['own_mib']:.0f} MiB at {small['pairs']:,} pairs, {large['own_mib']:.0f} MiB "
          f"at {large['pairs']:,} ({large['bytes'] / 1e6:.0f} MB of lock): "
          f"{growth * 100:.1f}% of the lock's growth")
    record("capc lock's own memory, growth / lock size growth", growth * 100, 10, "%")
