"""Compare what ``capc`` prints at a base revision with what it prints in this checkout.

A refactor that moves code must not change a byte of output. This script runs the same
list of ``capc`` invocations against two copies of the code, ``compiler/`` and
``registry/`` of a base revision (extracted with ``git archive``) and of the working
tree, and reports every invocation whose exit code, stdout, stderr or written file
differs. The invocations cover every example stage x every model the example stages
name (``compile``, ``explain`` and ``show``, as text and ``--json``), every command's
``--help``, ``check``, ``schema``, ``models``, ``audit``, ``lock``, ``lock --check``,
``diff`` and a few refused inputs, over the bundled seed and, when ``../shared`` is
present, the shared snapshots of 2026-05-18 and 2026-08-19; then the default metadata
source, messages from a file and from stdin, a stage with a warn/refuse policy (warnings
on stderr), a broken stages.yaml, ``refresh`` offline, and the ``cache`` commands.

Both copies run with the same working directory, the same YAML files, ``CAPC_OFFLINE=1``,
``COLUMNS=100`` and a fresh ``CAPC_CACHE_DIR`` each, one process per copy (the second
``compile`` of a pair is then served by the compile cache, which is compared too; state a
process keeps, such as the once-per-process log of unknown parameters, carries over from
one invocation to the next in the same order for both copies).
Paths of the two copies are written as ``<tree>`` before comparing.

Usage::

    python scripts/cli_parity.py [--base REV] [--show N]

Exit status: 0 identical, 1 some output differs, 2 bad usage (an unknown revision).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "openrouter"
SEED = "registry/data/seed-models-2026-08-19.json"

# Runs inside a fresh interpreter whose sys.path starts with one copy of the code:
# each invocation goes through ``python -m compiler`` (runpy), which both layouts have.
_WORKER = r"""
import contextlib, io, json, os, runpy, sys
import compiler, registry
tree = os.environ["PARITY_TREE"]
for package in (compiler, registry):
    assert package.__file__.startswith(tree), (package.__file__, tree)
results = []
for item in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["capc", *item["argv"]]
    sys.stdin = io.StringIO(item.get("stdin", ""))
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("compiler", run_name="__main__", alter_sys=False)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # a traceback is output too: record its type and message
            code = f"raised {type(exc).__name__}: {exc}"
    written = None
    if item.get("reads"):
        try:
            with open(item["reads"], encoding="utf-8") as fh:
                written = fh.read()
        except OSError as exc:
            written = f"<unreadable: {exc}>"
    results.append({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
                    "file": written})
json.dump(results, sys.stdout)
"""


def _example_pairs() -> list[tuple[str, str]]:
    data = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    return [
        (stage, model)
        for stage, decl in data["stages"].items()
        for model in decl.get("models", [])
    ]


def _metadata_files() -> list[str]:
    files = [SEED]
    for name in ("models-2026-08-19.json", "models-2026-05-18.json"):
        if (SHARED / name).is_file():
            files.append(str(SHARED / name))
    return files


def _extra_inputs(work: Path) -> dict[str, str]:
    """Write the inputs of the edge cases into ``work``; return their paths by name."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    (work / "messages.json").write_text(json.dumps(messages), encoding="utf-8")
    data = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    first = next(iter(data["stages"].values()))
    first["policy"] = {"param.*": "warn", "reasoning.*": "refuse"}
    contracts = work / "contracts"
    contracts.mkdir()
    for source in (ROOT / "contracts").glob("*.py"):
        (contracts / source.name).write_text(source.read_text(encoding="utf-8"), "utf-8")
    (work / "stages-policy.yaml").write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    (work / "broken.yaml").write_text("stages:\n  a: [unclosed\n", encoding="utf-8")
    return {name: str(work / f"{name}") for name in
            ("messages.json", "stages-policy.yaml", "broken.yaml")}


