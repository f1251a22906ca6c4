"""A caller tool, normalised: name, description, input schema, checked once.

A stage (or the Python API) gives a tool in one of three forms (``docs/tools.md``):
a pydantic model (:meth:`Tool.from_model`), a name with a complete JSON Schema Draft
2020-12 input schema (:meth:`Tool.from_schema`), or a name with ordered properties, all
required and the object closed (:meth:`Tool.from_properties`). Normalisation checks

* the name: 1 to 64 characters of ``[a-zA-Z0-9_-]``, the rule OpenAI documents for
  ``function.name`` (https://platform.openai.com/docs/api-reference/chat/create) and the
  strictest of the providers OpenRouter forwards to (Anthropic and Gemini accept the same
  set); names unique among a stage's tools (:func:`check_tools`);
* the schema: it passes the Draft 2020-12 meta-schema (``jsonschema``'s
  ``Draft202012Validator.check_schema``), a root ``$ref`` (pydantic's schema of a
  self-recursive model is ``{"$ref": "#/$defs/Node", "$defs": {...}}``) is inlined at
  the root with ``$defs`` kept for the recursion, the root is then an object schema,
  and it has no external reference (a ``$ref``/``$dynamicRef`` that does not start
  with ``#``);
* the description is sent once: the schema root's ``description`` is the tool's
  description when none is given (a model's docstring), and it is removed from the
  schema when it says the same as the tool's description; so is the same text in the
  definition a root ``$ref`` was inlined from (a self-recursive model's ``$defs/Node``,
  whose copy the root is), and that definition is dropped when nothing refers to it
  any more (a root ``$ref`` that was not recursive).

Defaults in the schema are annotations: they are stripped by the projection and never
injected into arguments.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from compiler.errors import ContractError, ToolError
from compiler.schema.contract import OutputContract, load_contract
from compiler.schema.frozen_json import canonical_sha256, freeze_json
from compiler.schema.walk import walk_schema
from registry.outside import exception_text

__all__ = ["NAME_PATTERN", "Tool", "check_tools", "tool_from_decl"]

#: Tool names: 1 to 64 of ``[a-zA-Z0-9_-]`` (OpenAI's ``function.name`` rule).
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")

_ANY: TypeAdapter[Any] = TypeAdapter(Any)


@dataclass(frozen=True)
class Tool:
    """One caller tool.

    Attributes:
        name: the function name sent (``[a-zA-Z0-9_-]{1,64}``).
        description: shown to the model, or ``None``.
        schema: the tool's input JSON Schema as normalised (deep-frozen): as given, but
            a root ``$ref`` inlined and the root ``description`` moved to
            :attr:`description`; the one arguments are validated against (a model tool's
            with its pydantic model).
        sha256: SHA-256 of :attr:`schema` as compact JSON with sorted keys.
        model: the pydantic model when the tool was given as one (arguments are then
            validated with it), else ``None``.
        contract: the schema wrapped for the projection engine (not part of eq/hash).
    """

    name: str
    description: str | None
    schema: Mapping[str, Any] = field(hash=False)
    sha256: str
    model: type[BaseModel] | None = None
    contract: OutputContract | None = field(compare=False, hash=False, repr=False,
                                            default=None)

    @classmethod
    def from_model(
        cls, model: type[BaseModel], *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """The tool whose input is ``model`` (name: the class name, description: its
        docstring as pydantic puts it in the schema, unless given). A self-recursive
        model is accepted: its schema's root ``$ref`` is inlined.

        Raises:
            ToolError: a bad name, or pydantic cannot build the model's schema.
        """
        try:
            contract = OutputContract.from_type(model)
        except ContractError as exc:
            raise ToolError(f"tool {name or model.__name__!r}: {exc}") from exc
        tool_name = _checked_name(name or model.__name__)
        frozen, digest, text = _normalised(tool_name, contract.schema, description)
        wrapped = OutputContract(target=contract.target, schema=frozen, name=tool_name,
                                 sha256=digest, adapter=contract.adapter)
        return cls(tool_name, text, frozen, digest, model, wrapped)

    @classmethod
    def from_schema(
        cls, name: str, input_schema: Mapping[str, Any], *, description: str | None = None
    ) -> Tool:
        """The tool ``name`` whose input is the JSON Schema ``input_schema`` (a root
        ``$ref`` is inlined; the root ``description`` is the tool's when none is given).

        Raises:
            ToolError: a bad name, a schema that fails the meta-schema, a root that is not
                an object schema, or an external reference.
        """
        tool_name = _checked_name(name)
        if not isinstance(input_schema, Mapping):
            raise ToolError(f"tool {tool_name!r}: input_schema must be a JSON object (a "
                            f"mapping), not {type(input_schema).__name__}", at=("input_schema",))
        frozen, digest, text = _normalised(tool_name, input_schema, description)
        contract = OutputContract(target=dict, schema=frozen, name=tool_name, sha256=digest,
                                  adapter=_ANY)
        return cls(tool_name, text, frozen, digest, None, contract)

    @classmethod
    def from_file(
        cls, name: str, path: str | Path, *, description: str | None = None,
        base_dir: Path | None = None,
    ) -> Tool:
        """The tool ``name`` whose input schema is the JSON file ``path`` (relative paths
        start at ``base_dir``, default the current directory); see :meth:`from_schema`.

        Raises:
            ToolError: the file cannot be read, is not JSON (``file:line:column``), has
                a duplicate key (named, with the JSON Pointer of its object), or fails
                as :meth:`from_schema` says.
        """
        from compiler.tools.schema_file import load_schema_file

        schema = load_schema_file(_checked_name(name), str(path), base_dir or Path.cwd())
        return cls.from_schema(name, schema, description=description)

    @classmethod
    def from_properties(
        cls, name: str, properties: Mapping[str, Mapping[str, Any]], *,
        description: str | None = None,
    ) -> Tool:
        """The tool ``name`` whose input object has ``properties`` in order, all required,
        no other keys.

        Raises:
            ToolError: as :meth:`from_schema`.
        """
        schema = {"type": "object", "properties": {k: dict(v) for k, v in properties.items()},
                  "required": list(properties), "additionalProperties": False}
        return cls.from_schema(name, schema, description=description)

    def function(self, parameters: Any, *, strict: bool) -> dict[str, Any]:
        """The ``tools[]`` entry: ``{"type": "function", "function": {...}}``."""
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        function["parameters"] = parameters
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise ToolError(f"tool name {name!r} is invalid: use 1 to 64 characters of "
                        "letters, digits, '_' and '-'", at=("name",))
    return name


def _normalised(
    name: str, schema: Mapping[str, Any], description: str | None
) -> tuple[Mapping[str, Any], str, str | None]:
    """``(frozen schema, its SHA-256, description)``: checked, root ``$ref`` inlined,
    the root description sent once (module docstring)."""
    _check_meta(name, schema)
    root = _inline_root(name, schema)
    if root.get("type") != "object" and "properties" not in root:
        raise ToolError(f"tool {name!r}: the input schema's root must be an object schema "
                        "(type: object); wrap other values in a property", at=("input_schema",))
    for pointer, node in walk_schema(root):
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if isinstance(ref, str) and not ref.startswith("#"):
                raise ToolError(f"tool {name!r}: external {keyword} {ref!r} at "
                                f"{pointer or '/'}: a tool's input schema must be "
                                "self-contained (local '#/$defs/...' references only)",
                                at=("input_schema", *_steps(pointer)))
    said = root.get("description")
    if isinstance(said, str) and description in (None, said):
        description = said
        root = {k: v for k, v in root.items() if k != "description"}
    root = _prune_inlined(root, schema, description)
    frozen = freeze_json(root)
    return frozen, canonical_sha256(frozen), description


def _check_meta(name: str, schema: Mapping[str, Any]) -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        steps = list(exc.absolute_path)
        where = "/" + "/".join(str(p) for p in steps)
        raise ToolError(f"tool {name!r}: the input schema is not valid JSON Schema 2020-12 "
                        f"at {where}: {exc.message}", at=("input_schema", *steps)) from None


def _steps(pointer: str) -> list[str | int]:
    """The keys of a JSON Pointer (``/properties/a`` -> ``["properties", "a"]``)."""
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def _inline_root(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with a root ``$ref`` (a chain of them) replaced by its target, the
    root's other keys (``$defs`` among them) laid over it, so references inside still
    resolve and recursion stays expressed through ``$defs``."""
    node = dict(schema)
    for _ in range(32):
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node
        target: Any = schema
        if ref.startswith("#/"):
            for step in _steps(ref[1:]):
                target = target.get(step) if isinstance(target, Mapping) else None
        if not ref.startswith("#/") or not isinstance(target, Mapping):
            raise ToolError(f"tool {name!r}: the root $ref {ref!r} does not name a local "
                            "definition ('#/$defs/<name>') to inline", at=("input_schema", "$ref"))
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        for key, value in siblings.items():
            if key in target and target[key] != value and key not in _ROOT_ANNOTATIONS:
                raise ToolError(f"tool {name!r}: cannot inline the root $ref {ref!r}: "
                                f"{key!r} is set both beside it and in its target; move it "
                                "into the definition", at=("input_schema", key))
        node = {**dict(target), **siblings}
    raise ToolError(f"tool {name!r}: the root $ref chain is longer than 32 references",
                    at=("input_schema", "$ref"))


def _prune_inlined(
    root: dict[str, Any], schema: Mapping[str, Any], description: str | None
) -> dict[str, Any]:
    """The definition a root ``$ref`` named (one ``#/$defs/X`` or ``#/definitions/X``
    step): without the tool's description, and dropped when no ``$ref`` names it."""
    ref = schema.get("$ref")
    steps = _steps(ref[1:]) if isinstance(ref, str) and ref.startswith("#/") else []
    if len(steps) != 2 or steps[0] not in ("$defs", "definitions"):
        return root
    defs = root.get(steps[0])
    target = defs.get(steps[1]) if isinstance(defs, Mapping) else None
    if not isinstance(defs, Mapping) or not isinstance(target, Mapping):
        return root
    defs = dict(defs)
    if description is not None and target.get("description") == description:
        defs[steps[1]] = {k: v for k, v in target.items() if k != "description"}
    if not any(node.get("$ref") == ref for _, node in walk_schema(root)):
        del defs[steps[1]]
    out = {k: v for k, v in root.items() if k != steps[0]}
    if defs:
        out[steps[0]] = defs
    return out


#: Root keywords that may differ beside a root ``$ref`` and in its target (the root's win).
_ROOT_ANNOTATIONS = frozenset({"$defs", "definitions", "$schema", "$id", "$comment",
                               "description", "title", "examples"})


def check_tools(tools: Sequence[Tool], reserved: Iterable[str] = ()) -> None:
    """Refuse duplicate names, and names in ``reserved`` (the output tool's).

    Raises:
        ToolError: an entry that is not a :class:`Tool` (a mapping or a model class given
            as is: ``at`` ``("tools", index)``), or the first duplicate or reserved name
            (``at``: ``("tools", index, "name")``).
    """
    seen: set[str] = set()
    taken = set(reserved)
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        raise ToolError(f"tools must be a tuple of Tool objects, not {type(tools).__name__}",
                        at=("tools",))
    for index, tool in enumerate(tools):
        if not isinstance(tool, Tool):
            raise ToolError(f"tools[{index}] is a {type(tool).__name__}, not a Tool: build "
                            "it with Tool.from_model(Model), Tool.from_schema(name, schema) "
                            "or Tool.from_properties(name, properties)", at=("tools", index))
        if tool.name in seen:
            raise ToolError(f"two tools are named {tool.name!r}; tool names must be unique",
                            at=("tools", index, "name"))
        if tool.name in taken:
            raise ToolError(f"tool {tool.name!r} has the name of the output contract's tool; "
                            "rename the tool", at=("tools", index, "name"))
        seen.add(tool.name)


def tool_from_decl(decl: Any, *, base_dir: Path) -> Tool:
    """Build the tool of a stages.yaml ``tools`` entry (:class:`registry.declarations.
    tools.ToolDecl`); ``model`` and a ``module:NAME`` input schema are imported, a
    ``.json`` input schema is read (relative paths start at ``base_dir``, the stages.yaml
    directory).

    Raises:
        ToolError: the spec does not import, the file does not load, or the tool fails
            normalisation; ``at`` holds the entry's key (``("input_schema",
            "properties", "a")``, ``("name",)``, ...).
    """
    try:
        return _tool_of(decl, base_dir)
    except ToolError as exc:
        raise ToolError(str(exc), at=_entry_key(decl, exc.at)) from exc


def _tool_of(decl: Any, base_dir: Path) -> Tool:
    if decl.model is not None:
        try:
            target = load_contract(decl.model, base_dir=base_dir).target
        except ContractError as exc:
            raise ToolError(f"tool {decl.name or decl.model!r}: {exc}") from exc
        if not (isinstance(target, type) and issubclass(target, BaseModel)):
            raise ToolError(f"tool {decl.model!r}: model must name a pydantic BaseModel")
        return Tool.from_model(target, name=decl.name, description=decl.description)
    if decl.properties is not None:
        return Tool.from_properties(decl.name, decl.properties, description=decl.description)
    schema = decl.input_schema
    if isinstance(schema, str) and schema.lower().endswith(".json"):
        return Tool.from_file(decl.name, schema, description=decl.description,
                              base_dir=base_dir)
    if isinstance(schema, str):
        schema = _imported_schema(decl.name, schema, base_dir)
    return Tool.from_schema(decl.name, schema, description=decl.description)


def _entry_key(decl: Any, at: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Where in the stages.yaml entry a normalisation problem at ``at`` is written."""
    if at[:1] == ("name",):
        return ("name",) if decl.name is not None else ("model",)
    if decl.model is not None:
        return ("model",)
    if decl.properties is not None:
        inner = at[2:] if at[:2] == ("input_schema", "properties") else ()
        return ("properties", *inner)
    if isinstance(decl.input_schema, str):
        return ("input_schema",)
    return at or ("input_schema",)


def _imported_schema(name: str, spec: str, base_dir: Path | None = None) -> Any:
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr:
        raise ToolError(f"tool {name!r}: input_schema {spec!r} is neither a JSON Schema "
                        "object, a path to a .json file nor 'package.module:NAME'")
    try:
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as exc:
        hint = ""
        root = module.split(".")[0]
        if (isinstance(exc, ModuleNotFoundError) and exc.name == root and base_dir is not None
                and ((base_dir / root).is_dir() or (base_dir / f"{root}.py").is_file())):
            # as for a contract, the module form is imported from the import path only
            hint = (f"; {root!r} is in the stages.yaml folder ({base_dir}), which is not "
                    "on the import path: add that folder to PYTHONPATH, or give the "
                    "schema as a .json file or through a tool 'model'")
        raise ToolError(f"tool {name!r}: input_schema {spec!r} cannot be imported: "
                        f"{exception_text(exc)}{hint}") from exc
    return target
