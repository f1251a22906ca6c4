"""One entry of the metadata cache, and its byte format.

An entry is stored as bytes, never pickled: a one-line JSON header (format, source URL,
kind, ``fetched_at``, count, SHA-256 of the body, and for a models list the length,
SHA-256 and version of its core part and the SHA-256 of the body it was made from), a
newline, the core part if any
(:func:`registry.metadata.core.core_json`), then the response body as received.
:class:`~registry.sources.cache.MetadataCache` stores and reads these; this module only encodes
and decodes them. Format 2 added the core part; format-1 entries are still read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from registry.metadata.core import CORE_FORMAT

__all__ = ["CacheEntry", "Kind"]

Kind = Literal["models", "endpoints"]
"""What a cached payload is: a models list or one model's ``/endpoints`` response."""

_FORMAT = 2
_READABLE_FORMATS = (1, 2)  # format 1: no core part


@dataclass(frozen=True)
class CacheEntry:
    """One cached payload.

    Attributes:
        source: the URL it was fetched from (without credentials).
        kind: ``"models"`` or ``"endpoints"``.
        fetched_at: when it was fetched (UTC).
        count: models (for a models list) or endpoints it lists.
        payload: the response body as received (decoded from gzip).
        core: for a models list, the core fields of ``payload`` as
            :func:`registry.metadata.core.core_json` wrote them; ``None`` for endpoints,
            for a body ``core_json`` declines (a bare array), for entries stored before
            this part existed, and when the stored part was written for another version
            of the core fields (:data:`registry.metadata.core.CORE_FORMAT`) or another
            body (the part's ``body`` hash is not the payload's: the payload's SHA-256,
            checked anyway, is the one hash computed; an entry without it is unbound).
    """

    source: str
    kind: Kind
    fetched_at: datetime
    count: int
    payload: bytes
    core: bytes | None = None

    def age(self, now: datetime | None = None) -> timedelta:
        """Return how long ago the payload was fetched.

        Args:
            now: the current time (default: the clock).

        Returns:
            The age; never negative (a timestamp in the future counts as age 0).
        """
        current = now if now is not None else datetime.now(UTC)
        return max(current - self.fetched_at, timedelta(0))

    def is_fresh(self, ttl: float, now: datetime | None = None) -> bool:
        """Whether the entry is younger than ``ttl`` seconds.

        Args:
            ttl: time to live in seconds.
            now: the current time (default: the clock).

        Returns:
            ``True`` when it may be served without a request.
        """
        return self.age(now).total_seconds() < ttl

    def to_bytes(self) -> bytes:
        """Encode the entry as stored: a JSON header line, the core part (if any), then
        the payload."""
        body_sha256 = hashlib.sha256(self.payload).hexdigest()
        header: dict[str, object] = {
            "format": _FORMAT,
            "source": self.source,
            "kind": self.kind,
            "fetched_at": self.fetched_at.isoformat(),
            "count": self.count,
            "sha256": body_sha256,
        }
        core = b""
        if self.core is not None:
            core = self.core
            header["core"] = {
                "format": CORE_FORMAT,
                "length": len(core),
                "sha256": hashlib.sha256(core).hexdigest(),
                "body": body_sha256,  # the payload it was made from (the hash above)
            }
        head = json.dumps(header, separators=(",", ":")).encode()
        return head + b"\n" + core + self.payload

    @classmethod
    def from_bytes(cls, blob: bytes) -> CacheEntry:
        """Decode a stored entry.

        Args:
            blob: bytes written by :meth:`to_bytes`.

        Returns:
            The entry.

        Raises:
            ValueError: the bytes are not an entry of a format this version reads, a
                header field has an impossible value, or the payload or the core part
                does not match its checksum.
        """
        try:
            return cls._decode(blob)
        except (KeyError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
            raise ValueError(f"malformed header ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _decode(cls, blob: bytes) -> CacheEntry:
        end = blob.find(b"\n")
        if end < 0:
            raise ValueError("no header line")
        header = json.loads(blob[:end])
        start = end + 1  # where the core part (if any) or the payload begins
        if not isinstance(header, dict) or header.get("format") not in _READABLE_FORMATS:
            raise ValueError("unknown entry format")
        core: bytes | None = None
        core_header = header.get("core")
        if core_header is not None:
            length = core_header["length"]
            if type(length) is not int or not 0 <= length <= len(blob) - start:
                raise ValueError("core part longer than the entry")
            core = blob[start : start + length]
            start += length
            if hashlib.sha256(core).hexdigest() != core_header.get("sha256"):
                raise ValueError("core part does not match its checksum")
            if (core_header.get("format") != CORE_FORMAT
                    or core_header.get("body") != header.get("sha256")):
                core = None  # other core fields, or another body: read the payload instead
        payload = blob[start:]  # one copy of the body, however large
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            raise ValueError("payload does not match its checksum")
        kind = header["kind"]
        if kind not in ("models", "endpoints"):
            raise ValueError(f"unknown kind {kind!r}")
        fetched_at = datetime.fromisoformat(header["fetched_at"])
        if fetched_at.tzinfo is None:
            fetched_at = fetched_at.replace(tzinfo=UTC)
        return cls(
            source=str(header["source"]),
            kind=kind,
            fetched_at=fetched_at,
            count=_whole(header["count"]),
            payload=payload,
            core=core,
        )


def _whole(value: object) -> int:
    """A header's count: a non-negative JSON integer, else ValueError."""
    if type(value) is not int or value < 0:
        raise ValueError(f"impossible count {value!r}")
    return value
