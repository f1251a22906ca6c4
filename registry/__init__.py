"""capability-compiler's registry: OpenRouter metadata plus YAML declarations.

Resolves what a model (and the endpoints that serve it) supports, with the source of
every value. Never imports :mod:`compiler`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.errors import (
        DeclarationError,
        MetadataError,
        RegistryError,
        UnknownModelError,
        UnknownStageError,
    )
    from registry.metadata.catalog import Catalog, bundled_catalog, load_catalog
    from registry.resolve.capabilities import (
        Provenance,
        ReasoningCaps,
        ResolvedModel,
        SamplingRules,
    )
    from registry.resolve.resolver import Registry

#: public name -> the module that defines it; imported on first use (PEP 562), so
#: ``import registry`` stays cheap for callers that need only part of the API.
_EXPORTS: dict[str, str] = {
    "Catalog": "registry.metadata.catalog",
    "DeclarationError": "registry.errors",
    "MetadataError": "registry.errors",
    "Provenance": "registry.resolve.capabilities",
    "ReasoningCaps": "registry.resolve.capabilities",
    "Registry": "registry.resolve.resolver",
    "RegistryError": "registry.errors",
    "ResolvedModel": "registry.resolve.capabilities",
    "SamplingRules": "registry.resolve.capabilities",
    "UnknownModelError": "registry.errors",
    "UnknownStageError": "registry.errors",
    "bundled_catalog": "registry.metadata.catalog",
    "load_catalog": "registry.metadata.catalog",
}

__all__ = [
    "Catalog",
    "DeclarationError",
    "MetadataError",
    "Provenance",
    "ReasoningCaps",
    "Registry",
    "RegistryError",
    "ResolvedModel",
    "SamplingRules",
    "UnknownModelError",
    "UnknownStageError",
    "bundled_catalog",
    "load_catalog",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
