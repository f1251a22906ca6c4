"""Strict schemas of models.yaml and stages.yaml, and their loaders.

Both files are read with :func:`registry.declarations.yamlsource.load_yaml` and validated by
frozen pydantic models that forbid unknown keys and never coerce types (a quoted
``"128000"`` is not an integer). Every problem becomes a
:class:`~registry.errors.DeclarationError` that names file, line, column and key path,
and suggests the closest valid name for a misspelt key or value.

``unset``: any mapping value may be the plain scalar ``unset`` (the
:data:`~registry.declarations.yamlsource.UNSET` sentinel), meaning "remove the value inherited from
an earlier layer". The loaders take those entries out before validation (so the
validated declaration shows the field as not declared, ``None``) and report their
key paths in ``unset_paths``; the key itself is still checked (``reasonin: unset``
is an unknown key). ``unset`` is refused as a list item.

The rest of this folder holds the parts the loaders use:

- :mod:`registry.declarations.vocabulary`: the names and values declarations may use
  (``EFFORTS``, ``PARAMETERS``, ...) and the small validators that check them;
- :mod:`registry.declarations.models`: ``ModelDecl`` and its parts (models.yaml);
- :mod:`registry.declarations.stages`: ``StageDecl`` and ``OutputDecl`` (stages.yaml);
- :mod:`registry.declarations.problems`: pydantic's errors as located declaration errors;
- :mod:`registry.declarations.schema`: the published JSON Schemas;
- this module: the loaders, what they return, and :func:`decl_to_layer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from registry.declarations.models import (
    Decl,
    ModelDecl,
    ModelsDocument,
)
from registry.declarations.problems import combined_error, unset_key_problem, validation_problems
from registry.declarations.stages import StageDecl, StagesDocument
from registry.declarations.yamlsource import UNSET, KeyPath, YamlDocument, load_yaml

__all__ = ["ModelsFile", "StagesFile", "decl_to_layer", "load_models_file", "load_stages_file"]


@dataclass(frozen=True)
class ModelsFile:
    """A validated models.yaml.

    Attributes:
        path: the file, as given.
        document: the raw document, for positions (``document.locate(path)``).
        models: key (exact id or glob) -> declaration, in file order.
        unset_paths: key paths (from the root, e.g. ``("models", "openai/*", "notes")``)
            whose value was ``unset``.
    """

    path: str
    document: YamlDocument
    models: Mapping[str, ModelDecl]
    unset_paths: frozenset[KeyPath]


@dataclass(frozen=True)
class StagesFile:
    """A validated stages.yaml.

    Attributes:
        path: the file, as given; relative contract paths are relative to its directory.
        document: the raw document, for positions.
        stages: stage name -> intent, in file order.
        unset_paths: key paths whose value was ``unset``.
    """

    path: str
    document: YamlDocument
    stages: Mapping[str, StageDecl]
    unset_paths: frozenset[KeyPath]

    def model_ids(self) -> tuple[str, ...]:
        """Every model id the stages name: each stage's ``models`` list, then its
        ``overrides`` keys, stage by stage in file order, each id once (first seen).

        Returns:
            The ids as written (``:variant`` suffixes kept); empty when no stage names one.
        """
        seen: dict[str, None] = {}
        for stage in self.stages.values():
            for model_id in (*stage.models, *stage.overrides):
                seen.setdefault(model_id, None)
        return tuple(seen)


def load_models_file(path: str | Path) -> ModelsFile:
    """Load and validate a models.yaml.

    Args:
        path: the file.

    Returns:
        The validated declarations with positions and ``unset`` paths.

    Raises:
        DeclarationError: the file is unreadable, not valid YAML, or breaks the schema.
            With several problems, the message lists each on its own line.
    """
    doc, parsed, unset = _load(path, "models", ModelsDocument)
    assert isinstance(parsed, ModelsDocument)
    return ModelsFile(str(path), doc, parsed.models, unset)


def load_stages_file(path: str | Path) -> StagesFile:
    """Load and validate a stages.yaml.

    Args:
        path: the file.

    Returns:
        The validated stages with positions and ``unset`` paths.

    Raises:
        DeclarationError: the file is unreadable, not valid YAML, or breaks the schema.
            With several problems, the message lists each on its own line.
    """
    doc, parsed, unset = _load(path, "stages", StagesDocument)
    assert isinstance(parsed, StagesDocument)
    return StagesFile(str(path), doc, parsed.stages, unset)


def decl_to_layer(decl: BaseModel) -> dict[str, Any]:
    """Return a declaration's declared values as nested dicts (``None`` fields left out).

    Python values are kept (``Decimal`` prices stay ``Decimal``).

    >>> from registry.declarations.models import LimitsDecl, ModelDecl
    >>> decl_to_layer(ModelDecl(limits=LimitsDecl(context_length=8192)))
    {'limits': {'context_length': 8192}}
    """
    return decl.model_dump(exclude_none=True)


def _load(
    path: str | Path, top: str, root: type[Decl]
) -> tuple[YamlDocument, Decl, frozenset[KeyPath]]:
    doc = load_yaml(path, top)
    unset: list[KeyPath] = []
    data = _strip_unset(doc.data, (), unset)
    problems = [p for key in unset if (p := unset_key_problem(doc, root, key)) is not None]
    try:
        parsed = root.model_validate(data)
    except ValidationError as exc:
        problems += validation_problems(doc, root, exc)
        parsed = None
    if problems:
        raise combined_error(problems)
    assert parsed is not None
    return doc, parsed, frozenset(unset)


def _strip_unset(data: Any, path: KeyPath, found: list[KeyPath]) -> Any:
    """Copy ``data`` without its ``unset`` mapping values, appending their paths to ``found``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if value is UNSET:
                found.append((*path, key))
            else:
                out[key] = _strip_unset(value, (*path, key), found)
        return out
    if isinstance(data, list):
        return [_strip_unset(item, (*path, i), found) for i, item in enumerate(data)]
    return data
