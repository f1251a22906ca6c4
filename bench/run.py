"""Benchmark of capability-compiler's speed goals (not a test; see docs/performance.md).

Usage, from the repository root::

    python bench/run.py [--rounds 15] [--snapshot PATH]

Prints, for each measure, the median and the 90th percentile over repeated runs after
one warm-up run (docs/performance.md says what each sample is):

1. whole-process wall time of ``capc compile classify_ticket openai/gpt-4o-mini
   --metadata SNAPSHOT`` (a cold interpreter each run) with a warm compile cache and
   with ``--no-cache`` (a full compile), of ``python -c "import compiler"``, and of
   ``python -c pass`` (the interpreter's own start-up, for scale);
2. warm ``compile_request`` latency per call for each example stage (new messages each
   call);
3. ``compile_request`` of every example stage x every model of the snapshot, total
   time (no rows: not ``audit()``); and the goal's example audit, ``audit()`` of every
   example stage x every model of the largest snapshot (load included), beside the
   compile-only loop over those pairs (not a goal);
4. loading the largest shared snapshot and resolving every model, from the file and
   from the disk cache (``bench/metadata_load.py`` runs the second alone);
5. ``CompiledRequest.parse_reply`` for a typical contract;
6. peak RSS of the CLI process;
7. the pinned-endpoint sweep of the 2026-05-18 data (every model x stage x endpoint);
8. with the ``bench`` extra installed (LiteLLM), LiteLLM's equivalent parameter
   mapping (``get_optional_params`` for an ``openrouter/...`` model with
   ``drop_params=True``) and the ratio;
9. the audit page (``capc audit --html``): ``audit()`` of the example stages, and of
   every example stage x every model of the snapshot, against what the page adds as
   the CLI makes it (the input files hashed in a thread beside the audit, then the
   wait for those hashes, the render, and the write over a page that changed; also
   the write over the same page, which leaves it), with the time to build the rows'
   page fields (``cell_detail``, part of ``audit()``) and the page's size; then, as a
   user meets it, ``capc audit`` against ``capc audit --html FILE`` (fresh processes).
10. the first projection of each example contract against its ``model_json_schema()``
   time, and projection at 1,000 and 10,000 fields, each run after a full collection,
   with the function calls of both sizes beside (``bench/goals.py``);
11. ``capc lock``'s work against ``capc audit``'s for the stages.yaml pairs and for every
   example stage x every model of the largest snapshot, in-process and as fresh
   processes, and the lock's own memory at 4,000 and 20,000 pairs (``bench/scaling.py``'s
   lock series).

Last, every goal of issue 19 beside its figure, met or NOT MET (the scaling series
from 1,000 to 50,000 models is ``bench/scaling.py``).

Subprocesses run with ``CAPC_OFFLINE=1`` and without ``PYTHONDONTWRITEBYTECODE``, so
Python may cache bytecode as it does for most users.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.goals import lock_memory_goal, lock_vs_audit, projection_measures, record, report

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "openrouter"
SEED = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"
MESSAGES = [{"role": "user", "content": "Ticket #4411: I was charged twice for March."}]
# Measure 2 sends different messages on every call, as a pipeline does.
VARIED = [[{"role": "user", "content": f"Ticket #{4400 + i}: I was charged twice ({i})."}]
          for i in range(64)]


def stats(samples: list[float]) -> str:
    """Format median and p90 of samples given in seconds, in a readable unit."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    med = statistics.median(ordered)
    unit, scale = ("us", 1e6) if med < 1e-3 else ("ms", 1e3)
    return f"median {med * scale:8.1f} {unit}   p90 {p90 * scale:8.1f} {unit}"


def per_call(fn: Callable[[], Any], rounds: int, calls: int = 2000) -> list[float]:
    """Return per-call seconds of ``fn`` for each round of ``calls`` calls (after warm-up)."""
    for _ in range(min(calls, 200)):
        fn()
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - start) / calls)
    return out


