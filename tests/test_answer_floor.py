"""The answer floor holds on every model of a real catalog, every reasoning level and cap.

Reasoning counts against ``max_tokens``; a reserve that does not fit beside the answer
leaves an empty reply. Over ``models-all-2026-08-19.json`` (549 models, 135 of them
without text output), reasoning ``none`` .. ``max`` x caps {500, 2000, 8000, none}: the
answer room (``max_tokens`` minus the reasoning reserve) is at least the answer floor, or
the report says why (``tokens.clamped`` below the floor, ``tokens.answer_short``);
models without text output refuse with :class:`UnsupportedModalityError`.
"""

from __future__ import annotations

from typing import Any

import pytest

from compiler import Intent, compile_request
from compiler.cli.main import main
from compiler.errors import AdjustmentRefused, PromptTooLongError
from registry.errors import UnsupportedModalityError
from registry.resolve.capabilities import EFFORT_RANK
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

CATALOG = OPENROUTER / "models-all-2026-08-19.json"
pytestmark = pytest.mark.skipif(not CATALOG.is_file(), reason="../shared data absent")
ANSWER = 1000


def _reserve(body: dict[str, Any], budgets: Any) -> int:
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict) or reasoning.get("enabled") is False:
        return 0
    if "max_tokens" in reasoning:
        return int(reasoning["max_tokens"])
    effort = reasoning.get("effort")
    return 0 if effort in (None, "none") else int(budgets.get(effort, 0))


def test_the_answer_always_fits_or_the_report_says_why() -> None:
    """0 compiles where reasoning's reserve eats into the answer floor without a report."""
    registry = Registry.load(metadata=CATALOG, models=ROOT / "models.yaml")
    violations: list[str] = []
    compiled = refused = 0
    for model_id in registry.catalog.ids():
        for effort in EFFORT_RANK:
            for cap in (500, 2000, 8000, None):
                intent = Intent(stage="t", reasoning=effort, output_tokens=ANSWER,
                                max_tokens=cap)
                try:
                    req = compile_request(intent, model_id, registry=registry)
                except UnsupportedModalityError:
                    refused += 1
                    continue
                except AdjustmentRefused as error:  # mandatory reasoning that cannot fit
                    assert error.kinds == ("tokens.answer_short",), error
                    assert "cannot be turned off" in str(error)
                    continue
                except PromptTooLongError:
                    continue
                compiled += 1
                kinds = {a.kind for a in req.report.adjustments}
                total = req.body.get("max_tokens", req.body.get("max_completion_tokens"))
                if total is None:
                    continue  # tokens.no_length_param, covered elsewhere
                budgets = registry.resolve(model_id).reasoning.effort_budgets
                room = total - _reserve(req.body, budgets)
                budget = (req.body.get("reasoning") or {}).get("max_tokens")
                if budget is not None and budget >= total:
                    violations.append(f"{model_id} {effort} cap {cap}: budget {budget} >= "
                                      f"max_tokens {total} (the provider rejects it)")
                if "tokens.answer_short" in kinds and "effort" in (req.body.get("reasoning")
                                                                    or {}):
                    levels = registry.resolve(model_id).reasoning.efforts or tuple(EFFORT_RANK)
                    lowest = min((e for e in levels if e != "none"),
                                 key=lambda e: EFFORT_RANK[e])
                    if req.body["reasoning"]["effort"] != lowest:
                        violations.append(f"{model_id} {effort} cap {cap}: short answer "
                                          "with an effort above the lowest")
                if room < min(ANSWER, total) and "tokens.answer_short" not in kinds:
                    violations.append(f"{model_id} {effort} cap {cap}: answer room {room}")
                if total < ANSWER and not kinds & {"tokens.clamped", "tokens.answer_short"}:
                    violations.append(f"{model_id} {effort} cap {cap}: {total} unexplained")
    assert violations == []
    assert compiled > 400 * 7 * 4 * 0.9
    assert refused == 135 * 7 * 4


def test_a_model_without_text_output_is_an_input_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The CLI exits 2 with one line naming the modality, no traceback."""
    code = main(["compile", "extract_invoice", "openai/text-embedding-3-small", "--metadata",
                 str(CATALOG), "--stages", str(ROOT / "stages.yaml"), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert "embeddings" in err and "not text" in err and "Traceback" not in err
