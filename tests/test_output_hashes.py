"""Every optimisation keeps outputs byte-identical: bodies, reports, locks and audits.

The reference is ``tests/fixtures/output_hashes.json``, written by
``scripts/make_output_hashes.py`` before a change; see ``tests/output_hashes.py`` for
what each hash covers (example stages x every model of the 2026-08-19 snapshot, and
the 2026-05-18 models with their endpoints, as route plans).
"""

from __future__ import annotations

import json

import pytest

from tests.output_hashes import FIXTURE, OPENROUTER, SETS, compute

pytestmark = pytest.mark.skipif(not OPENROUTER.is_dir(), reason="../shared data absent")


@pytest.mark.parametrize("name", sorted(SETS))
def test_outputs_match_the_reference(name: str) -> None:
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))[name]
    got = compute(name)
    changed = [f"{stage} / {model}" for stage, models in expected["pairs"].items()
               for model, sha in models.items() if got["pairs"].get(stage, {}).get(model) != sha]
    assert got["pairs"].keys() == expected["pairs"].keys()
    assert not changed, f"{len(changed)} outputs changed, first: {changed[:5]}"
    assert {s: m.keys() for s, m in got["pairs"].items()} == {
        s: m.keys() for s, m in expected["pairs"].items()}
    assert got["whole"] == expected["whole"]
