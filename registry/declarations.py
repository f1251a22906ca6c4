"""Strict schemas of models.yaml and stages.yaml, and their loaders.

Both files are read with :func:`registry.yamlsource.load_yaml` and validated by
frozen pydantic models that forbid unknown keys and never coerce types (a quoted
``"128000"`` is not an integer). Every problem becomes a
:class:`~registry.errors.DeclarationError` that names file, line, column and key path,
and suggests the closest valid name for a misspelt key or value.

``unset``: any mapping value may be the plain scalar ``unset`` (the
:data:`~registry.yamlsource.UNSET` sentinel), meaning "remove the value inherited from
an earlier layer". The loaders take those entries out before validation (so the
validated declaration shows the field as not declared, ``None``) and report their
key paths in ``unset_paths``; the key itself is still checked (``reasonin: unset``
is an unknown key). ``unset`` is refused as a list item.

The models live in modules named for what they hold; every name in ``__all__`` is
importable from here:

- :mod:`registry.declaration_vocabulary`: the names and values declarations may use
  (``EFFORTS``, ``PARAMETERS``, ...) and the small validators that check them;
- :mod:`registry.model_declarations`: ``ModelDecl`` and its parts (models.yaml);
- :mod:`registry.stage_declarations`: ``StageDecl`` and ``OutputDecl`` (stages.yaml);
- :mod:`registry.declaration_errors`: pydantic's errors as located declaration errors;
- :mod:`registry.declaration_schema`: the published JSON Schemas;
- this module: the loaders, what they return, and :func:`decl_to_layer`.

>>> sorted(EFFORTS, key=EFFORTS.index)[:3]
['none', 'minimal', 'low']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from registry.declaration_errors import combined_error, unset_key_problem, validation_problems
from registry.declaration_schema import models_json_schema, stages_json_schema
from registry.declaration_vocabulary import (
    EFFORTS,
    KNOWN_DIALECTS,
    PARAMETERS,
    SAMPLING_PARAMETERS,
    Effort,
    is_glob,
)
from registry.model_declarations import (
    Decl,
    LimitsDecl,
    ModelDecl,
    ModelsDocument,
    PricingDecl,
    ProviderDecl,
    RangeDecl,
    ReasoningDecl,
    ReasoningSamplingDecl,
    SamplingDecl,
    StructuredOutputDecl,
)
from registry.stage_declarations import OutputDecl, StageDecl, StagesDocument
from registry.yamlsource import UNSET, KeyPath, YamlDocument, load_yaml

__all__ = [
    "EFFORTS",
    "KNOWN_DIALECTS",
    "PARAMETERS",
    "SAMPLING_PARAMETERS",
    "Effort",
    "LimitsDecl",
    "ModelDecl",
    "ModelsFile",
    "OutputDecl",
    "PricingDecl",
    "ProviderDecl",
    "RangeDecl",
    "ReasoningDecl",
    "ReasoningSamplingDecl",
    "SamplingDecl",
    "StageDecl",
    "StagesFile",
    "StructuredOutputDecl",
    "decl_to_layer",
    "is_glob",
    "load_models_file",
    "load_stages_file",
    "models_json_schema",
    "stages_json_schema",
]


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
