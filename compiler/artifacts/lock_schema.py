"""The lock file's format: its pydantic model, version and published JSON Schema.

:class:`LockDocument` describes a whole ``capc.lock.json`` (see :mod:`compiler.artifacts.lock`
for how one is made and read); :func:`lock_json_schema` is its JSON Schema, also
published as ``docs/schema/lock.schema.json``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CHAT_COMPLETIONS_PATH",
    "CLIENT_HEADERS",
    "LOCK_FORMAT",
    "LOCK_SCHEMA_ID",
    "LockDocument",
    "lock_json_schema",
]

#: Version of the lock format; bumped on any incompatible change.
LOCK_FORMAT = 2
#: The ``$schema`` value of every lock document and the ``$id`` of its JSON Schema.
LOCK_SCHEMA_ID = "urn:capability-compiler:lock:2"

#: The URL path every request of the lock is sent to, below the base URL.
CHAT_COMPLETIONS_PATH = "/chat/completions"
#: The header names a client sends with each request (values are the caller's: the
#: API key is never in the lock); OpenRouter reads the last two for attribution, both
#: optional (https://openrouter.ai/docs/api-reference/overview).
CLIENT_HEADERS = ("Authorization", "Content-Type", "HTTP-Referer", "X-Title")

_SHA256 = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LockEvidence(_Strict):
    """The source that decided an adjustment."""

    layer: str
    """``default``, ``metadata``, ``endpoints``, ``models.yaml`` or ``stages.yaml``."""
    source: str
    """Metadata file name, ``bundled seed``, or ``models.yaml:LINE``."""
    field: str
    """The metadata field or YAML key path holding the value."""
    fetched_at: str | None
    """Date of the metadata (ISO); ``null`` for YAML and built-in defaults."""
    text: str
    """The evidence as one readable line."""


class LockAdjustment(_Strict):
    """One change between what the stage asked for and what the request carries."""

    kind: str
    """Stable dotted slug, catalogued in docs/adjustments.md."""
    path: str
    """Dotted body path, or ``schema:`` plus a JSON Pointer into the contract schema."""
    requested: Any
    """What the stage asked for (``null``: nothing)."""
    applied: Any
    """What the request carries (``null``: omitted)."""
    reason: str
    """One sentence a person can act on."""
    evidence: str | None
    """Where the deciding value came from: a key of the document's ``evidence`` table
    (the evidence as one readable line); ``null`` for a rule of this library."""


class LockSchemaRun(_Strict):
    """A run of ``schema.*`` adjustments stored once in the document's table."""

    schema_adjustments: _SHA256
    """Key into the document's ``schema_adjustments``: the run goes here, in order."""


class LockToolHash(_Strict):
    """One caller tool sent in the request."""

    name: str
    """The tool's function name."""
    sha256: _SHA256
    """SHA-256 of its projected ``parameters`` (compact JSON, sorted keys)."""


class LockReport(_Strict):
    """The adjustment report of one compilation."""

    stage: str
    """The stage name."""
    model: str
    """The model id."""
    metadata: str
    """The metadata source and its date, as one line."""
    rung: Literal["schema", "tool", "json", "prompt", "none"]
    """Output enforcement reached (``tool``: the reply is the forced call's arguments;
    ``none``: the stage has no contract)."""
    shown_sha256: _SHA256 | None
    """SHA-256 of the schema shown to the model."""
    enforced_sha256: _SHA256 | None
    """SHA-256 of the schema in ``response_format`` (rung ``schema`` only)."""
    notes: list[str]
    """Free-text notes."""
    adjustments: list[LockAdjustment | LockSchemaRun]
    """In the order the compiler passes made them; the projection's ``schema.*``
    adjustments are one reference into the document's ``schema_adjustments``."""
    tools: list[LockToolHash] | None = None
    """The caller tools sent, each ``{name, sha256}`` (the SHA-256 of its projected
    ``parameters``); absent for a stage without tools."""


class LockMessage(_Strict):
    """The instruction message; runtimes send ``[instructions, *their own messages]``."""

    role: Literal["system"]
    """Always ``system``."""
    content: str
    """The instruction text, with the output schema rendered into it."""


class LockMetadata(_Strict):
    """Which model metadata a compilation used."""

    source: str | None
    """File name of the models list, ``bundled seed``, or ``null`` for a model declared
    whole in models.yaml."""
    fetched_at: str | None
    """Date of the metadata (ISO), ``null`` when unknown."""
    text: str
    """One readable line, as in the report."""


