"""The lock's writer gives exactly ``json.dumps(indent=2, sort_keys=True,
ensure_ascii=False, allow_nan=False)``: the same text, or the same error."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from compiler.artifacts.lock import build_lock, dump_lock
from compiler.artifacts.lock_text import lock_text
from compiler.schema.frozen_json import freeze_json
from registry.resolve.resolver import Registry
from tests.conftest import ROOT


def reference(document: Any) -> str:
    """What the standard library writes."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)


ODD: list[Any] = [
    {}, [], "", 0, -0.0, 1e300, 1.5e-7, 2**80, True, False, None, "é\u2028\x00\"\\/\n",
    {"b": [1, [], {}, [[]], {"x": {}}], "a": (1, "two", None), "ä": {"z": 1.0, "y": -3}},
    [{"k": [True, False, None]}, ("t", ("u",))], freeze_json({"f": [1, {"g": [2]}]}),
]


@pytest.mark.parametrize("index", range(len(ODD)))
def test_odd_values_are_written_as_json_writes_them(index: int) -> None:
    """Empty containers, tuples, read-only dicts, escapes, floats, big ints, bools."""
    assert lock_text(ODD[index]) == reference(ODD[index])


def _random(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth < 5 else 5)
    if kind == 0:
        return rng.choice(["", "a", "ü", "\t", "\"q\"", "x" * 30])
    if kind == 1:
        return rng.randint(-10**12, 10**12)
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.choice([[], {}, ()])
    if kind in (5, 6):
        return {rng.choice("abcdefgé") + str(i): _random(rng, depth + 1)
                for i in range(rng.randrange(5))}
    return [_random(rng, depth + 1) for _ in range(rng.randrange(5))]


def test_random_documents_are_written_as_json_writes_them() -> None:
    """Three hundred random nested documents, the same text."""
    rng = random.Random(19)
    for _ in range(300):
        document = _random(rng, 0)
        assert lock_text(document) == reference(document)


@pytest.mark.parametrize("document", [
    {"a": float("nan")}, [float("inf")], {1: "int key"}, {"a": {b"bytes"}}, {"a": object()},
])
def test_what_the_writer_does_not_handle_gets_jsons_own_result(document: Any) -> None:
    """A non-finite float, a non-string key, a type JSON has no form for: json.dumps's
    error (or text), whatever it is."""
    try:
        expected: Any = reference(document)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc), match=str(exc)[:20]):
            lock_text(document)
    else:
        assert lock_text(document) == expected


def test_a_cycle_is_jsons_circular_reference_error() -> None:
    """A document that contains itself."""
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        lock_text(loop)


def test_the_example_lock_is_written_as_json_writes_it() -> None:
    """The lock of the example stages (bundled seed), byte for byte."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    document = build_lock(registry)
    assert dump_lock(document) == reference(document) + "\n"


def test_shared_read_only_values_at_several_levels_are_written_as_json_writes_them() -> None:
    """One memo across calls: read-only values (lists of read-only dicts, dicts holding
    lists) recurring at other depths and in other documents, the same text each time."""
    rng = random.Random(1919)
    pieces = [freeze_json(_random(rng, 2)) for _ in range(12)]
    pieces += [freeze_json([{"kind": "a", "n": 1}, {"kind": "b", "x": [1, 2]}]),
               freeze_json({"schema": {"type": "object", "required": ["a"]}})]
    pieces += [freeze_json([p, {"in": p}]) for p in pieces[-2:]]
    memo: dict[int, Any] = {}
    for _ in range(200):
        document: Any = rng.choice(pieces)
        for _ in range(rng.randrange(5)):
            document = rng.choice([{"k": document, "other": rng.choice(pieces)},
                                   [document, rng.choice(pieces)]])
        level = rng.randrange(4)
        expected = reference(document).replace("\n", "\n" + "  " * level)
        assert lock_text(document, level, memo) == expected


def test_writing_leaves_nothing_for_the_cyclic_collector() -> None:
    """The writer's own functions are freed when it returns (no reference cycles)."""
    import gc

    document = {"a": [{"b": freeze_json({"c": [1, 2]})}, freeze_json([{"d": None}])]}
    gc.collect()
    gc.disable()
    try:
        for memo in (None, {}):
            for _ in range(50):
                lock_text(document, 3, memo)
        assert gc.collect() == 0
    finally:
        gc.enable()
