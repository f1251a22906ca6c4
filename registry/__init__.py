"""capability-compiler's registry: OpenRouter metadata plus YAML declarations.

Resolves what a model (and the endpoints that serve it) supports, with the source of
every value. Never imports :mod:`compiler`.
"""

from registry.capabilities import Provenance, ReasoningCaps, ResolvedModel, SamplingRules
from registry.catalog import Catalog, bundled_catalog, load_catalog
from registry.errors import (
    DeclarationError,
    MetadataError,
    RegistryError,
    UnknownModelError,
    UnknownStageError,
)
from registry.resolver import Registry

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
