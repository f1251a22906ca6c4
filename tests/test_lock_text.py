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
