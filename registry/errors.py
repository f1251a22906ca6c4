"""Errors raised by :mod:`registry`.

Every error the registry raises derives from :class:`RegistryError`; errors from
dependencies (PyYAML, pydantic, httpx, diskcache) are mapped to the most specific
class below and chained with ``from``::

    RegistryError
    ├── MetadataError          metadata that cannot be read or parsed (file, URL, payload)
    ├── DeclarationError       models.yaml / stages.yaml that is invalid (file, line, key path)
    ├── RoutingError           provider routing that matches no endpoint (carries close slugs)
    ├── UnsupportedModalityError a model whose output modalities exclude text
    ├── UnknownModelError      a model id found in no source (carries close matches)
    └── UnknownStageError      a stage name not declared in stages.yaml (carries close matches)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "DeclarationError",
    "MetadataError",
    "RegistryError",
    "RoutingError",
    "SourceUnavailableError",
    "UnknownModelError",
    "UnknownStageError",
    "UnsupportedModalityError",
    "closest",
]


def closest(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` candidates closest to ``word`` (difflib ratio, best first).

    >>> closest("gpt-4o-mni", ["openai/gpt-4o-mini", "x"])
    ['openai/gpt-4o-mini']
    """
    pool = list(candidates)
    found = difflib.get_close_matches(word, pool, n=n, cutoff=0.4)
    if len(found) < n and "/" in word:
        tail = word.rsplit("/", 1)[1]
        by_tail = {c.rsplit("/", 1)[-1]: c for c in pool}
        for hit in difflib.get_close_matches(tail, list(by_tail), n=n, cutoff=0.5):
            if by_tail[hit] not in found:
                found.append(by_tail[hit])
    return found[:n]


class RegistryError(Exception):
    """Root of every error raised by the registry."""


class MetadataError(RegistryError):
    """Model metadata could not be read or parsed.

    Attributes:
        source: the file path or URL that failed.
    """

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message)
        self.source = source


class SourceUnavailableError(MetadataError):
    """A metadata source named explicitly (``--metadata https://...``) could not be had:
    its fetch failed and no copy of it may stand in (only the default source falls
    back). The CLI exits 1 for it, as for any failed fetch."""


class DeclarationError(RegistryError):
    """A models.yaml or stages.yaml problem.

    Attributes:
        file: the YAML file path.
        line: 1-based line number, or ``None`` when the problem has no position.
        column: 1-based column, or ``None``.
        key_path: dotted key path inside the file (``models.anthropic/*.reasoning``).
        problems: the located problems this error combines (each a
            :class:`DeclarationError`), or ``()`` for a single problem.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        line: int | None = None,
        column: int | None = None,
        key_path: str = "",
    ) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.key_path = key_path
        self.detail = message
        self.problems: tuple[DeclarationError, ...] = ()
        where = file
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        prefix = f"{where}: {key_path}: " if key_path else f"{where}: "
        super().__init__(prefix + message)


class _UnknownName(RegistryError):
    noun = "name"

    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        msg = f"unknown {self.noun} {name!r}"
        if suggestions:
            msg += "; did you mean " + ", ".join(repr(s) for s in suggestions) + "?"
        super().__init__(msg)


class UnsupportedModalityError(RegistryError):
    """A model whose published ``architecture.output_modalities`` has no ``text``
    (embeddings, speech, rerank, image-only): it cannot answer a chat completion.

    Attributes:
        model: the model id.
        modalities: the published output modalities.
    """

    def __init__(self, model: str, modalities: tuple[str, ...]) -> None:
        self.model = model
        self.modalities = modalities
        super().__init__(
            f"{model} outputs {', '.join(modalities) or 'nothing'}, not text: it cannot "
            "serve a chat completion; choose a text model (capc models --supports max_tokens)"
        )


class UnknownModelError(_UnknownName):
    """A model id that no metadata source lists and no declaration defines whole."""

    noun = "model"


class UnknownStageError(_UnknownName):
    """A stage name that stages.yaml does not declare."""

    noun = "stage"


class RoutingError(RegistryError):
    """A ``provider`` routing object that no endpoint of the model can satisfy.

    Attributes:
        suggestions: the closest endpoint slugs, for a misspelt one.
    """

    def __init__(self, message: str, *, suggestions: list[str]) -> None:
        self.suggestions = suggestions
        if suggestions:
            message += "; did you mean " + ", ".join(repr(s) for s in suggestions) + "?"
        super().__init__(message)
