"""Differential test: our openai-strict projection against the openai SDK's strict conversion.

Every contract of ``tests/fixtures/contracts/corpus.py`` goes through
:func:`compiler.schema.projection.project` (dialect ``openai-strict``) and through
``openai.lib._pydantic.to_strict_json_schema`` (a ``TypeAdapter`` for types that
are not ``BaseModel`` subclasses). Both results are judged by
:func:`strict_rule_violations`, a checker written here from OpenAI's documented
Structured Outputs rules (not from ``compiler.schema.dialects``, so it can disagree).

What must hold: wherever the SDK's schema is accepted, ours is accepted too or
our projection names a blocker (and strict is then not used). In fact, every
projection without a blocker must be accepted. Every difference between the two
schemas is listed in :data:`EXPLAINED` with its explanation; the test recomputes
the difference and compares, so an explanation cannot outlive what it explains.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, TypeAdapter

from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from tests.fixtures.contracts.corpus import CORPUS

OPENAI_STRICT = DIALECTS["openai-strict"]

# --------------------------------------------------------------------------- the documented rules
# From https://platform.openai.com/docs/guides/structured-outputs ("Supported schemas"),
# summarised with sources in ../shared/reference/structured-output-rules.md section 2.

#: Types the guide lists (``enum`` and ``anyOf`` are keywords below); ``null`` is how the
#: guide says to emulate an optional field.
TYPES = frozenset({"string", "number", "boolean", "integer", "object", "array", "null"})

#: Keywords a strict schema may use: structure, the type-specific keywords the guide lists
#: (strings: pattern, format; numbers: multipleOf, maximum, exclusiveMaximum, minimum,
#: exclusiveMinimum; arrays: minItems, maxItems), definitions and references, and the two
#: annotations the guide's own examples carry. Everything else (allOf, oneOf, not,
#: if/then/else, dependentRequired, dependentSchemas, default, examples, minLength,
#: patternProperties, prefixItems, uniqueItems, discriminator ...) is outside the list.
KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$ref", "$defs", "description", "title",
    "pattern", "format",
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems",
})

#: String formats the guide lists.
FORMATS = frozenset({
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
})

MAX_PROPERTIES = 5000  # object properties in the whole schema
MAX_DEPTH = 10  # levels of object nesting (the root object is level 1)
MAX_ENUM_VALUES = 1000  # enum values in the whole schema
MAX_CHARS = 120_000  # property names + definition names + enum values + const values
BIG_ENUM = 250  # a string enum with more values than this ...
BIG_ENUM_CHARS = 15_000  # ... may hold at most this many characters in total

_SAYS_WHAT = ("type", "enum", "const", "anyOf", "$ref")


def _children(node: Mapping[str, Any], at: str) -> Iterator[tuple[str, Any]]:
    """Subschemas of ``node`` with their pointers (unsupported containers included)."""
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        if isinstance(node.get(key), Mapping):
            for name, sub in node[key].items():
                yield f"{at}/{key}/{name.replace('~', '~0').replace('/', '~1')}", sub
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(node.get(key), list):
            for index, sub in enumerate(node[key]):
                yield f"{at}/{key}/{index}", sub
    for key in ("items", "not", "if", "then", "else"):
        if key in node:
            yield f"{at}/{key}", node[key]
    if isinstance(node.get("additionalProperties"), Mapping):
        yield f"{at}/additionalProperties", node["additionalProperties"]


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return target


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _node_violations(at: str, node: Any) -> Iterator[str]:
    if not isinstance(node, Mapping):
        yield f"{at}: a boolean schema is not supported"
        return
    for key in node:
        if key not in KEYWORDS:
            yield f"{at}: keyword {key!r} is not supported"
    if not any(key in node for key in _SAYS_WHAT):
        yield f"{at}: the schema names no type"
    kinds = node.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in TYPES:
            yield f"{at}: type {kind!r} is not supported"
    ref = node.get("$ref")
    if ref is not None and (not isinstance(ref, str) or not ref.startswith("#")):
        yield f"{at}: only local references are supported"
    if ref is not None and len(node) > 1:
        yield f"{at}: keywords beside $ref"
    if "format" in node and node["format"] not in FORMATS:
        yield f"{at}: format {node['format']!r} is not supported"
    if _is_object(node):
        if node.get("additionalProperties") is not False:
            yield f"{at}: object without additionalProperties false"
        props = node.get("properties", {})
        missing = [name for name in props if name not in node.get("required", [])]
        if missing:
            yield f"{at}: properties not required: {', '.join(missing)}"
    if (kinds == "array" or (isinstance(kinds, list) and "array" in kinds)) and "items" not in node:
        yield f"{at}: array without items"
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) > BIG_ENUM and all(isinstance(v, str) for v in enum):
        size = sum(len(v) for v in enum)
        if size > BIG_ENUM_CHARS:
            yield f"{at}: a string enum of {len(enum)} values holds {size} characters"


def _depth(root: Mapping[str, Any], node: Any, refs: frozenset[str]) -> int:
    if not isinstance(node, Mapping):
        return 0
    deepest = 0
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and ref not in refs:
        deepest = _depth(root, _resolve(root, ref), refs | {ref})
    for at, sub in _children(node, ""):
        if not at.startswith(("/$defs", "/definitions")):
            deepest = max(deepest, _depth(root, sub, refs))
    return deepest + (1 if _is_object(node) else 0)


def strict_rule_violations(schema: Any) -> list[str]:
    """List every way ``schema`` breaks OpenAI's documented strict Structured Outputs rules.

    Rules: the root is an object and not ``anyOf``; every object has
    ``additionalProperties: false`` and lists all its properties in ``required``;
    only the supported keywords, types and string formats; every schema names
    what it accepts and every array its items; references are local and carry no
    sibling keywords (the API's "$ref cannot have keywords" refusal); at most 5,000
    properties, 10 levels of object nesting, 1,000 enum values and 120,000
    characters of names and values, and at most 15,000 characters in a string enum
    of more than 250 values.

    Args:
        schema: a candidate ``response_format.json_schema.schema``.

    Returns:
        One sentence per violation; empty when the schema is acceptable.
    """
    if not isinstance(schema, Mapping):
        return ["/: the root is not a schema object"]
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append("/: the root is not type object")
    if "anyOf" in schema or "oneOf" in schema:
        problems.append("/: the root is a union")
    properties = enum_values = chars = 0
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        at, node = stack.pop()
        problems.extend(_node_violations(at or "/", node))
        if not isinstance(node, Mapping):
            continue
        props = node.get("properties")
        if isinstance(props, Mapping):
            properties += len(props)
            chars += sum(len(name) for name in props)
        if at == "" and isinstance(node.get("$defs"), Mapping):
            chars += sum(len(name) for name in node["$defs"])
        if isinstance(node.get("enum"), list):
            enum_values += len(node["enum"])
            chars += sum(len(v if isinstance(v, str) else json.dumps(v)) for v in node["enum"])
        if "const" in node:
            value = node["const"]
            chars += len(value if isinstance(value, str) else json.dumps(value))
        stack.extend(_children(node, at))
    depth = _depth(schema, schema, frozenset())
    for count, limit, what in (
        (properties, MAX_PROPERTIES, "object properties"),
        (depth, MAX_DEPTH, "levels of object nesting"),
        (enum_values, MAX_ENUM_VALUES, "enum values"),
        (chars, MAX_CHARS, "characters of names and values"),
    ):
        if count > limit:
            problems.append(f"/: {count} {what} (at most {limit})")
    return problems


# --------------------------------------------------------------------------- the two conversions


def sdk_strict(tp: Any) -> dict[str, Any]:
    """The openai SDK's strict schema of ``tp`` (a TypeAdapter for non-BaseModel types)."""
    is_model = isinstance(tp, type) and issubclass(tp, BaseModel)
    schema: dict[str, Any] = to_strict_json_schema(tp if is_model else TypeAdapter(tp))
    return schema


def ours(name: str) -> Projection:
    """Our openai-strict projection of corpus contract ``name``."""
    return project(OutputContract.from_type(CORPUS[name]), OPENAI_STRICT)


# --------------------------------------------------------------------------- the difference


def _unref(root: Mapping[str, Any], node: Any) -> tuple[Any, str | None]:
    """Resolve a ``$ref`` (siblings laid over the target); return the node and the ref."""
    if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = _resolve(root, ref)
        return {**target, **siblings}, ref
    return node, None


def _is_nullable_wrapper(node: Any) -> bool:
    return (
        isinstance(node, Mapping)
        and isinstance(node.get("anyOf"), list)
        and len(node["anyOf"]) == 2
        and node["anyOf"][1] == {"type": "null"}
    )


class _Differ:
    """Walk our schema and the SDK's side by side, naming what differs (see ``difference``)."""

    def __init__(self, our_root: Mapping[str, Any], sdk_root: Mapping[str, Any]) -> None:
        self.our_root, self.sdk_root = our_root, sdk_root
        self.tags: set[str] = set()
        self.seen: set[tuple[str | None, str | None]] = set()

    def compare(self, a: Any, b: Any) -> None:
        a, ref_a = _unref(self.our_root, a)
        b, ref_b = _unref(self.sdk_root, b)
        if ref_a is not None or ref_b is not None:
            if (ref_a, ref_b) in self.seen:
                return
            self.seen.add((ref_a, ref_b))
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            if a != b:
                self.tags.add("~schema")
            return
        if _is_nullable_wrapper(a) and not _is_nullable_wrapper(b) and "anyOf" not in b:
            self.tags.add("+null")
            notes = {k: v for k, v in a.items() if k != "anyOf"}
            self.compare({**a["anyOf"][0], **notes}, b)
            return
        for key in sorted(set(a) | set(b)):
            if key in ("$defs", "definitions"):
                continue  # compared where they are used
            if key not in b:
                self.tags.add("~oneOf" if key == "anyOf" and "oneOf" in b else "+" + key)
                if key == "anyOf" and "oneOf" in b:
                    self._pairs(a[key], b["oneOf"])
            elif key not in a:
                if not (key == "oneOf" and "anyOf" in a):
                    self.tags.add("-" + key)
            else:
                self._value(key, a[key], b[key])

    def _pairs(self, a: list[Any], b: list[Any]) -> None:
        if len(a) != len(b):
            self.tags.add("~branches")
        for x, y in zip(a, b, strict=False):
            self.compare(x, y)

    def _value(self, key: str, a: Any, b: Any) -> None:
        if key == "properties" and isinstance(a, Mapping) and isinstance(b, Mapping):
            if list(a) != list(b):
                self.tags.add("~properties")
            for name in sorted(a.keys() & b.keys()):
                self.compare(a[name], b[name])
        elif key in ("anyOf", "allOf", "prefixItems") and isinstance(a, list) and (
            isinstance(b, list)
        ):
            self._pairs(a, b)
        elif key in ("items", "additionalProperties") and isinstance(a, Mapping) and (
            isinstance(b, Mapping)
        ):
            self.compare(a, b)
        elif a != b:
            self.tags.add("~" + key)


def difference(p: Projection, sdk: Mapping[str, Any]) -> frozenset[str]:
    """Name how our projection differs from the SDK's schema, after resolving references.

    Tags: ``-key`` the SDK has a keyword we do not; ``+key`` we have one it does not;
    ``~key`` both have it with different values; ``+null`` we made a value nullable;
    ``~oneOf`` we say ``anyOf`` where it says ``oneOf``; ``root-wrapped`` our root is
    the ``{"result": ...}`` wrapper (compared inside it).
    """
    ours_schema: Mapping[str, Any] = json.loads(p.schema_json)
    differ = _Differ(ours_schema, sdk)
    if p.wrapped_root is not None:
        differ.tags.add("root-wrapped")
        differ.compare(ours_schema["properties"][p.wrapped_root], sdk)
    else:
        differ.compare(ours_schema, sdk)
    return frozenset(differ.tags)


def verdict(p: Projection, sdk: Mapping[str, Any]) -> str:
    """``sdk=<accepted|rejected> ours=<accepted|rejected|blocked>``."""
    sdk_ok = not strict_rule_violations(sdk)
    ours_state = "blocked" if p.blockers else (
        "accepted" if not strict_rule_violations(p.schema) else "rejected"
    )
    return f"sdk={'accepted' if sdk_ok else 'rejected'} ours={ours_state}"


# --------------------------------------------------------------------------- tests


def test_the_corpus_is_large_and_varied() -> None:
    """At least 30 contracts, with the shapes the issue names."""
    assert len(CORPUS) >= 30
    for name in ("Nested", "OptionalNone", "Enums", "Literals", "ModelUnion",
                 "DiscriminatedField", "DiscriminatedRoot", "ListOfModels", "OpenDict", "Dates",
                 "ConstrainedStrings", "ConstrainedNumbers", "Node", "Wide"):
        assert name in CORPUS
    assert len(OutputContract.from_type(CORPUS["Wide"]).schema["properties"]) == 200


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "array", "items": {"type": "string"}}, "the root is not type object"),
        ({"anyOf": [{"type": "object", "properties": {}, "additionalProperties": False,
                     "required": []}]}, "the root is a union"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
         "additionalProperties false"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": [],
          "additionalProperties": False}, "not required: a"),
        ({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}},
          "required": ["a"], "additionalProperties": False}, "'minLength'"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}},
          "required": ["a"], "additionalProperties": False}, "format 'uri'"),
        ({"type": "object", "properties": {"a": {"title": "A"}}, "required": ["a"],
          "additionalProperties": False}, "names no type"),
        ({"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"],
          "additionalProperties": False}, "array without items"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}},
          "required": ["a"], "additionalProperties": False,
          "$defs": {"A": {"type": "string"}}}, "keywords beside $ref"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": list(map(str, range(
            1001)))}}, "required": ["a"], "additionalProperties": False}, "1001 enum values"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": [
            f"{i:060d}" for i in range(251)]}}, "required": ["a"], "additionalProperties": False},
         "holds 15060 characters"),
    ],
)
def test_the_checker_catches_each_rule(schema: dict[str, Any], expected: str) -> None:
    """Each documented rule, broken alone, is reported (so a clean verdict means something)."""
    problems = strict_rule_violations(schema)
    assert any(expected in problem for problem in problems), problems


