"""The projector builds its result read-only as it goes (no plain tree frozen at the end),
the meta-schema guard reads ``FrozenDict``/``FrozenList`` as it reads ``dict``/``list``, and
the projection's text is ``json.dumps(indent=2)``'s, written by :func:`indent_json`.

Outputs are pinned elsewhere (tests/test_output_hashes.py); these check the shape of what
changed: every container of a projected schema is frozen, none is shared with the
contract, and ``vouch`` answers the same for a frozen tree as for its plain copy.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Iterator
from enum import IntEnum
from typing import Any

import pydantic
import pytest

from compiler.errors import ProjectionError
from compiler.metaschema.draft2020 import vouch
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.frozen_json import (
    FrozenDict,
    FrozenList,
    freeze_json,
    indent_json,
    thaw_json,
)
from compiler.schema.projection import project
from tests.fixtures.contracts.corpus import CORPUS

FROZEN = (FrozenDict, FrozenList)


def containers(value: Any) -> Iterator[Any]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            yield item
            stack.extend(item.values() if isinstance(item, dict) else item)


def projections() -> Iterator[tuple[str, str, Any, OutputContract]]:
    wide = pydantic.create_model("Wide", **{f"f{i}": (int, 0) for i in range(50)})  # type: ignore[call-overload]
    for name, kind in [*CORPUS.items(), ("Wide", wide)]:
        contract = OutputContract.from_type(kind)
        for dialect in DIALECTS.values():
            try:
                yield name, dialect.name, project(contract, dialect), contract
            except ProjectionError:
                continue


def test_every_container_of_a_projection_is_read_only_and_its_own() -> None:
    for name, dialect, projection, contract in projections():
        source = {id(item) for item in containers(contract.schema)}
        for item in containers(projection.schema):
            assert type(item) in FROZEN, (name, dialect, item)
            assert id(item) not in source, (name, dialect, item)  # never the contract's
        plain = thaw_json(projection.schema)
        copied = copy.deepcopy(projection.schema)
        assert copied == plain
        for tree in (plain, copied):  # plain, and one container per place (none shared)
            found = list(containers(tree))
            assert all(type(item) in (dict, list) for item in found)
            assert len({id(item) for item in found}) == len(found), (name, dialect)


def test_shared_branches_are_one_object_and_their_copies_are_not() -> None:
    """Every nullable property shares one read-only ``{"type": "null"}``, and those of one
    type one ``anyOf`` list; a deep copy gives each property its own, so editing one
    changes no other."""
    wide = OutputContract.from_type(pydantic.create_model(  # type: ignore[call-overload]
        "Nullable4", **{f"f{i}": (int, 0) for i in range(3)}, s=(str, "")))
    schema = project(wide, DIALECTS["openai-strict"]).schema
    lists = [schema["properties"][f"f{i}"]["anyOf"] for i in range(3)]
    assert all(branches is lists[0] for branches in lists)
    assert lists[0] == [{"type": "integer"}, {"type": "null"}]
    text = schema["properties"]["s"]["anyOf"]
    assert text == [{"type": "string"}, {"type": "null"}] and text is not lists[0]
    assert text[1] is lists[0][1]
    assert [schema["properties"][f"f{i}"]["title"] for i in range(3)] == ["F0", "F1", "F2"]
    copied = copy.deepcopy(schema)
    copied["properties"]["f0"]["anyOf"][1]["type"] = "string"
    copied["properties"]["f0"]["anyOf"][0]["type"] = "number"
    assert copied["properties"]["f1"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert schema["properties"]["f0"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]


def test_vouch_reads_frozen_containers_as_plain_ones() -> None:
    for name, dialect, projection, _ in projections():
        plain = thaw_json(projection.schema)
        assert vouch(projection.schema, FROZEN) is vouch(plain) is True, (name, dialect)
        assert vouch(projection.schema) is False  # without the pair: not plain JSON data


@pytest.mark.parametrize("schema", [
    {"type": "object", "required": ["a", "a"]},
    {"type": []},
    {"anyOf": []},
    {"properties": {"a": {"minLength": -1}}},
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"]},
    {"enum": [1, {"a": [2]}], "dependentRequired": {"a": ["b"]}},
])
def test_vouch_answers_the_same_for_a_frozen_copy(schema: dict[str, Any]) -> None:
    assert vouch(freeze_json(schema), FROZEN) is vouch(schema)


def test_a_dict_subclass_other_than_the_pair_is_not_vouched_for() -> None:
    class Odd(dict[str, Any]):
        pass

    assert vouch({"properties": {"a": Odd(type="string")}}, FROZEN) is False


def test_wide_projection_is_the_same_under_a_replaced_dialect() -> None:
    """The bench's like-for-like dialect (size limits lifted) projects as openai-strict does."""
    wide = OutputContract.from_type(pydantic.create_model(  # type: ignore[call-overload]
        "Wide200", **{f"f{i}": (int, 0) for i in range(200)}))
    strict = DIALECTS["openai-strict"]
    unlimited = dataclasses.replace(strict, max_properties=None, max_total_chars=None)
    a, b = project(wide, strict), project(wide, unlimited)
    assert a.schema_json == b.schema_json and a.sha256 == b.sha256 and a.changes == b.changes


def _document(rng: random.Random, depth: int, pool: list[Any]) -> Any:
    """A random JSON-ish value: frozen and plain containers, a shared container now and
    then (at any depth), and the odd values ``json.dumps`` writes its own way."""
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice([
            "", "a", "é\n\"\\\t\x00\u2028", "\U0001f600", 0, -1, 2**70, 1.5, -0.0, 1e300, 5e-324,
            True, False, None, float("nan"), float("inf"), IntEnum("E", "A").A, (), {}, [],
        ])
    if roll < 0.4 and pool:
        return rng.choice(pool)
    size = rng.randint(0, 4)
    if rng.random() < 0.5:
        names = [rng.choice(["k", "é", "a/b", "", "k2"]) + str(i) for i in range(size)]
        made: Any = {name: _document(rng, depth + 1, pool) for name in names}
        if rng.random() < 0.05:
            made[rng.choice([1, 2.5, True, None])] = 0  # a key json.dumps converts
    else:
        made = [_document(rng, depth + 1, pool) for _ in range(size)]
        if rng.random() < 0.2:
            made = tuple(made)
    if rng.random() < 0.5:
        made = freeze_json(made) if not isinstance(made, tuple) else made
        pool.append(made)
    return made


def test_indent_json_writes_what_json_dumps_writes() -> None:
    rng = random.Random(19)
    for _ in range(600):
        doc = _document(rng, 0, [])
        try:
            expected: Any = json.dumps(doc, indent=2, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            expected = type(exc)
        if isinstance(expected, type):
            with pytest.raises(expected):
                indent_json(doc)
        else:
            assert indent_json(doc) == expected


def test_indent_json_of_a_cycle_raises_as_json_dumps_does() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        indent_json({"a": loop})


def test_every_projection_text_is_json_dumps_of_its_schema() -> None:
    for name, dialect, projection, _ in projections():
        assert projection.schema_json == json.dumps(projection.schema, indent=2,
                                                    ensure_ascii=False), (name, dialect)
