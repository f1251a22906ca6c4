"""Cross-checks of the declarations against metadata (``capc check``).

Loading models.yaml and stages.yaml already validates their shape; these checks need
the metadata too: every exact model id named in either file must be published, or
declared whole (an exact models.yaml entry with ``supported_parameters``), and every
models.yaml glob must match at least one of those ids (a glob that matches nothing, such
as a misspelt vendor, would drop its rules without a word).
"""

from __future__ import annotations

import fnmatch

from registry.declarations.vocabulary import is_glob
from registry.declarations.yamlsource import KeyPath, YamlDocument
from registry.errors import DeclarationError, closest
from registry.metadata.ranges import range_notes
from registry.resolve.aliases import follow_alias
from registry.resolve.resolver import Registry

__all__ = ["check_model_ids", "metadata_notes"]


def _problem(
    doc: YamlDocument, path: KeyPath, model_id: str, known: list[str], source: str
) -> DeclarationError:
    hint = closest(model_id, known)
    message = f"model {model_id!r} is not in the metadata ({source}) and is not declared whole"
    if hint:
        message += "; did you mean " + ", ".join(repr(h) for h in hint) + "?"
    return doc.error(message, path)


def _glob_problem(doc: YamlDocument, glob: str, known: list[str], source: str) -> DeclarationError:
    vendors = sorted({f"{i.split('/', 1)[0]}/*" for i in known if "/" in i})
    hint = closest(glob, vendors)
    message = (
        f"glob {glob!r} matches no model in the metadata ({source}) and no model declared "
        "whole, so its rules apply to nothing"
    )
    if hint:
        message += "; did you mean " + ", ".join(repr(h) for h in hint) + "?"
    else:
        message += "; fix the pattern or remove the entry"
    return doc.error(message, ("models", glob))


def check_model_ids(registry: Registry) -> list[DeclarationError]:
    """Return a problem for each model id in the YAML files that resolves to nothing.

    Args:
        registry: the loaded registry (metadata plus declarations).

    Returns:
        One :class:`DeclarationError` per unknown id, naming file, line, key path and
        the three closest known ids, and one per models.yaml glob that matches no known
        id (with the closest ``vendor/*`` globs); empty when every id and glob is known.
    """
    known = registry.known_ids()
    declared = set(known)
    problems: list[DeclarationError] = []
    source = registry.catalog.describe()
    if registry.models_file is not None:
        doc = registry.models_file.document
        for key in registry.models_file.models:
            if not is_glob(key) and key not in declared:
                problems.append(_problem(doc, ("models", key), key, known, source))
            elif is_glob(key) and not any(fnmatch.fnmatchcase(i, key) for i in known):
                problems.append(_glob_problem(doc, key, known, source))
    if registry.stages_file is not None:
        doc = registry.stages_file.document
        for name, stage in registry.stages_file.stages.items():
            whole = {k for k, d in stage.overrides.items() if d.supported_parameters is not None}
            places: list[tuple[KeyPath, str]] = [
                (("stages", name, "models", i), m) for i, m in enumerate(stage.models)
            ]
            places += [(("stages", name, "overrides", m), m) for m in stage.overrides]
            for path, model_id in places:
                if model_id not in declared and model_id not in whole:
                    problems.append(_problem(doc, path, model_id, known, source))
    return problems


def _named_ids(registry: Registry) -> set[str]:
    """The exact model ids models.yaml and stages.yaml name (models and overrides)."""
    ids: set[str] = set()
    if registry.models_file is not None:
        ids |= {k for k in registry.models_file.models if not is_glob(k)}
    if registry.stages_file is not None:
        for stage in registry.stages_file.stages.values():
            ids |= set(stage.models) | set(stage.overrides)
    return ids


def metadata_notes(registry: Registry) -> list[str]:
    """Return one note per published limit or price that reads as unknown because it is
    out of range (a limit not positive, a negative or non-finite price, a non-finite
    number), naming the model, the field and the value, in metadata order, for the
    models the YAML files name by exact id (a glob does not count: the 2026-08-19 list
    has 60 such models, mostly non-text ones with ``context_length: 0``; ``capc show
    MODEL`` lists any model's). ``capc check`` prints these notes (they are not errors:
    the value is simply unknown). Also one note per named alias whose ``alias_target``
    is a chain, a loop, the id itself or an id not listed (:func:`follow_alias`)."""
    named = _named_ids(registry)
    notes: list[str] = []
    for model_id in registry.catalog.ids():
        if model_id not in named:
            continue
        core = registry.catalog.core(model_id)
        if core is not None and core.get("out_of_range"):
            notes += range_notes(model_id, core)
        notes += follow_alias(registry.catalog.core, model_id)[1]
    return notes