def test_the_checker_counts_nesting_through_references() -> None:
    """Depth follows $ref once per path: ten levels pass, eleven do not; recursion ends."""
    assert not strict_rule_violations(ours("Deep10").schema)
    assert any("11 levels" in p for p in strict_rule_violations(sdk_strict(CORPUS["Deep11"])))
    assert not strict_rule_violations(ours("Node").schema)


@pytest.mark.parametrize("name", list(CORPUS))
def test_ours_is_accepted_wherever_the_sdks_is(name: str) -> None:
    """Without a blocker our schema meets every documented rule; with one, it names why."""
    p = ours(name)
    sdk = sdk_strict(CORPUS[name])
    problems = strict_rule_violations(p.schema)
    if p.blockers:
        assert all(OPENAI_STRICT.name in blocker for blocker in p.blockers), p.blockers
    else:
        assert problems == [], problems
    if not strict_rule_violations(sdk):
        assert not problems or p.blockers


class Explained(NamedTuple):
    """One recorded difference: the verdicts, what differs, and why."""

    verdict: str
    tags: frozenset[str]
    why: str


def _x(verdict: str, tags: str, why: str) -> Explained:
    return Explained(verdict, frozenset(tags.split()), why)


BOTH = "sdk=accepted ours=accepted"
SDK_REJECTED = "sdk=rejected ours=accepted"
BLOCKED = "sdk=rejected ours=blocked"

