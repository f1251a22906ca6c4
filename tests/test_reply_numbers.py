"""Numbers that overflow, huge integers, deep replies and dict keys in error paths
(issue 22, round 3).

``1e999`` reads as infinity: refused at its path on the contract path (parse_reply's own
pre-parse) as on the lock reader's; a 5,000-digit integer is "a number too large"; a
reply nested 100,000 levels is named by the nesting limit, not the values limit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import create_model

from compiler.errors import ReplyValidationError
from compiler.reply.parse import parse_reply
from compiler.reply.schema_check import check_reply
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projection import project

FLOATS = create_model("Floats", f=(float, 0.0), ys=(list[float], []), n=(int, 0))
SCHEMA = {"type": "object", "properties": {"f": {"type": "number"},
                                           "ys": {"type": "array", "items": {"type": "number"}},
                                           "n": {"type": "integer"}}}


def _contract_path(text: str) -> list[tuple[str, str]]:
    contract = OutputContract.from_type(FLOATS)
    with pytest.raises(ReplyValidationError) as caught:
        parse_reply(text, contract, project(contract, DIALECTS["json"]), strip_fence=False)
    return list(caught.value.errors)


def _lock_path(text: str) -> list[tuple[str, str]]:
    contract = OutputContract.from_type(FLOATS)
    with pytest.raises(ReplyValidationError) as caught:
        check_reply(text, schema=SCHEMA, sha256="numbers-test", python_re=False,
                    strip_fence=False, projection=project(contract, DIALECTS["json"]),
                    wrapper=None)
    return list(caught.value.errors)


ROWS: list[tuple[str, str, str]] = [
    ('{"f": 1e999}', "$.f", "NaN and Infinity are not JSON numbers"),
    ('{"f": -1E+400}', "$.f", "NaN and Infinity are not JSON numbers"),
    ('{"ys": [1.5, 2e309]}', "$.ys[1]", "NaN and Infinity are not JSON numbers"),
    ('{"f": ' + "9" * 400 + '.5}', "$.f", "NaN and Infinity are not JSON numbers"),
    ('{"n": ' + "7" * 5_000 + "}", "$", "Invalid JSON: a number too large to read"),
    ("[" * 100_000 + "]" * 100_000, "$", "nests 100,000 levels deep"),
]


@pytest.mark.parametrize("reader", [_contract_path, _lock_path], ids=["contract", "lock"])
@pytest.mark.parametrize(("text", "path", "message"), ROWS, ids=[r[2][:24] for r in ROWS])
def test_refused_at_its_path(reader: Any, text: str, path: str, message: str) -> None:
    errors = reader(text)
    assert any(p == path and message in m for p, m in errors), errors
    assert not any("out of range" in m for _, m in errors)


def test_large_finite_numbers_pass() -> None:
    contract = OutputContract.from_type(FLOATS)
    text = json.dumps({"f": 1.5e308, "n": int("9" * 300)})
    value = parse_reply(text, contract, project(contract, DIALECTS["json"]), strip_fence=False)
    assert value.f == 1.5e308


# -------------------------------------------- dict keys in the lock reader's error paths

@pytest.mark.parametrize(("reply", "path"), [
    ({"inner": {"Zqxkwv": 3}}, "$.inner[*]"),
    ({"inner": {"ok": 1, "Zq x": 9}}, "$.inner[*]"),
    ({"lists": {"Zqxkwv": [1, "x"]}}, "$.lists[*][1]"),
])
def test_undeclared_keys_show_as_star_on_both_paths(reply: dict[str, Any], path: str) -> None:
    from typing import Literal

    tp = create_model("Keyed", inner=(dict[str, Literal[1, 2]], {}),
                      lists=(dict[str, list[int]], {}))
    contract = OutputContract.from_type(tp)
    projection = project(contract, DIALECTS["json"])
    text = json.dumps(reply)
    paths = []
    for run in (
        lambda: parse_reply(text, contract, projection, strip_fence=False),
        lambda: check_reply(text, schema=contract.schema, sha256=contract.sha256,
                            python_re=False, strip_fence=False, projection=projection,
                            wrapper=None),
    ):
        with pytest.raises(ReplyValidationError) as caught:
            run()
        paths.append([p for p, _ in caught.value.errors])
        assert not any("Zq" in p for p, _ in caught.value.errors)
    assert paths[0] == paths[1] == [path]
