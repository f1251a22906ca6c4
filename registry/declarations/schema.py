"""The published JSON Schemas of models.yaml and stages.yaml, for editors.

They are pydantic's schemas of :class:`~registry.declarations.models.ModelsDocument`
and :class:`~registry.declarations.stages.StagesDocument`, plus two things pydantic
does not add by itself: each field's description, taken from the docstring written
under the field in the source of the module that defines its class, and ``unset``
as an allowed value of every mapping entry. ``docs/schema/*.schema.json`` are these
schemas as ``capc schema`` prints them.
"""

from __future__ import annotations

import functools
from typing import Any, Final, get_args

from pydantic import BaseModel

from registry.declarations.models import ModelsDocument
from registry.declarations.stages import StagesDocument

__all__ = ["models_json_schema", "stages_json_schema"]


def models_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of models.yaml, for editors.

    >>> models_json_schema()["required"]
    ['models']
    """
    return _publish(ModelsDocument, "models.yaml")


def stages_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of stages.yaml, for editors.

    >>> stages_json_schema()["required"]
    ['stages']
    """
    return _publish(StagesDocument, "stages.yaml")


_UNSET_SCHEMA: Final[dict[str, Any]] = {
    "const": "unset",
    "description": "Remove the inherited value.",
}
_ANNOTATIONS: Final = ("title", "description", "default")


def _or_unset(schema: dict[str, Any]) -> dict[str, Any]:
    notes: dict[str, Any] = {k: schema[k] for k in _ANNOTATIONS if k in schema}
    rest = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    arms = rest["anyOf"] if set(rest) == {"anyOf"} else [rest]
    return {**notes, "anyOf": [*arms, dict(_UNSET_SCHEMA)]}


def _allow_unset(node: Any) -> None:
    """In place: let every mapping value below ``node`` also be the plain scalar ``unset``."""
    if isinstance(node, list):
        for item in node:
            _allow_unset(item)
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):  # a map of names, not a schema
            for sub in value.values():
                _allow_unset(sub)
            node[key] = {name: _or_unset(sub) for name, sub in value.items()}
            continue
        _allow_unset(value)
        if key == "additionalProperties" and isinstance(value, dict):
            node[key] = _or_unset(value)


@functools.cache
def _attribute_docs(module: str) -> dict[str, dict[str, str]]:
    """Class name -> field -> the docstring written under the field in ``module``'s source."""
    import ast
    import inspect
    import sys

    tree = ast.parse(inspect.getsource(sys.modules[module]))
    docs: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                fields[stmt.target.id] = inspect.cleandoc(after.value.value)
        docs[node.name] = fields
    return docs


def _field_docs(root: type[BaseModel]) -> dict[str, dict[str, str]]:
    """Class name -> field -> docstring, for ``root`` and every model its fields reach."""
    docs: dict[str, dict[str, str]] = {}
    pending: list[Any] = [root]
    while pending:
        tp = pending.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ not in docs:
                docs[tp.__name__] = _attribute_docs(tp.__module__).get(tp.__name__, {})
                pending.extend(field.annotation for field in tp.model_fields.values())
        else:
            pending.extend(get_args(tp))
    return docs


def _describe_fields(schema: dict[str, Any], docs: dict[str, str]) -> None:
    for branch in schema.get("anyOf", []):
        if isinstance(branch, dict):
            _describe_fields(branch, docs)
    for name, doc in docs.items():
        prop = schema.get("properties", {}).get(name)
        if isinstance(prop, dict):
            prop.setdefault("description", doc)


def _publish(root: type[BaseModel], title: str) -> dict[str, Any]:
    schema = root.model_json_schema()
    docs = _field_docs(root)
    _describe_fields(schema, docs.get(root.__name__, {}))
    for name, definition in schema.get("$defs", {}).items():
        _describe_fields(definition, docs.get(name, {}))
        _allow_unset(definition)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": title}