#: Every contract whose two schemas differ, or whose verdicts are not both "accepted".
EXPLAINED: dict[str, Explained] = {
    "OptionalDefault": _x(
        SDK_REJECTED, "-default +null",
        "Fields with non-None defaults: the SDK keeps `default` (not a supported keyword) and "
        "makes the field required as its plain type, so the model must always invent a value. "
        "We strip `default` and make the field nullable; a null reply means absent, so the "
        "contract's default applies on parse.",
    ),
    "NullableWithDefault": _x(
        SDK_REJECTED, "-default",
        "`int | None = 10`: the SDK strips only `default: None`, so `default: 10` stays; we "
        "strip every default (defaults are annotations, never sent).",
    ),
    "Literals": _x(
        SDK_REJECTED, "-default +null",
        "`size: Literal[1, 2, 3] = 2`: as OptionalDefault, the SDK keeps `default: 2`; we "
        "strip it and make the field nullable.",
    ),
    "ListOfModels": _x(
        SDK_REJECTED, "-default +null",
        "`Item.qty: int = 1` keeps `default` in the SDK's schema; we strip it and make `qty` "
        "nullable. `extras` (a default_factory, so no `default` in the schema) is made "
        "nullable by us and plain required by the SDK.",
    ),
    "ListRoot": _x(
        SDK_REJECTED, "root-wrapped -default +null",
        "A list root: the SDK leaves the root an array, which strict mode refuses; we wrap it "
        "in {\"result\": ...} and unwrap on parse. Inside, Item.qty as in ListOfModels.",
    ),
    "DiscriminatedField": _x(
        SDK_REJECTED, "~oneOf -discriminator",
        "The SDK does not rewrite `oneOf` nor drop `discriminator`, neither supported; we "
        "use `anyOf` (each branch's `kind` constant still tells them apart) and drop the "
        "OpenAPI hint.",
    ),
    "DiscriminatedRoot": _x(
        SDK_REJECTED, "root-wrapped ~oneOf -discriminator",
        "A discriminated union as the root: the SDK's root is a `oneOf` (not an object, and a "
        "union); we wrap it in {\"result\": ...} and use `anyOf`.",
    ),
    "OpenDict": _x(
        BLOCKED, "",
        "dict[str, int]: both keep `additionalProperties: {type: integer}`, which strict mode "
        "refuses; the SDK sends it anyway, our projection reports a blocker so the compiler "
        "uses JSON mode (the contract still validates the reply).",
    ),
    "DictOfModels": _x(
        BLOCKED, "",
        "dict[str, Point]: an open object, as OpenDict; blocker on our side.",
    ),
    "AllowExtra": _x(
        BLOCKED, "",
        "extra='allow' gives `additionalProperties: true`; the SDK leaves it (refused), we "
        "report a blocker.",
    ),
    "AnyValue": _x(
        BLOCKED, "",
        "`payload: Any` is the empty schema, which names no type; the SDK sends it, we report "
        "a blocker (strict enforcement cannot express 'any value').",
    ),
    "Tuples": _x(
        BLOCKED, "-prefixItems +description",
        "tuple[int, str] is `prefixItems`, not a supported keyword. The SDK keeps it; we drop "
        "it (restated in the description, still validated on the reply), which leaves an "
        "array without `items`, so we report a blocker instead of enforcing 'any items'.",
    ),
    "BigEnum": _x(
        BLOCKED, "",
        "1,001 enum values exceed the 1,000 limit in both; the SDK does not check limits, our "
        "projection reports a blocker.",
    ),
    "Deep11": _x(
        BLOCKED, "",
        "Eleven object levels exceed the 10-level limit in both; blocker on our side.",
    ),
    "WebFormats": _x(
        SDK_REJECTED, "-format -minLength +description",
        "AnyUrl is `format: uri` with `minLength: 1`; neither is supported. The SDK keeps "
        "both; we drop them, restate them in the description, and pydantic still checks the "
        "URL on the reply. `format: email` is supported and kept by both.",
    ),
    "ConstrainedStrings": _x(
        SDK_REJECTED, "-minLength -maxLength +description",
        "The guide's string keywords are `pattern` and `format` only (its fine-tuned-model "
        "note suggests length limits may work elsewhere, but they are not listed); the SDK "
        "keeps `minLength`/`maxLength`, we drop and restate them and check them on the "
        "reply. `pattern` is kept by both.",
    ),
    "ConstrainedLists": _x(
        SDK_REJECTED, "-uniqueItems +description",
        "set[int] is `uniqueItems: true`, unsupported; the SDK keeps it, we drop and restate "
        "it (pydantic builds a set from the reply). minItems/maxItems are kept by both.",
    ),
    "Binary": _x(
        SDK_REJECTED, "-format +description",
        "bytes is `format: binary`, not a listed format; the SDK keeps it, we drop and "
        "restate it.",
    ),
    "Annotated": _x(
        SDK_REJECTED, "-examples -deprecated",
        "`examples` and `deprecated` are annotations outside the keyword list; the SDK "
        "keeps them, we remove them (annotations are not restated).",
    ),
    "Node": _x(
        BOTH, "+null",
        "A recursive tree; both accepted (OpenAI supports recursion). `children` has a "
        "default_factory, so pydantic writes no `default`: the SDK makes it a required list, "
        "we make it required and nullable, and a null reply gets the empty-list default.",
    ),
    "WithModelDefault": _x(
        SDK_REJECTED, "-default +null",
        "`where: Point = Point(x=0, y=0)` is `$ref` plus `default`; the SDK inlines the "
        "reference and keeps the object default (unsupported keyword); we strip the default "
        "and keep a pure `$ref` (made nullable: a null reply gets the default).",
    ),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_every_difference_is_explained(name: str) -> None:
    """The observed verdicts and difference equal the recorded ones (none recorded = none)."""
    p = ours(name)
    sdk = sdk_strict(CORPUS[name])
    observed = (verdict(p, sdk), difference(p, sdk))
    recorded = EXPLAINED.get(name, Explained(BOTH, frozenset(), ""))
    assert observed == (recorded.verdict, recorded.tags), (
        f"{name}: observed {observed}; update EXPLAINED with the reason"
    )
    if name in EXPLAINED:
        assert recorded.why.strip()
        assert recorded.tags or recorded.verdict != BOTH


def test_no_stale_explanations() -> None:
    """Every explained name is in the corpus."""
    assert set(EXPLAINED) <= set(CORPUS)
