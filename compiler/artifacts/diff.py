"""Diff two lock documents: which settings each stage/model pair now receives.

Request bodies are compared by flattened dotted paths (``reasoning.effort``,
``response_format.type``, ``provider.require_parameters``); the enforced schema and the
instruction message are compared by SHA-256; the report's enforcement ``rung`` is
compared too. A route plan's later attempts are compared the same way under
``attempt N.<path>``, and each endpoint's row of the route table as ``routes.<slug>``
(``attempt N`` or ``excluded: <reason>``); an alias id's published target (the
``model.alias`` adjustment) as ``model.alias_target``. A model added to or removed from a
stage, and a pair that starts or stops failing, are changes as well.

Each change is explained by the adjustments that differ between the two reports and
touch its path: ``now <kind>`` (only in the new report) or ``no longer <kind>`` (only
in the old one), each with its reason and evidence.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compiler.artifacts.lock import LockFileError, build_lock, read_lock
from compiler.artifacts.lock_compact import expand_reports
from compiler.passes.enforcement import schema_sha256
from registry.errors import MetadataError
from registry.resolve.resolver import Registry

__all__ = [
    "ABSENT",
    "Change",
    "Explanation",
    "count_pairs",
    "diff_locks",
    "load_locks",
    "render_changes",
]

#: Path whose value is compared by hash instead of key by key.
_SCHEMA_PATH = "response_format.json_schema.schema"
#: Body paths of the length limit, which includes the reasoning budget.
_LENGTH_PATHS = ("max_tokens", "max_completion_tokens")


class _Absent:
    """The value of a path that one side does not have."""

    def __repr__(self) -> str:
        return "(absent)"


#: Marker for "this side has no such path / pair".
ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True)
class Explanation:
    """An adjustment that accounts for a change.

    Attributes:
        change: ``now`` (in the new report only) or ``no longer`` (in the old one only).
        kind: the adjustment kind, e.g. ``param.dropped``.
        path: the adjustment's path.
        reason: the adjustment's reason.
        evidence: the evidence as one line, or ``None`` for a rule of this library.
        via: the changed setting this change follows from, when the adjustment
            explains that setting rather than this one (``max_tokens`` includes the
            reasoning budget, so it follows ``reasoning.effort``); else ``None``.
    """

    change: str
    kind: str
    path: str
    reason: str
    evidence: str | None
    via: str | None = None

    def to_text(self) -> str:
        """Return ``now param.dropped: <reason> [<evidence>]``, prefixed ``via <path>:``."""
        tail = "" if self.evidence is None else f" [{self.evidence}]"
        head = "" if self.via is None else f"via {self.via}: "
        return f"{head}{self.change} {self.kind}: {self.reason}{tail}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping of the five attributes."""
        return {
            "change": self.change,
            "kind": self.kind,
            "path": self.path,
            "reason": self.reason,
            "evidence": self.evidence,
            "via": self.via,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """One setting that differs between two locks for one stage and model.

    Attributes:
        stage: the stage name.
        model: the model id.
        path: dotted body path, ``rung``, ``instructions``, or ``""`` for the pair
            itself (added, removed, failing).
        old: the old value, or :data:`ABSENT`.
        new: the new value, or :data:`ABSENT`.
        explanations: the differing adjustments that touch ``path``.
    """

    stage: str
    model: str
    path: str
    old: Any
    new: Any
    explanations: tuple[Explanation, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping; an absent side is ``null`` with ``*_present: false``."""
        return {
            "stage": self.stage,
            "model": self.model,
            "path": self.path,
            "old": None if self.old is ABSENT else self.old,
            "old_present": self.old is not ABSENT,
            "new": None if self.new is ABSENT else self.new,
            "new_present": self.new is not ABSENT,
            "explanations": [e.to_dict() for e in self.explanations],
        }


def _short_hash(value: Any) -> str:
    return "sha256:" + schema_sha256(value)[:12]


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value and prefix != _SCHEMA_PATH:
        for key in sorted(value):
            _flatten(value[key], f"{prefix}.{key}" if prefix else str(key), out)
    elif prefix == _SCHEMA_PATH:
        out[prefix] = _short_hash(value)
    else:
        out[prefix] = value


def _settings(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Return the comparable settings of an ``ok`` entry by dotted path."""
    out: dict[str, Any] = {}
    _flatten(entry.get("request") or {}, "", out)
    _flatten({"loop": entry.get("loop") or {}}, "", out)  # loop.timeout_seconds, retries, ...
    out["rung"] = (report := entry.get("report") or {}).get("rung")
    for adjustment in report.get("adjustments") or ():  # an alias's target, if it moved
        if adjustment.get("kind") == "model.alias":
            out["model.alias_target"] = adjustment.get("applied")
    instructions = entry.get("instructions")
    if instructions is not None:
        content = str(instructions.get("content", ""))
        out["instructions"] = "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]
    for number, attempt in enumerate(entry.get("attempts") or (), start=2):
        inner = _settings(attempt)
        inner.pop("model.alias_target", None)  # the same as the first attempt's
        out.update({f"attempt {number}.{path}": value for path, value in inner.items()})
    for row in entry.get("routes") or ():
        where = f"routes.{row.get('endpoint')}"
        attempt = row.get("attempt")
        out[where] = (f"attempt {attempt + 1}" if isinstance(attempt, int)
                      else f"excluded: {row.get('excluded_by')}")
    return out


def _touches(adjustment_path: str, path: str) -> bool:
    """Whether an adjustment at ``adjustment_path`` can explain a change at ``path``."""
    if path in (_SCHEMA_PATH, "instructions"):
        return adjustment_path.startswith("schema:") or adjustment_path == "response_format"
    if path == "rung":
        return adjustment_path == "response_format"
    return (
        adjustment_path == path
        or path.startswith(adjustment_path + ".")
        or adjustment_path.startswith(path + ".")
    )


def _identity(adjustment: Mapping[str, Any]) -> str:
    keys = ("kind", "path", "requested", "applied", "reason")
    return json.dumps({k: adjustment.get(k) for k in keys}, sort_keys=True)


def _adjustments(entry: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    report = None if entry is None else entry.get("report")
    return [] if report is None else list(report.get("adjustments", []))


def _attempt(entry: Mapping[str, Any] | None, number: int) -> Mapping[str, Any] | None:
    attempts = [] if entry is None else list(entry.get("attempts") or ())
    return attempts[number - 2] if 0 <= number - 2 < len(attempts) else None


def _explain(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, path: str
) -> tuple[Explanation, ...]:
    if path.startswith("attempt "):  # "attempt 2.temperature": that attempt's reports
        head, _, path = path.partition(".")
        number = int(head.split()[1])
        old, new = _attempt(old, number), _attempt(new, number)
    before, after = _adjustments(old), _adjustments(new)
    old_ids = {_identity(a) for a in before}
    new_ids = {_identity(a) for a in after}
    found: list[Explanation] = []
    for change, items, other in (("now", after, old_ids), ("no longer", before, new_ids)):
        for adjustment in items:
            if _identity(adjustment) in other or not _touches(str(adjustment["path"]), path):
                continue
            evidence = adjustment.get("evidence")
            found.append(
                Explanation(
                    change=change,
                    kind=str(adjustment["kind"]),
                    path=str(adjustment["path"]),
                    reason=str(adjustment["reason"]),
                    evidence=None if evidence is None else str(evidence.get("text")),
                )
            )
    return tuple(found)


def _pair_state(entry: Mapping[str, Any] | None) -> Any:
    if entry is None:
        return ABSENT
    if entry.get("status") == "error":
        error = entry.get("error") or {}
        return f"error: {error.get('type')}: {error.get('message')}"
    return "ok"


def _pair_changes(
    stage: str, model: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> Iterator[Change]:
    old_state, new_state = _pair_state(old), _pair_state(new)
    if old_state != "ok" or new_state != "ok":
        if old_state != new_state:
            yield Change(stage, model, "", old_state, new_state)
        return
    assert old is not None and new is not None
    before, after = _settings(old), _settings(new)
    changes = []
    for path in sorted(set(before) | set(after)):
        was, now = before.get(path, ABSENT), after.get(path, ABSENT)
        if was != now or type(was) is not type(now):
            changes.append(Change(stage, model, path, was, now, _explain(old, new, path)))
    # The length limit is the answer budget plus the reasoning budget: a limit change
    # nothing else explains follows from the reasoning change in the same pair.
    reasons = [
        replace(e, via=c.path)
        for c in changes
        if c.path.startswith("reasoning")
        for e in c.explanations
    ]
    for change in changes:
        if change.path in _LENGTH_PATHS and not change.explanations and reasons:
            change = replace(change, explanations=tuple(reasons))
        yield change


def diff_locks(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """List every setting that differs between two lock documents.

    Args:
        old: a lock document (as :func:`compiler.artifacts.lock.read_lock` returns it).
        new: the lock document to compare it with.

    Returns:
        The changes, by stage, then model, then path (all sorted); empty when every
        pair receives the same settings.

    >>> diff_locks({"stages": {}}, {"stages": {}})
    []
    """
    changes: list[Change] = []
    old, new = expand_reports(old), expand_reports(new)  # whole reports explain
    old_stages: Mapping[str, Any] = old.get("stages", {})
    new_stages: Mapping[str, Any] = new.get("stages", {})
    for stage in sorted(set(old_stages) | set(new_stages)):
        before = old_stages.get(stage, {})
        after = new_stages.get(stage, {})
        for model in sorted(set(before) | set(after)):
            changes.extend(_pair_changes(stage, model, before.get(model), after.get(model)))
    return changes


def _value(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    return json.dumps(value, ensure_ascii=False)


def render_changes(
    changes: list[Change], *, old_label: str, new_label: str, pairs: int | None = None
) -> str:
    """Render changes as text grouped by stage and model.

    Args:
        changes: from :func:`diff_locks`.
        old_label: one line naming the old side (its metadata), e.g. a file name.
        new_label: the same for the new side.
        pairs: how many stage/model pairs were compared, for the summary line.

    Returns:
        The text, without a final newline.
    """
    lines = [f"old: {old_label}", f"new: {new_label}"]
    touched = sorted({(c.stage, c.model) for c in changes})
    of = "" if pairs is None else f" of {pairs}"
    if not changes:
        where = "any stage/model pair" if pairs is None else f"{pairs} stage/model pair(s)"
        lines.append(f"no setting changed in {where}")
        return "\n".join(lines)
    lines.append(f"{len(changes)} change(s) in {len(touched)}{of} stage/model pair(s)")
    current: tuple[str, str] | None = None
    for change in changes:
        if (change.stage, change.model) != current:
            current = (change.stage, change.model)
            lines += ["", f"{change.stage} / {change.model}"]
        if change.path:
            lines.append(f"  {change.path}: {_value(change.old)} -> {_value(change.new)}")
        else:
            lines.append(f"  pair: {_pair_text(change.old)} -> {_pair_text(change.new)}")
        lines += [f"    {e.to_text()}" for e in change.explanations]
    return "\n".join(lines)


def _pair_text(state: Any) -> str:
    return "(not compiled)" if state is ABSENT else str(state)


def count_pairs(*documents: Mapping[str, Any]) -> int:
    """Return how many distinct stage/model pairs the lock documents hold together."""
    return len(
        {
            (stage, model)
            for document in documents
            for stage, models in document.get("stages", {}).items()
            for model in models
        }
    )


def load_locks(
    old: str, new: str, registry_for: Callable[[str], Registry]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turn two inputs into two lock documents, whichever kind they are.

    Each input is a lock file or an OpenRouter models list (``GET /api/v1/models``
    snapshot); both must be of the same kind. Each models list is compiled against the
    same models.yaml and stages.yaml, so the diff shows what the metadata change does.

    Args:
        old: path of the old lock file or models list.
        new: path of the new one.
        registry_for: loads the registry of a models list (its path) together with
            models.yaml and stages.yaml; it raises :class:`MetadataError` for a file
            that is not a models list.

    Returns:
        ``(old_document, new_document)``.

    Raises:
        LockFileError: an input is neither a valid lock nor a models list, or the two
            inputs are of different kinds.
        DeclarationError: models.yaml or stages.yaml is invalid.
        MetadataError: a URL input could not be fetched or is not a models list.
        ContractError: a stage's contract does not import.
    """
    sides: list[tuple[str, dict[str, Any]]] = []
    for location in (old, new):
        if "://" not in location and not Path(location).is_file():
            raise LockFileError(f"{location}: no such file")
        try:
            registry = registry_for(location)
        except MetadataError as not_models:
            if "://" in location:  # a URL is a models list (a lock is read from a file)
                raise
            try:
                sides.append(("lock file", read_lock(location)))
            except LockFileError as not_lock:
                raise LockFileError(
                    f"neither a models list ({not_models}) nor a lock file ({not_lock})"
                ) from not_lock
            continue
        sides.append(("models list", build_lock(registry)))
    (old_kind, old_doc), (new_kind, new_doc) = sides
    if old_kind != new_kind:
        raise LockFileError(
            f"{old} is a {old_kind} but {new} is a {new_kind}; give two lock files "
            "or two models lists"
        )
    return old_doc, new_doc