def invocations(work: Path) -> list[dict[str, Any]]:
    """Return the invocations to compare: ``{"argv": [...], "reads": path, "stdin": text}``."""
    common = ["--models", "models.yaml", "--stages", "stages.yaml"]
    runs: list[dict[str, Any]] = [{"argv": ["--help"]}]
    for command in ("compile", "explain", "show", "check", "schema", "lock", "audit", "diff",
                    "refresh", "models", "cache"):
        runs.append({"argv": [command, "--help"]})
    pairs = _example_pairs()
    for index, metadata in enumerate(_metadata_files()):
        meta = ["--metadata", metadata, *common]
        for stage, model in pairs:
            for fmt in ([], ["--json"]):
                runs.append({"argv": ["compile", stage, model, *meta, *fmt]})
                runs.append({"argv": ["explain", stage, model, *meta, *fmt]})
                runs.append({"argv": ["show", model, "--stage", stage, *meta, *fmt]})
        # the second compile of a pair is served by the compile cache
        runs += [{"argv": ["compile", stage, model, *meta]} for stage, model in pairs[:3]]
        lock = str(work / f"lock-{index}.json")
        runs += [
            {"argv": ["check", *meta]},
            {"argv": ["check", *meta, "--json"]},
            {"argv": ["models", *meta]},
            {"argv": ["models", *meta, "--json"]},
            {"argv": ["audit", *meta]},
            {"argv": ["audit", *meta, "--json"]},
            {"argv": ["lock", *meta, "--output", lock], "reads": lock},
            {"argv": ["lock", *meta, "--output", lock, "--check"]},
            {"argv": ["lock", *meta, "--output", lock, "--json"], "reads": lock},
            {"argv": ["diff", lock, lock, *common]},
            {"argv": ["compile", "no_such_stage", pairs[0][1], *meta]},
            {"argv": ["compile", pairs[0][0], "no-such/model", *meta]},
            {"argv": ["show", "openai/gpt-4o-minii", *meta]},
        ]
    metas = _metadata_files()
    if len(metas) > 1:
        runs.append({"argv": ["diff", metas[0], metas[-1], *common]})
        runs.append({"argv": ["diff", metas[0], metas[-1], *common, "--json"]})
    extra = _extra_inputs(work)
    stage, model = pairs[0]
    policy = ["--models", "models.yaml", "--stages", extra["stages-policy.yaml"]]
    runs += [
        {"argv": ["compile", stage, model, *common]},  # the default source: the seed, offline
        {"argv": ["show", model, *common, "--json"]},
        {"argv": ["compile", stage, model, *common, "--messages", extra["messages.json"]]},
        {"argv": ["explain", stage, model, *common, "--messages", "-"],
         "stdin": (work / "messages.json").read_text(encoding="utf-8")},
        {"argv": ["compile", stage, model, *common, "--messages", "-"], "stdin": "not json"},
        *({"argv": [command, stage, m, *policy]} for m in sorted({m for s, m in pairs})
          for command in ("compile", "explain")),
        {"argv": ["audit", *policy]},
        {"argv": ["check", "--models", "models.yaml", "--stages", extra["broken.yaml"]]},
        {"argv": ["compile", stage, model, "--models", "models.yaml", "--stages",
                  extra["broken.yaml"]]},
        {"argv": ["refresh"]},
        {"argv": ["refresh", "--json"]},
        {"argv": ["models", *common]},
        {"argv": ["cache", "clear"]},
        {"argv": ["schema", "models"]},
        {"argv": ["schema", "stages"]},
        {"argv": ["lock", "--schema"]},
        {"argv": ["cache", "info"]},
        {"argv": ["cache", "info", "--json"]},
    ]
    return runs


def run_tree(tree: Path, runs: list[dict[str, Any]], cache: Path) -> list[dict[str, Any]]:
    """Run every invocation with the code of ``tree`` in one new interpreter."""
    env = dict(os.environ)
    env.update(PYTHONPATH=str(tree), PARITY_TREE=str(tree), CAPC_OFFLINE="1",
               COLUMNS="100", CAPC_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _WORKER], input=json.dumps(runs), capture_output=True,
        text=True, cwd=ROOT, env=env, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker for {tree} failed:\n{proc.stderr}")
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    text = json.dumps(results).replace(json.dumps(str(tree))[1:-1], "<tree>")
    text = text.replace(json.dumps(str(cache))[1:-1], "<cache>")
    normalised: list[dict[str, Any]] = json.loads(text)
    return normalised


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="revision to compare with (default HEAD)")
    parser.add_argument("--show", type=int, default=5, help="print at most N differences")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="capc-parity-") as tmp:
        work = Path(tmp)
        base = work / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.base, "--", "compiler", "registry"],
            cwd=ROOT, capture_output=True, check=False,
        )
        if archive.returncode != 0:
            print(f"cli_parity: {archive.stderr.decode().strip()}", file=sys.stderr)
            return 2
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        runs = invocations(work)
        old = run_tree(base, runs, work / "cache-base")
        new = run_tree(ROOT, runs, work / "cache-new")
    differing = [(r, a, b) for r, a, b in zip(runs, old, new, strict=True) if a != b]
    for run, a, b in differing[: args.show]:
        print(f"--- capc {' '.join(run['argv'])}")
        for key in ("code", "stdout", "stderr", "file"):
            if a[key] != b[key]:
                lines = difflib.unified_diff(
                    str(a[key]).splitlines(), str(b[key]).splitlines(),
                    f"{args.base}:{key}", f"working tree:{key}", lineterm="", n=1,
                )
                print("\n".join(list(lines)[:40]))
    print(f"{len(runs)} invocations, {len(differing)} differ (base {args.base})")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
