"""The registry: metadata plus declarations, resolved per model and stage.

:class:`Registry` holds one metadata :class:`~registry.metadata.catalog.Catalog` and the
parsed models.yaml and stages.yaml, and resolves a model id (optionally for one
stage) to a :class:`~registry.resolve.capabilities.ResolvedModel`. Layers merge in the
order of ``docs/configuration.md``, later winning::

    built-in defaults < published metadata < models.yaml globs (least specific first)
    < models.yaml exact entry < stages.yaml per-stage, per-model overrides
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.declarations.files import (
    ModelsFile,
    StagesFile,
    load_models_file,
    load_stages_file,
)
from registry.declarations.models import ModelDecl
from registry.declarations.stages import StageDecl
from registry.declarations.vocabulary import is_glob
from registry.errors import UnknownModelError, UnknownStageError, closest
from registry.metadata.catalog import Catalog, load_endpoints_file
from registry.metadata.shapes import EndpointList
from registry.resolve.aliases import KeyIndex, entry_layers, follow_alias
from registry.resolve.assemble import build_resolved, sampling_sources
from registry.resolve.capabilities import EndpointCaps, Provenance, ResolvedModel
from registry.resolve.endpoints import endpoint_caps
from registry.resolve.group import resolve_group
from registry.resolve.layers import (
    caller_provenance,
    defaults_merged,
    endpoint_values,
    metadata_values,
    top_context_binds,
)
from registry.resolve.merge import Layer, LazyProvenance, merge_values, plain_keys
from registry.resolve.provenances import (
    endpoint_provenance,
    metadata_provenance,
    top_context_provenance,
)
from registry.resolve.routing import allowed_endpoints, restricts, unverifiable

if TYPE_CHECKING:
    from registry.sources.settings import Settings

__all__ = ["RESOLVE_MEMO", "Registry"]

#: Resolutions (model, stage, routing) a registry keeps; past it the oldest is dropped
#: (docs/performance.md: kept unbounded, the collector's passes over them grew).
RESOLVE_MEMO = 4096


@dataclass(eq=False)
class Registry:
    """Metadata plus declarations; resolves models per stage.

    Attributes:
        catalog: the metadata catalog in use (its ``describe()`` goes in every report).
        models_file: parsed models.yaml, or ``None``.
        stages_file: parsed stages.yaml, or ``None``.
        endpoint_lists: ``/endpoints`` data by model id, given up front (a file).
        settings: source and cache settings for lazy endpoint fetches (``None``: the
            ``CAPC_`` environment).
        fetch_endpoints: fetch endpoints missing from :attr:`endpoint_lists` lazily
            (set by :meth:`load` when no endpoints file is given).
        endpoints_origin: ``(source, ISO date or None)`` of :attr:`endpoint_lists`: the
            file and its date (a bundle's ``fetched_at``, else the date in the file's
            name), named in the evidence of every value it gives; ``None``: unnamed.
        notes: one line per endpoints fallback or failure met so far.
    """

    catalog: Catalog
    models_file: ModelsFile | None = None
    stages_file: StagesFile | None = None
    endpoint_lists: Mapping[str, EndpointList] = field(default_factory=dict)
    settings: Settings | None = None
    fetch_endpoints: bool = False
    endpoints_origin: tuple[str, str | None] | None = None
    notes: list[str] = field(default_factory=list, repr=False)
    _cache: dict[str | tuple[str, str | None, str, tuple[tuple[str, int], ...] | None],
                 ResolvedModel] = field(default_factory=dict, init=False, repr=False)
    _meta_provenance: Callable[[tuple[str, ...]], Provenance] | None = field(
        default=None, init=False, repr=False)
    _entry_layers: dict[tuple[str | int, ...], Layer] = field(default_factory=dict, init=False,
                                                              repr=False)
    _key_indexes: dict[int, tuple[Mapping[str, ModelDecl], KeyIndex]] = field(
        default_factory=dict, init=False, repr=False)
    _fetched: dict[str, EndpointList | None] = field(default_factory=dict, init=False, repr=False)
    _caps: dict[str, tuple[EndpointCaps, ...]] = field(default_factory=dict, init=False, repr=False)
    _endpoint_sources: dict[str, tuple[str, str | None]] = field(default_factory=dict,
                                                                 init=False, repr=False)

    @classmethod
    def load(
        cls,
        *,
        metadata: str | Path | None = None,
        models: str | Path | None = None,
        stages: str | Path | None = None,
        endpoints: str | Path | None = None,
        settings: Settings | None = None,
    ) -> Registry:
        """Load a registry from files.

        Args:
            metadata: an OpenRouter models list (file path or ``file://`` URL, read as
                it is; or an ``http(s)://`` URL); ``None`` loads OpenRouter's list
                through :func:`registry.sources.load.load_metadata`: fresh cache -> fetch ->
                stale cache -> bundled seed (no request when ``settings.offline``).
            models: path of models.yaml, or ``None`` for no declarations.
            stages: path of stages.yaml, or ``None`` for no stages.
            endpoints: a ``/endpoints`` response or a bundle of them (file path), or
                ``None``: with live or cached metadata a model's endpoints are fetched
                lazily (through the cache) when :meth:`endpoints` is first asked for
                them; with the bundled seed they come from the seed's endpoints; with
                a metadata file there are none (pass the endpoints file too, so a
                compile is reproducible offline).
            settings: source, cache and network settings; ``None`` reads the ``CAPC_``
                environment.

        Raises:
            MetadataError: the metadata file cannot be read or parsed.
            DeclarationError: a YAML file is invalid (names file, line and key).
        """
        from registry.sources.load import load_metadata

        catalog = load_metadata(metadata, settings=settings)
        lists, origin = ({}, None) if endpoints is None else _dated(endpoints)
        return cls(
            catalog=catalog,
            models_file=None if models is None else load_models_file(models),
            stages_file=None if stages is None else load_stages_file(stages),
            endpoint_lists=lists,
            settings=settings,
            fetch_endpoints=endpoints is None and catalog.origin != "file",
            endpoints_origin=origin,
        )

    def stage_names(self) -> list[str]:
        """Return the declared stage names in file order."""
        return [] if self.stages_file is None else list(self.stages_file.stages)

    def stage(self, name: str) -> StageDecl:
        """Return the declaration of stage ``name``.

        Raises:
            UnknownStageError: no such stage (carries the closest names).
        """
        if self.stages_file is None:
            error = UnknownStageError(name, [])
            error.args = (f"unknown stage {name!r}: no stages.yaml was loaded (none in the "
                          "current directory; give its path with --stages)",)
            raise error
        found = self.stages_file.stages.get(name)
        if found is None:
            raise UnknownStageError(name, closest(name, self.stages_file.stages))
        return found

    def stage_dir(self) -> Path:
        """Return the directory contract paths in stages.yaml are relative to: the
        stages file's own, or the current directory when there is none or it is not a
        regular file (``/dev/stdin``, ``<(...)``: its "directory" is ``/proc/PID/fd``)."""
        if self.stages_file is None or not Path(self.stages_file.path).is_file():
            return Path.cwd()
        return Path(self.stages_file.path).resolve().parent

    def known_ids(self) -> list[str]:
        """Return every model id that resolves: metadata ids plus models declared whole
        (an exact models.yaml entry with ``supported_parameters``)."""
        ids = self.catalog.ids()
        if self.models_file is not None:
            published = set(ids)
            ids += [
                k for k, decl in self.models_file.models.items()
                if not is_glob(k) and k not in published and decl.supported_parameters is not None
            ]
        return ids

    def endpoints(self, model_id: str) -> EndpointList | None:
        """Return the published endpoints of ``model_id``.

        From :attr:`endpoint_lists` when it lists the model; otherwise, when the
        catalog is the bundled seed, from the seed's endpoints
        (:func:`registry.metadata.seed_endpoints.bundled_endpoints`); otherwise, when
        :attr:`fetch_endpoints` is set, from :func:`registry.sources.load.load_endpoints_for`
        (fresh cache -> fetch -> stale cache, ``CAPC_STALE_DEADLINE`` when the catalog has
        the model's figures), once per model and registry. A fallback adds a note to :attr:`notes`.

        Args:
            model_id: an OpenRouter model id.

        Returns:
            The endpoints, or ``None`` when none can be had. Never raises for network
            or cache faults.
        """
        listed = self.endpoint_lists.get(model_id)
        if listed is not None:
            self._endpoint_sources[model_id] = self.endpoints_origin or ("endpoints file", None)
            return listed
        if self.catalog.origin == "seed":
            from registry.metadata.seed_endpoints import SEED_ENDPOINTS_DATE, bundled_endpoints

            self._endpoint_sources[model_id] = ("bundled seed", SEED_ENDPOINTS_DATE)
            return bundled_endpoints().get(model_id)
        if not self.fetch_endpoints:
            return None
        self._endpoint_sources[model_id] = ("GET /models/{id}/endpoints", None)
        if model_id not in self._fetched:
            from registry.sources.load import load_endpoints_for

            self._fetched[model_id] = load_endpoints_for(
                model_id, settings=self.settings, notes=self.notes,
                model_level=model_id in self.catalog)  # fmt: skip
        return self._fetched[model_id]

    def endpoint_source(self, model_id: str) -> tuple[str, str | None]:
        """Where :meth:`endpoints` found them: ``(source, ISO date or None)``."""
        return self._endpoint_sources.get(model_id, ("endpoints", None))

    def endpoint_caps(self, model_id: str) -> tuple[EndpointCaps, ...]:
        """Return the model's distinct endpoints as routing sees them (see
        :func:`registry.resolve.endpoints.endpoint_caps`), or ``()`` without data.

        An endpoint that publishes no ``supported_parameters`` inherits the model's
        published list (flagged ``assumed_parameters``). Never raises for network or
        cache faults.
        """
        found = self._caps.get(model_id)
        if found is None:
            listed = self.endpoints(model_id)
            info = self.catalog._core(model_id)
            published = None if info is None else info.get("supported_parameters")
            found = () if listed is None else endpoint_caps(
                listed, None if published is None else tuple(published))
            self._caps[model_id] = found
        return found

    def resolve(
        self,
        model_id: str,
        stage: str | None = None,
        *,
        provider: Mapping[str, Any] | None = None,
        group: tuple[EndpointCaps, ...] | None = None,
    ) -> ResolvedModel:
        """Resolve ``model_id`` (for ``stage`` when given) to its capabilities.

        Args:
            model_id: an OpenRouter model id such as ``anthropic/claude-sonnet-4.5``.
            stage: a stage name whose per-model overrides apply, or ``None``.
            provider: OpenRouter ``provider`` routing that wins over every declared one
                (e.g. pinning one endpoint); when it, or the declared routing, restricts
                the endpoints and endpoint data is loaded, the capabilities are those of
                the allowed endpoints.
            group: endpoints (from :meth:`endpoint_caps`) that must each serve the
                whole request: the capabilities are the parameters all of them list
                and their smallest limits, over which the YAML layers apply; a
                declared limit above the published one is capped to it, and every
                declared limit that differs is recorded in ``limit_changes``.

        Returns:
            The merged, frozen capabilities with provenance for every value.

        Raises:
            UnknownModelError: the id is in no metadata source and not declared whole
                (an exact models.yaml entry with ``supported_parameters``).
            UnknownStageError: ``stage`` is not declared.
            RoutingError: a provider slug matches no endpoint, or none is left.
        """
        if stage is not None and not self.stage(stage).overrides:
            stage = None  # the stage adds no layer: the resolution without it, shared
        if stage is None and not provider and group is None:
            key: str | tuple[str, str | None, str, tuple[tuple[str, int], ...] | None] = model_id
        else:
            key = (model_id, stage, "" if not provider else repr(sorted(provider.items())),
                   None if group is None else tuple((c.label, c.index) for c in group))
        cached = self._cache.get(key)
        if cached is None:
            if stage is not None and not self._stage_applies(model_id, stage):
                cached = self.resolve(model_id, None, provider=provider, group=group)
            else:
                cached = self._resolve(model_id, stage, provider, group)
            self._cache[key] = cached
            if len(self._cache) > RESOLVE_MEMO:  # the oldest goes: memory stays bounded
                del self._cache[next(iter(self._cache))]
        return cached

    def _stage_applies(self, model_id: str, stage: str) -> bool:
        """Whether an ``overrides`` entry of ``stage`` applies to ``model_id`` (else its
        resolution is the one without a stage).

        Raises:
            UnknownStageError: ``stage`` is not declared.
        """
        overrides = self.stage(stage).overrides
        if not overrides:
            return False
        target = follow_alias(self.catalog._core, model_id)[0]
        return bool(self._index(overrides).matching(model_id, target))

    def _index(self, entries: Mapping[str, ModelDecl]) -> KeyIndex:
        """The :class:`KeyIndex` of a file's entries (models or one stage's overrides),
        made once per registry."""
        found = self._key_indexes.get(id(entries))
        if found is None or found[0] is not entries:
            found = self._key_indexes[id(entries)] = (entries, KeyIndex(entries))
        return found[1]

    def _resolve(
        self,
        model_id: str,
        stage: str | None,
        provider: Mapping[str, Any] | None,
        group: tuple[EndpointCaps, ...] | None = None,
    ) -> ResolvedModel:
        info = self.catalog._core(model_id)
        models = {} if self.models_file is None else self.models_file.models
        exact = models.get(model_id)
        declared_whole = exact is not None and exact.supported_parameters is not None
        stage_decl = None if stage is None else self.stage(stage)
        if info is None and not declared_whole:
            overrides = {} if stage_decl is None else stage_decl.overrides
            stage_exact = overrides.get(model_id)
            if stage_exact is None or stage_exact.supported_parameters is None:
                error = UnknownModelError(model_id, closest(model_id, self.known_ids()))
                if exact is not None or stage_exact is not None:
                    error.args = (
                        f"model {model_id!r} is declared in YAML but absent from the metadata "
                        f"({self.catalog.describe()}); to declare it whole, give it "
                        "supported_parameters (and limits)",
                    )
                raise error

        layers: list[Layer] = []
        if info is not None:
            if self._meta_provenance is None:
                self._meta_provenance = functools.cache(metadata_provenance(self.catalog))
            meta_provenance = self._meta_provenance
            if top_context_binds(info):
                meta_provenance = top_context_provenance(meta_provenance)
            layers.append(Layer(metadata_values(info), meta_provenance, True))  # fixed keys
        alias = follow_alias(self.catalog._core, model_id)
        target = alias[0]
        if self.models_file is not None:
            layers += entry_layers(self._entry_layers, self._index(models), models, model_id,
                                   self.models_file, ("models",), "models.yaml", target)
        if stage_decl is not None and self.stages_file is not None and stage is not None:
            overrides = stage_decl.overrides
            layers += entry_layers(self._entry_layers, self._index(overrides), overrides,
                                   model_id, self.stages_file, ("stages", stage, "overrides"),
                                   "stages.yaml", target)
        if provider:
            given = {"provider": dict(provider)}
            layers.append(Layer(given, caller_provenance, plain_keys(given)))
        merged = merge_values(defaults_merged()[0], layers)
        if group:
            return resolve_group(model_id, info, layers, group,
                                 self._endpoint_provenance(model_id, group), alias)
        # Endpoints are fetched (lazily, see endpoints()) only when routing restricts them.
        pinned = restricts(merged.get("provider", {}))
        listed = self.endpoints(model_id) if pinned else self.endpoint_lists.get(model_id)
        caps = () if listed is None else self.endpoint_caps(model_id)
        if unverifiable(caps, merged.get("provider", {})):
            caps = ()  # tagless data cannot say which endpoint the slug is
        restricted = bool(caps) and pinned
        if restricted:
            caps = allowed_endpoints(model_id, caps, merged.get("provider", {}))
            if caps:  # none left: the compiler refuses with the exclusion table
                at = 1 if info is not None else 0
                layers.insert(
                    at, Layer(endpoint_values(caps), self._endpoint_provenance(model_id, caps),
                              True))
                merged = merge_values(defaults_merged()[0], layers)
        provenance = LazyProvenance(defaults_merged(), layers, merged)
        return build_resolved(model_id, merged, provenance, declared_only=info is None,
                              endpoints=caps, routing_restricted=restricted, info=info,
                              alias=alias, sampling_from=sampling_sources(layers))

    def _endpoint_provenance(
        self, model_id: str, caps: tuple[EndpointCaps, ...]
    ) -> Callable[[tuple[str, ...]], Provenance]:
        source, fetched_at = self._endpoint_sources.get(model_id, ("endpoints", None))
        return endpoint_provenance(caps, source, fetched_at)


def _dated(location: str | Path) -> tuple[dict[str, EndpointList], tuple[str, str | None]]:
    """An endpoints file's lists, and ``("endpoints file NAME", date)`` for evidence."""
    lists, source, fetched_at = load_endpoints_file(location)
    return lists, (f"endpoints file {Path(source).name}", fetched_at)