class LockFailure(_Strict):
    """Why a stage/model pair has no request."""

    type: str
    """Exception class: ``AdjustmentRefused``, ``PromptTooLongError``, ``ProjectionError``
    or ``UnknownModelError``."""
    message: str
    """The error message."""
    kinds: list[str]
    """Adjustment kinds the stage's policy refused (``AdjustmentRefused`` only)."""


class LockReply(_Strict):
    """How to read a reply to this request: where the output is and what to undo."""

    source: Literal["content", "tool_arguments"]
    """``content``: ``choices[0].message.content``; ``tool_arguments``: the forced call's
    ``choices[0].message.tool_calls[0].function.arguments`` (rung ``tool``)."""
    tool: str | None
    """The forced function's name at rung ``tool``, else ``null``."""
    strip_fence: bool
    """Remove one Markdown code fence around the whole text before parsing (rungs
    ``json`` and ``prompt``: nothing enforced JSON)."""
    schema_: _SHA256 = Field(alias="schema")
    """Key into the document's ``schemas``: the shown (projected) schema the pointers
    of ``absent_nulls`` point into."""
    absent_nulls: list[str]
    """JSON Pointers into that schema of the properties the projection made nullable:
    a ``null`` there means *absent* (delete the key, so the contract default applies).
    Walk the reply with the schema (following ``$ref``; for ``anyOf``/``oneOf`` the
    first branch the value validates against), before unwrapping."""
    wrapped_root: str | None
    """The property a non-object root was wrapped in (the reply is ``{KEY: value}``;
    validate ``value``), or ``null``."""
    contract: _SHA256
    """Key into the document's ``contracts``: validate the result against its schema."""


class LockAttempt(_Strict):
    """A later route-plan attempt: a complete request for the endpoints it names."""

    endpoints: list[str]
    """Routing slugs of the endpoints this attempt is for (also in its ``provider.only``)."""
    request: dict[str, Any]
    """The chat-completions body without ``messages``."""
    instructions: LockMessage | None
    """The message to put before the caller's messages, or ``null`` without a contract."""
    report: LockReport
    """The attempt's adjustment report (``route.attempt_differs`` says why it differs)."""
    shown_sha256: _SHA256 | None
    """SHA-256 of the schema shown to the model."""
    enforced_sha256: _SHA256 | None
    """SHA-256 of the schema the provider enforces."""
    reply: LockReply | None = None
    """How to read a reply to this attempt, or ``null`` without a contract."""


class LockRoute(_Strict):
    """One endpoint of the model: the attempt that serves it, or why none does."""

    endpoint: str
    """Its routing slug."""
    provider_name: str | None
    """Its display name."""
    attempt: int | None
    """0-based index into ``[request, *attempts]``, or ``null`` when excluded."""
    excluded_by: str | None
    """Why it is excluded (docs/adjustments.md, "Exclusion reasons"), or ``null``."""
    detail: str
    """The figures behind it."""
    rung: Literal["schema", "tool", "json", "prompt", "none"] | None
    """Its attempt's rung."""
    max_tokens: int | None
    """Its attempt's length limit in tokens."""
    status: int | None
    """Its published ``status`` (``0`` operational)."""
    assumed_parameters: bool
    """It publishes no ``supported_parameters``; the model's were assumed."""
    merged: int
    """How many published endpoints share its tag."""


class LockLoop(_Strict):
    """What a runtime needs to run the request: timeouts in seconds and repair turns."""

    timeout_seconds: float | None
    """Total time for one request, in seconds (``null``: the client's default)."""
    stream_idle_seconds: float | None
    """Longest silence on a streamed response, in seconds (the timeout that matters)."""
    retries: int
    """Repair turns allowed after an invalid reply (``output.retries``)."""


class LockEntry(_Strict):
    """One stage compiled for one model."""

    status: Literal["ok", "error"]
    """``ok``: ``request`` is usable; ``error``: see ``error``."""
    request: dict[str, Any] | None
    """The chat-completions body without ``messages``."""
    instructions: LockMessage | None
    """The message to put before the caller's messages, or ``null`` without a contract."""
    report: LockReport | None
    """The adjustment report (also kept for a refused compilation)."""
    shown_sha256: _SHA256 | None
    """SHA-256 of the schema shown to the model."""
    enforced_sha256: _SHA256 | None
    """SHA-256 of the schema the provider enforces."""
    metadata: LockMetadata
    """The metadata this pair was compiled from."""
    error: LockFailure | None
    """The failure, when ``status`` is ``error``."""
    loop: LockLoop | None = None
    """The reply loop's settings (``null`` for an ``error`` entry)."""
    endpoints: list[str] | None = None
    """Routing slugs of the endpoints ``request`` is for; absent without endpoint data."""
    attempts: list[LockAttempt] | None = None
    """Later route-plan attempts, strongest first; absent when ``request`` covers every
    endpoint that can serve the model."""
    routes: list[LockRoute] | None = None
    """One row per endpoint of the model; absent without endpoint data."""
    reply: LockReply | None = None
    """How to read a reply to ``request``, or ``null`` without a contract (or an error)."""


