"""A stage's adjustment policy: per kind (or ``prefix.*``, or ``*``) report, warn or refuse."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from compiler.errors import AdjustmentRefused, AdjustmentWarning
from compiler.intent import Intent
from compiler.report import AdjustmentReport

__all__ = ["action_for", "check_refused", "warn_for", "warns"]


def action_for(policy: Mapping[str, str], kind: str) -> str:
    """Return the action for ``kind``: the exact key, else the longest ``prefix.*``,
    else ``*``, else ``report``."""
    if kind in policy:
        return policy[kind]
    parts = kind.split(".")
    for i in range(len(parts) - 1, 0, -1):
        action = policy.get(".".join(parts[:i]) + ".*")
        if action is not None:
            return action
    return policy.get("*", "report")


def _policy(intent: Intent) -> dict[str, str] | None:
    if not intent.policy and intent.output_policy != "required":
        return None  # everything is "report"
    policy = dict(intent.policy)
    if intent.output_policy == "required":
        policy.setdefault("output.downgraded", "refuse")
        policy.setdefault("tokens.answer_short", "refuse")
    return policy


def check_refused(intent: Intent, report: AdjustmentReport) -> None:
    """Raise when the policy refuses a kind that occurred in ``report``.

    Raises:
        AdjustmentRefused: carries the report and the refused kinds.
    """
    policy = _policy(intent)
    if policy is None:
        return
    hits = [a for a in report.adjustments if action_for(policy, a.kind) == "refuse"]
    if hits:
        refused = [a.kind for a in hits]
        detail = "; ".join(f"{a.kind} at {a.path}: {a.reason}" for a in hits[:3])
        more = f" (and {len(hits) - 3} more)" if len(hits) > 3 else ""
        raise AdjustmentRefused(
            f"stage {report.stage!r} refuses {', '.join(sorted(set(refused)))} for "
            f"{report.model}: {detail}{more}",
            report=report,
            kinds=refused,
        )


def warns(intent: Intent, report: AdjustmentReport) -> bool:
    """Whether :func:`warn_for` would issue any warning for ``report``."""
    policy = _policy(intent)
    return policy is not None and any(
        action_for(policy, adjustment.kind) == "warn" for adjustment in report.adjustments)


def warn_for(intent: Intent, report: AdjustmentReport, *, stacklevel: int = 3) -> None:
    """Issue an :class:`AdjustmentWarning` for each adjustment whose kind is ``warn``."""
    policy = _policy(intent)
    if policy is None:
        return
    for adjustment in report.adjustments:
        if action_for(policy, adjustment.kind) == "warn":
            warnings.warn(
                f"{report.stage}/{report.model}: {adjustment.kind} at {adjustment.path}: "
                f"{adjustment.reason}",
                AdjustmentWarning,
                stacklevel=stacklevel,
            )
