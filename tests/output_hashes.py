"""SHA-256s of everything the compiler emits, per example stage x model (a reference).

Used by ``tests/test_output_hashes.py`` and written by ``scripts/make_output_hashes.py``
into ``tests/fixtures/output_hashes.json``. Each hash is the first 16 hex digits (64
bits) of a SHA-256. For each example stage (stages.yaml, every model of the snapshot
in place of the stage's own list), the hash covers:

- the stage's lock entry (the body without messages, the instructions, the adjustment
  report, both schema SHA-256s, the error or the later attempts and routes), as
  :func:`compiler.artifacts.lock.dump_lock` writes it inside the whole lock, with its
  reports whole (:func:`compiler.artifacts.lock_compact.expand_reports`: the shared
  tables are a storage detail of the whole lock, hashed in ``whole``);
  ``whole`` also checks that :func:`compiler.artifacts.lock.spool_lock` (what ``capc
  lock`` writes, entry by entry) gives the same text;
- the audit row (:meth:`compiler.artifacts.audit.AuditRow.to_dict`);
- the body of :func:`compiler.compile_request` with messages, a first call and a
  second call with other messages (the memo's replay), or the failure's type and text.

Two sets: ``models-2026-08-19.json`` (no endpoint data: one body each), and the
2026-05-18 models and endpoints (route plans). ``whole`` hashes are of the whole
``dump_lock`` text and the whole ``render_audit`` text of each set.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPENROUTER = ROOT.parent / "shared" / "data" / "openrouter"
FIXTURE = ROOT / "tests" / "fixtures" / "output_hashes.json"
#: The sets: name -> (models list, endpoints file or None), under ``OPENROUTER``.
SETS: dict[str, tuple[str, str | None]] = {
    "2026-08-19": ("models-2026-08-19.json", None),
    "2026-05-18-routes": ("models-2026-05-18.json", "endpoints-all-2026-05-18.json"),
}
FIRST = [{"role": "user", "content": "Ticket #4411: I was charged twice for March."}]
SECOND = [{"role": "user", "content": "Please read the attached invoice and extract it."}]


def _sha(value: Any) -> str:
    """The first 16 hex digits of the SHA-256 of ``value`` as canonical JSON (or text)."""
    text = value if isinstance(value, str) else json.dumps(
        value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _all_models_stages(tmp: Path, model_ids: list[str]) -> Path:
    """A copy of stages.yaml whose every stage lists ``model_ids``; contracts linked."""
    import yaml

    data = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    for stage in data["stages"].values():
        stage["models"] = list(model_ids)
    (tmp / "contracts").symlink_to(ROOT / "contracts", target_is_directory=True)
    path = tmp / "stages.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def compute(name: str) -> dict[str, Any]:
    """Compute the hashes of one set (see the module docstring).

    Returns:
        ``{"pairs": {STAGE: {MODEL: sha256}}, "whole": {"lock": sha256, "audit": sha256}}``.
    """
    from compiler.artifacts.audit import audit, render_audit
    from compiler.artifacts.lock import (
        RECORDED_FAILURES,
        build_lock,
        compile_all,
        dump_lock,
        spool_lock,
    )
    from compiler.artifacts.lock_compact import expand_reports
    from compiler.errors import AdjustmentWarning
    from compiler.request import compile_request
    from registry.resolve.resolver import Registry

    models_file, endpoints_file = SETS[name]
    metadata = OPENROUTER / models_file
    endpoints = None if endpoints_file is None else OPENROUTER / endpoints_file
    ids = list(Registry.load(metadata=metadata).catalog.ids())
    with tempfile.TemporaryDirectory(prefix="capc-hashes-") as tmp:
        stages = _all_models_stages(Path(tmp), ids)

        def load() -> Registry:
            return Registry.load(metadata=metadata, endpoints=endpoints,
                                 models=ROOT / "models.yaml", stages=stages)

        registry = load()
        compilations = compile_all(registry)
        lock_text = dump_lock(build_lock(registry, compilations))
        # What capc lock writes: the same pairs streamed entry by entry, one walk.
        with spool_lock(registry, iter(compilations)) as spool:
            streamed = b"".join(spool.chunks()).decode("utf-8")
        if streamed != lock_text:
            raise AssertionError(f"{name}: the streamed lock differs from dump_lock's text")
        rows = audit(load())
        calls = load()
        bodies: dict[tuple[str, str], Any] = {}
        for stage in calls.stage_names():
            for model in ids:
                outcome: list[Any] = []
                for messages in (FIRST, SECOND):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", AdjustmentWarning)
                        try:
                            outcome.append(compile_request(
                                stage, model, messages, registry=calls).body)
                        except RECORDED_FAILURES as exc:
                            outcome.append([type(exc).__name__, str(exc)])
                bodies[stage, model] = outcome
    lock = expand_reports(json.loads(lock_text))["stages"]
    by_pair = {(r.stage, r.model): r.to_dict() for r in rows}
    pairs: dict[str, dict[str, str]] = {}
    for stage, entries in lock.items():
        for model, entry in entries.items():
            pairs.setdefault(stage, {})[model] = _sha(
                [entry, by_pair[stage, model], bodies[stage, model]])
    # The metadata line names the file only, but the temporary directory may appear in
    # contract paths of messages; keep the text as it is and drop only the tmp prefix.
    audit_text = re.sub(r"/tmp/capc-hashes-[^/]+/", "TMP/", render_audit(rows, registry))
    return {"pairs": pairs, "whole": {"lock": _sha(lock_text), "audit": _sha(audit_text)}}


def compute_all() -> dict[str, Any]:
    """Every set whose files are present, by name."""
    return {name: compute(name) for name, (models, endpoints) in SETS.items()
            if (OPENROUTER / models).is_file()
            and (endpoints is None or (OPENROUTER / endpoints).is_file())}