class LockContract(_Strict):
    """An output contract, stored once and referenced by its hash."""

    name: str
    """The contract type's name."""
    spec: str | None
    """The stages.yaml ``contract`` value (``module:Class`` or ``file.py:Class``)."""
    schema_: dict[str, Any] = Field(alias="schema")
    """What pydantic validates (``TypeAdapter.json_schema(mode="validation")``, every
    constraint included); its SHA-256 (compact, sorted keys) is the key."""
    unchecked: list[str]
    """What the schema cannot express, so a JSON Schema validator does not check it:
    custom validators, and pydantic's lax coercions (``"3"`` for an integer)."""
    regex_engine: Literal["rust-regex", "python-re"] = "rust-regex"
    """The engine pydantic runs the contract's ``pattern`` values with: ``python-re``
    (Python's ``re``, backtracking) when any part of the contract asks for it, else
    ``rust-regex`` (linear time). A reader should bound the strings a backtracking
    engine runs on (``compiler.reply.bounds.MAX_PYTHON_RE_CHARS``); absent in older
    locks: ``rust-regex``."""


class LockInput(_Strict):
    """One input of the lock: where it came from and a hash of its content."""

    source: str
    """File name (never the directory), ``bundled seed``, or a URL for fetched data."""
    sha256: _SHA256 | None
    """SHA-256 of its bytes; ``null`` for data fetched from the network."""


class LockInputs(_Strict):
    """Every input the lock is a function of; ``lock --check`` names the one that changed."""

    metadata: LockInput
    """The models list."""
    endpoints: LockInput | None
    """The ``/endpoints`` data, or ``null``: none was used (model-level figures)."""
    models_yaml: LockInput | None
    """models.yaml, or ``null`` when none was given."""
    stages_yaml: LockInput
    """stages.yaml."""
    contracts: dict[str, _SHA256]
    """Every local module a contract imports (its own file included), by path relative
    to stages.yaml's directory (or module name), with the SHA-256 of its bytes."""


class LockClient(_Strict):
    """How a client sends each request (the same for every entry)."""

    method: Literal["POST"]
    """The HTTP method."""
    base_url: str
    """OpenRouter's API base URL, unless the caller uses another."""
    path: str
    """Appended to the base URL."""
    headers: list[str]
    """Header names sent (``Authorization: Bearer <key>``, ``Content-Type:
    application/json``; the attribution headers are optional); never values."""


class LockGenerator(_Strict):
    """The tool that wrote the lock."""

    name: Literal["capability-compiler"]
    """Always ``capability-compiler``."""
    version: str
    """Its installed version."""


class LockDocument(_Strict):
    """A capability-compiler lock file: every declared stage x model, compiled."""

    schema_id: Literal["urn:capability-compiler:lock:2"] = Field(alias="$schema")
    """Identifies the format."""
    format: Literal[2]
    """Version of the lock format."""
    generator: LockGenerator
    """The tool and version that wrote the lock."""
    metadata: LockMetadata
    """The metadata catalog every pair was compiled from."""
    inputs: LockInputs
    """The inputs, each with its content hash."""
    client: LockClient
    """Method, URL and header names of every request."""
    contracts: dict[str, LockContract]
    """Contract SHA-256 -> the contract's full validation schema."""
    schemas: dict[str, dict[str, Any]]
    """Shown-schema SHA-256 (``shown_sha256``) -> the projected schema shown to the
    model (and, where enforced, the one the provider enforces)."""
    stages: dict[str, dict[str, LockEntry]]
    """Stage name -> model id -> entry."""
    evidence: dict[str, LockEvidence]
    """Evidence text -> the evidence record, for every adjustment's ``evidence``."""
    schema_adjustments: dict[str, list[LockAdjustment]]
    """SHA-256 of a run of ``schema.*`` adjustments (compact JSON, sorted keys) -> the
    run, stored once for every report that makes it."""


def lock_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of the lock format.

    Returns:
        The schema, with ``$id`` :data:`LOCK_SCHEMA_ID`; also published as
        ``docs/schema/lock.schema.json``.

    >>> lock_json_schema()["$id"]
    'urn:capability-compiler:lock:2'
    """
    schema = LockDocument.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": LOCK_SCHEMA_ID,
        **schema,
        "title": "capc.lock.json",
    }
