"""The lock reader's JSON Schema path is cheap on unions (issue 21/22 follow-up).

jsonschema's own ``anyOf``/``oneOf`` build every error of every branch, and a ``repr``
of the value, for each value of a union: a reply of 20,000 items matching none of 4
tagged branches took 7.5-9 s (well inside every bound). The reader checks each branch up
to its first error, settles a ``Literal`` tag at once, and builds a branch's errors in
full only for an optional field (one non-null branch), the one case it reports them.
The work is counted in errors built, never in time; the errors listed are the stock
validator's, reply for reply.
"""

from __future__ import annotations

import json
import random
from typing import Annotated, Any, Literal, Optional, Union

import jsonschema.exceptions
import pytest
from pydantic import BaseModel, Field

from compiler.errors import ReplyValidationError
from compiler.reply import schema_check
from compiler.reply.schema_check import check_reply
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.frozen_json import thaw_json
from compiler.schema.projection import project


class A(BaseModel):
    kind: Literal["a"]
    x: int


class B(BaseModel):
    kind: Literal["b"]
    y: str


class C(BaseModel):
    kind: Literal["c", "cc"]
    z: Optional[float] = None  # noqa: UP045 - the shape pydantic users write


class D(BaseModel):
    kind: Literal["d"]
    q: list[int]


class Tagged(BaseModel):
    items: list[Union[A, B, C, D]]  # noqa: UP007


class Mixed(BaseModel):
    items: list[Union[A, B, C]]  # noqa: UP007
    one: Optional[A] = None  # noqa: UP045
    tag: Union[int, str, None] = None  # noqa: UP007


class Disc(BaseModel):
    items: list[Annotated[Union[A, B], Field(discriminator="kind")]]  # noqa: UP007
    opt: Optional[list[Optional[int]]] = None  # noqa: UP045


def _errors(kind: type[BaseModel], data: Any) -> list[tuple[str, str]]:
    contract = OutputContract.from_type(kind)
    try:
        check_reply(json.dumps(data), schema=thaw_json(contract.schema), sha256=contract.sha256,
                    python_re=False, strip_fence=False,
                    projection=project(contract, DIALECTS["json"]), wrapper=None)
    except ReplyValidationError as exc:
        return list(exc.errors)
    return []


def _counted(kind: type[BaseModel], data: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    built = [0]
    init = jsonschema.exceptions.ValidationError.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(jsonschema.exceptions.ValidationError, "__init__", counting)
    _errors(kind, data)
    return built[0]


N = 2_000
WORK = [
    # (contract, reply data, the most errors the reader may build: about one per item)
    (Tagged, {"items": [{"kind": "e"}] * N}, N + 10),  # no branch's tag
    (Tagged, {"items": [{"kind": "a", "x": "s"}] * N}, 2 * N + 10),  # right tag, bad field
    (Tagged, {"items": [{"kind": "d", "q": [1]}] * N}, 10),  # valid, the last branch
    (Tagged, {"items": [{}] * N}, 5 * N + 10),  # no tag at all: one error per branch
    (Disc, {"items": [{"kind": "e"}] * N}, 2 * N + 10),  # oneOf
    (Mixed, {"items": [], "one": {"kind": "a", "x": "s"}}, 10),  # optional: in full
]  # fmt: skip


@pytest.mark.parametrize(("kind", "data", "most"), WORK)
def test_a_union_costs_about_one_error_per_value(
    kind: type[BaseModel], data: Any, most: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _counted(kind, data, monkeypatch) <= most


def test_the_stock_validator_costs_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count above measures the thing: jsonschema's own union builds 5 or more
    errors per item where the reader builds one."""
    kind, data, _most = WORK[0]
    _stock(monkeypatch)
    try:
        assert _counted(kind, data, monkeypatch) >= 5 * N
    finally:
        schema_check._VALIDATORS.clear()


def _stock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader with jsonschema's own anyOf and oneOf (the errors they list are the
    reference)."""
    schema_check._VALIDATORS.clear()
    extend = jsonschema.validators.extend

    def stock(base: Any, keywords: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        kept = {k: v for k, v in keywords.items() if k not in ("anyOf", "oneOf")}
        return extend(base, kept, *args, **kwargs)

    monkeypatch.setattr(jsonschema.validators, "extend", stock)


_VALUES: list[Any] = [None, 1, 1.5, "s", "a", "b", "c", "cc", "e", True, [], {}, [1, None],
                      {"kind": "a"}]


def _item(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return rng.choice(_VALUES)
    return {k: rng.choice(_VALUES) for k in ("kind", "x", "y", "z", "q") if rng.random() < 0.6}


def _replies(seed: int) -> list[tuple[type[BaseModel], Any]]:
    rng = random.Random(seed)
    out: list[tuple[type[BaseModel], Any]] = []
    for kind in (Tagged, Mixed, Disc):
        for _ in range(150):
            data: Any = {"items": [_item(rng) for _ in range(rng.randint(0, 4))]}
            for key in ("one", "tag", "opt"):
                if rng.random() < 0.5:
                    data[key] = rng.choice([*_VALUES, [None, 2, "x"], {"kind": "a", "x": 1}])
            out.append((kind, data if rng.random() < 0.95 else rng.choice(_VALUES)))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_errors_listed_are_the_stock_validators(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = _replies(seed)
    schema_check._VALIDATORS.clear()
    ours = [_errors(kind, data) for kind, data in replies]
    with monkeypatch.context() as patch:
        _stock(patch)
        stock = [_errors(kind, data) for kind, data in replies]
    schema_check._VALIDATORS.clear()
    assert ours == stock
    assert sum(1 for e in ours if e) > len(replies) // 2  # mostly invalid replies