def positive(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def run_process(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Run a process, return (wall seconds, peak RSS in KiB)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errors,
                                cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            said = errors.read().decode(errors="replace").strip()
            raise SystemExit(f"bench: {' '.join(argv)} failed:\n{said}")
    return elapsed, usage.ru_maxrss


def processes(snapshot: Path, rounds: int) -> None:
    """Measures 1 and 6: whole-process wall time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="capc-bench-") as cache_dir:
        _processes(snapshot, rounds, cache_dir)


def _processes(snapshot: Path, rounds: int, cache_dir: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CAPC_OFFLINE"] = "1"
    env["CAPC_CACHE_DIR"] = cache_dir
    rss: dict[str, float] = {}
    capc = [sys.executable, "-m", "compiler", "compile", "classify_ticket",
            "openai/gpt-4o-mini", "--metadata", str(snapshot)]
    for label, argv in (("capc compile, warm cache", capc),
                        ("capc compile --no-cache", [*capc, "--no-cache"]),
                        ('python -c "import compiler"', [sys.executable, "-c", "import compiler"]),
                        ('python -c "pass" (start-up)', [sys.executable, "-c", "pass"])):
        run_process(argv, env)
        runs = [run_process(argv, env) for _ in range(rounds)]
        print(f"1. {label:34} {stats([r[0] for r in runs])}")
        if "--no-cache" in argv:
            record("cold capc compile (--no-cache)",
                   statistics.median(r[0] for r in runs) * 1e3, 300, "ms")
        if argv[0] == capc[0] and "compile" in argv:
            rss[label] = max(r[1] for r in runs) / 1024
    for label, mib in rss.items():
        print(f"6. peak RSS, {label:23}    {mib:8.1f} MiB")


def in_process(snapshot: Path, rounds: int) -> None:
    """Measures 2 to 5 and 7 in this process."""
    os.environ["CAPC_OFFLINE"] = "1"
    if str(ROOT) not in sys.path:  # run from a checkout without installing
        sys.path.insert(0, str(ROOT))
    from compiler import CompilerError, compile_request
    from registry import Registry

    def load() -> Registry:
        return Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")

    registry = load()
    for stage in registry.stage_names():
        varied = itertools.cycle(VARIED)
        samples = per_call(lambda s=stage, v=varied: compile_request(
            s, "openai/gpt-4o-mini", next(v), registry=registry), rounds)
        print(f"2. compile_request {stage:17} {stats(samples)}")
        record(f"warm compile_request {stage}", statistics.median(samples) * 1e6, 10, "us")

    pairs = [(s, m) for s in registry.stage_names() for m in registry.catalog.ids()]

    def audit() -> None:
        fresh = load()
        for stage, model in pairs:
            with contextlib.suppress(CompilerError):  # a refusal still counts as audited
                compile_request(stage, model, MESSAGES, registry=fresh)

    audit()
    runs = []
    for _ in range(max(3, rounds // 3)):
        start = time.perf_counter()
        audit()
        runs.append(time.perf_counter() - start)
    print(f"3. compile_request of {len(pairs)} stage x model pairs (load included; not "
          f"audit(): no rows)  {stats(runs)}  "
          f"({statistics.median(runs) / len(pairs) * 1e6:.0f} us a pair)")

    largest = max(SHARED.glob("models-*.json"), key=lambda p: p.stat().st_size, default=SEED) \
        if SHARED.is_dir() else SEED
    # before measure 7, whose registry (route plans of every model) stays alive after it
    # and would make every full collection of the audit walk it
    audit_largest(largest, rounds)

    def load_and_resolve() -> Registry:
        reg = Registry.load(metadata=largest)
        for model_id in reg.catalog.ids():
            reg.resolve(model_id)
        return reg

    load_and_resolve()
    runs = []
    for _ in range(rounds):
        gc.collect()  # as in bench/metadata_load.py: a settled heap, as in a new process
        start = time.perf_counter()
        kept = load_and_resolve()
        runs.append(time.perf_counter() - start)
        del kept  # torn down outside the timed region, as in bench/metadata_load.py
    print(f"4. load {largest.name} + resolve every model   {stats(runs)}")
    from bench.metadata_load import measure

    load_s, resolve_s, _ = measure(largest, rounds)
    total = [a + b for a, b in zip(load_s, resolve_s, strict=True)]
    print(f"4. the same from the disk cache (load {statistics.median(load_s) * 1e3:.1f} ms "
          f"+ resolve {statistics.median(resolve_s) * 1e3:.1f} ms)  {stats(total)}")

    req = compile_request("classify_ticket", "openai/gpt-4o-mini", MESSAGES, registry=registry)
    reply = json.dumps({"category": "billing", "urgent": False, "confidence": 0.9})
    samples = per_call(lambda: req.parse_reply(reply), rounds)
    print(f"5. parse_reply (TicketLabel)        {stats(samples)}")

    endpoints = SHARED / "endpoints-all-2026-05-18.json"
    if endpoints.is_file():
        from compiler import Intent

        start = time.perf_counter()
        reg = Registry.load(metadata=SHARED / "models-2026-05-18.json", endpoints=endpoints,
                            models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
        count = 0
        for name in reg.stage_names():
            base = Intent.from_stage(name, reg.stage(name), base_dir=reg.stage_dir())
            fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
            for model_id in reg.catalog.ids():
                listed = reg.endpoints(model_id)
                for endpoint in [] if listed is None else listed.endpoints:
                    pinned = Intent(**{**fields, "provider": {
                        "only": [endpoint.routing_slug], "allow_fallbacks": False}})
                    try:
                        compile_request(pinned, model_id, MESSAGES, registry=reg)
                    except CompilerError:
                        continue
                    count += 1
        print(f"7. pinned-endpoint sweep, {count} compilations: "
              f"{(time.perf_counter() - start) * 1e3:.0f} ms (one run)")
        start = time.perf_counter()
        reg = Registry.load(metadata=SHARED / "models-2026-05-18.json", endpoints=endpoints,
                            models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
        plans = attempts = 0
        for name in reg.stage_names():
            base = Intent.from_stage(name, reg.stage(name), base_dir=reg.stage_dir())
            for model_id in reg.catalog.ids():
                try:
                    plan = compile_request(base, model_id, MESSAGES, registry=reg)
                except CompilerError:
                    continue
                plans += 1
                attempts += len(plan.plan)
        print(f"7. route-plan sweep, {plans} plans ({attempts} attempts), every model x "
              f"stage unpinned: {(time.perf_counter() - start) * 1e3:.0f} ms (one run)")
        for model_id in ("openai/gpt-4o-mini", "meta-llama/llama-3.3-70b-instruct"):
            listed = reg.endpoints(model_id)
            count = 0 if listed is None else len(listed.endpoints)
            varied = itertools.cycle(VARIED)
            samples = per_call(lambda m=model_id, v=varied: compile_request(
                "extract_invoice", m, next(v), registry=reg), rounds)
            first = compile_request("extract_invoice", model_id, MESSAGES, registry=reg)
            record(f"warm compile_request, route plan ({model_id})",
                   statistics.median(samples) * 1e6, 10, "us")
            print(f"2. compile_request, route plan of {len(first.plan)} attempt(s) over "
                  f"{count} endpoints ({model_id}) {stats(samples)}")
    else:
        print(f"7. pinned-endpoint sweep skipped: {endpoints} is absent")
    projection_measures(rounds)
    with tempfile.TemporaryDirectory(prefix="capc-bench-every-") as folder:
        lock_vs_audit(largest, ROOT, rounds, every=_all_models_stages(largest, Path(folder)))
    lock_memory_goal(largest)
    litellm_comparison(rounds, registry)
    audit_page_overhead(snapshot, rounds)
    audit_page_process(snapshot, rounds)


def _all_models_stages(snapshot: Path, folder: Path) -> Path:
    """Write the example stages.yaml with every model of the snapshot listed per stage."""
    import yaml

    from registry import Registry

    document = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    ids = Registry.load(metadata=snapshot).catalog.ids()
    for stage in document["stages"].values():
        stage["models"] = list(ids)
        if "contract" in stage:  # relative to the stages file: make it absolute
            path, _, name = stage["contract"].partition(":")
            stage["contract"] = f"{ROOT / path}:{name}"
    target = folder / "stages.yaml"
    target.write_text(yaml.safe_dump(document), encoding="utf-8")
    return target


def audit_page_overhead(snapshot: Path, rounds: int) -> None:
    """Measure 9: what writing the audit page adds to the audit."""
    from compiler.artifacts.audit import audit
    from compiler.artifacts.audit_detail import cell_detail
    from compiler.artifacts.lock import compile_all
    from compiler.page.page import audit_page, registry_inputs, write_page
    from registry import Registry

    with tempfile.TemporaryDirectory(prefix="capc-bench-page-") as folder:
        every = _all_models_stages(snapshot, Path(folder))
        for label, stages in (("example stages", ROOT / "stages.yaml"),
                              ("every model", every)):
            audits, details, waits, renders, writes, kept = ([] for _ in range(6))
            target = Path(folder) / "audit.html"
            for _ in range(max(3, rounds // 3) + 1):  # the first round warms up
                registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                                         stages=stages)
                start = time.perf_counter()
                rows = audit(registry)
                audits.append(time.perf_counter() - start)
                items = compile_all(registry)  # memoised: only the rows' detail is timed
                start = time.perf_counter()
                for item in items:
                    cell_detail(item, registry.catalog, "ok")
                details.append(time.perf_counter() - start)
                # As ``capc audit --html``: the inputs are hashed beside the audit.
                rows, items = [], []  # free the first audit (a larger heap slows the GC)
                registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                                         stages=stages)
                target.write_text("an older page", encoding="utf-8")
                with ThreadPoolExecutor(max_workers=1) as pool:
                    hashing = pool.submit(registry_inputs, registry)
                    rows = audit(registry)
                    audited = time.perf_counter()
                    inputs = hashing.result()
                    waits.append(time.perf_counter() - audited)
                    text = audit_page(rows, registry, inputs=inputs)
                    renders.append(time.perf_counter() - audited - waits[-1])
                    before = time.perf_counter()
                    write_page(text, target)  # over a page that changed
                    writes.append(time.perf_counter() - before)
                start = time.perf_counter()
                write_page(text, target)  # the same page again: left as it is
                kept.append(time.perf_counter() - start)
            audits, details, waits, renders, writes, kept = (
                samples[1:] for samples in (audits, details, waits, renders, writes, kept))
            pages = [w + r + x for w, r, x in zip(waits, renders, writes, strict=True)]
            ratio = statistics.median(pages) / statistics.median(audits)
            print(f"9. audit page, {label} ({len(rows)} pairs, {len(text.encode()):,} bytes): "
                  f"audit() {stats(audits)}, of which the page fields "
                  f"{statistics.median(details) * 1e3:.1f} ms; waiting for the input "
                  f"hashes {stats(waits)}, render {stats(renders)}, write over a changed "
                  f"page {stats(writes)}, over the same page {stats(kept)}; the page "
                  f"{stats(pages)} ({ratio:.0%} of audit())")
            if label == "example stages":
                record("audit page (example stages): page / audit()", ratio * 100, 10, "%")


def audit_page_process(snapshot: Path, rounds: int) -> None:
    """Measure 9 as a user meets it: ``capc audit`` and ``capc audit --html FILE`` of the
    example stages, each a fresh process, interleaved; the page written over one that
    changed (rewritten before each run, outside the timing)."""
    with tempfile.TemporaryDirectory(prefix="capc-bench-page-") as folder:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["CAPC_OFFLINE"] = "1"
        env["CAPC_CACHE_DIR"] = str(Path(folder) / "cache")
        target = Path(folder) / "audit.html"
        plain = [sys.executable, "-m", "compiler", "audit", "--metadata", str(snapshot)]
        paged = [*plain, "--html", str(target)]
        run_process(plain, env)
        run_process(paged, env)  # warm-up: bytecode and the compile cache
        without, with_page = [], []
        for _ in range(max(5, rounds)):
            without.append(run_process(plain, env)[0])
            target.write_text("an older page", encoding="utf-8")
            with_page.append(run_process(paged, env)[0])
        added = statistics.median(with_page) - statistics.median(without)
        share = added / statistics.median(without)
        print(f"9. capc audit of the example stages: {stats(without)}; with --html "
              f"{stats(with_page)}: the page adds {added * 1e3:.1f} ms ({share:.0%})")
        record("audit page (example stages): capc audit --html / capc audit - 1",
               max(0.0, share) * 100, 10, "%")


def audit_largest(largest: Path, rounds: int) -> None:
    """Measure 3 for the goal: ``audit()`` (what ``capc audit`` runs: every pair compiled
    and one row made per pair) of every example stage x every model of the largest
    snapshot, the registry's load included; then, as a separate figure (not a goal),
    the compile-only loop over the same pairs, which the goal used to be measured by."""
    from compiler import CompilerError, compile_request
    from compiler.artifacts.audit import audit
    from compiler.artifacts.lock import RECORDED_FAILURES
    from registry import Registry

    with tempfile.TemporaryDirectory(prefix="capc-bench-audit-") as folder:
        every = _all_models_stages(largest, Path(folder))

        def load() -> Registry:
            return Registry.load(metadata=largest, models=ROOT / "models.yaml", stages=every)

        def audited() -> Any:
            return audit(load())

        def compiled() -> Any:
            fresh = load()
            for stage in fresh.stage_names():
                for model in fresh.catalog.ids():
                    with contextlib.suppress(CompilerError, *RECORDED_FAILURES):
                        compile_request(stage, model, MESSAGES, registry=fresh)
            return fresh

        pairs = len(audited())
        compiled()
        audits, compiles = [], []
        for _ in range(max(3, rounds // 3)):  # interleaved, so both see the same machine
            for run, samples in ((audited, audits), (compiled, compiles)):
                # as in a new `capc audit` process: no garbage of an earlier round for
                # the collector to walk; each round's objects are freed after its timing
                gc.collect()
                start = time.perf_counter()
                kept = run()
                samples.append(time.perf_counter() - start)
                del kept
    print(f"3. example audit (audit(), {pairs:,} pairs of {largest.name}, load included)  "
          f"{stats(audits)}  ({statistics.median(audits) / pairs * 1e6:.0f} us a pair)")
    print(f"3. (not a goal) compile_request alone over the same pairs, load included  "
          f"{stats(compiles)}")
    record(f"example audit (audit(), {pairs:,} pairs of {largest.name})",
           statistics.median(audits) * 1e3, 300, "ms")


def litellm_comparison(rounds: int, registry: Any) -> None:
    """Measure 8, when LiteLLM is installed (``pip install -e '.[bench]'``)."""
    try:
        start = time.perf_counter()
        import litellm
        imported = time.perf_counter() - start
    except ImportError:
        print("8. LiteLLM not installed (pip install -e '.[bench]'): comparison skipped")
        return
    from compiler import compile_request

    def theirs() -> Any:
        return litellm.get_optional_params(
            model="openai/gpt-4o-mini", custom_llm_provider="openrouter", temperature=0.0,
            max_tokens=200, drop_params=True)

    ours = statistics.median(per_call(
        lambda: compile_request("classify_ticket", "openai/gpt-4o-mini", MESSAGES,
                                registry=registry), rounds, 500))
    other = statistics.median(per_call(theirs, rounds, 200))
    print(f"8. LiteLLM import {imported * 1e3:.0f} ms; get_optional_params median "
          f"{other * 1e6:.1f} us vs compile_request {ours * 1e6:.1f} us "
          f"(ratio {other / ours:.1f}x)")


def main(argv: list[str] | None = None) -> int:
    """Run every measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive, default=15, help="runs per measure")
    default = SHARED / "models-2026-08-19.json"
    parser.add_argument("--snapshot", type=Path, default=default if default.is_file() else SEED,
                        help="models list for measures 1-3 (default: the 2026-08-19 "
                        "snapshot, else the bundled seed)")
    args = parser.parse_args(argv)
    snapshot = args.snapshot.resolve()
    if not snapshot.is_file():
        print(f"bench: {args.snapshot}: no such file", file=sys.stderr)
        return 2
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, snapshot {snapshot.name}")
    processes(snapshot, args.rounds)
    in_process(snapshot, args.rounds)
    report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
