"""The text of a lock: exactly what ``json.dumps(document, indent=2, sort_keys=True,
ensure_ascii=False, allow_nan=False)`` gives, written several times faster, and
written entry by entry so that the whole text is never held in memory.

With an ``indent`` the standard library encodes in pure Python through nested
generators, so every piece of text climbs back through one generator per level (40% of
``capc lock`` went there). :func:`lock_text` walks the document once, appending each
piece to one list, strings escaped by the standard library's C ``encode_basestring``.
Anything that writer does not handle the way ``json.dumps`` does (a key that is not a
string, a non-finite float, a type JSON has no form for, a cycle) makes
:func:`lock_text` hand the value to ``json.dumps``, so the result, or the error, is
always the standard library's own.

:class:`LockSpool` writes a lock whose ``stages`` come one entry at a time: each entry's
text is made as it arrives and kept in a spool (in memory up to
:data:`SPOOL_MEMORY` bytes, then in an unnamed temporary file), and
:meth:`LockSpool.chunks` gives the whole document's bytes in order, the same bytes as
``lock_text(document) + "\\n"`` of the document put together whole.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from compiler.schema.frozen_json import FrozenDict, FrozenList

__all__ = ["SPOOL_MEMORY", "LockSpool", "lock_text"]

_INDENT = "  "

#: Bytes of entry text a :class:`LockSpool` keeps in memory before moving to a file.
SPOOL_MEMORY = 4 << 20

#: Bytes :meth:`LockSpool.chunks` gathers before it yields them.
_CHUNK = 1 << 18

#: Read-only values whose text a walk remembers (each text the value's size, at the
#: last level it was written at): a lock's entries share a few thousand
#: (:class:`compiler.artifacts.lock_reply.LockEntries`); past this, it starts again.
_SHARED_LIMIT = 4096


class _Unsupported(Exception):
    """A value this writer does not encode as ``json.dumps`` would."""


def lock_text(document: Any, level: int = 0,
              shared: dict[int, tuple[Any, ...]] | None = None) -> str:
    """Return ``json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False,
    allow_nan=False)``, the same characters.

    Args:
        document: a JSON value.
        level: the nesting depth the value is written at (``3`` for a lock entry): every
            line after the first is indented by two spaces more per level, as it is
            inside the whole document.
        shared: a memo of the text of read-only values
            (:class:`compiler.schema.frozen_json.FrozenDict` / ``FrozenList``, such as
            the schema every request of a projection carries) by identity, kept by the
            caller across calls (an empty dict to begin with; the caller reads nothing
            from it); ``None`` remembers nothing.

    Raises:
        ValueError: a non-finite float, or a circular reference (``json``'s own error).
        TypeError: a value JSON has no form for, or a key that cannot be one.
    """
    try:
        return _write(document, level, shared)
    except (_Unsupported, TypeError, RecursionError):
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False,
                          allow_nan=False)
        # json.dumps escapes every newline inside a string: each "\n" starts a line.
        return text.replace("\n", "\n" + _INDENT * level) if level else text


def _write(document: Any, start: int, shared: dict[int, tuple[Any, ...]] | None) -> str:
    """The walk; raises _Unsupported, TypeError or RecursionError where json.dumps
    would write something else (a non-string key: ``encode`` refuses it) or fail."""
    out: list[str] = []
    encode = json.encoder.encode_basestring
    append = out.append
    frozen = (FrozenDict, FrozenList) if shared is not None else ()

    def value(item: Any, level: int) -> None:
        kind = type(item)
        if kind is str:
            append(encode(item))
        elif kind is dict:
            mapping(item, level)
        elif kind is list or kind is tuple:
            sequence(item, level)
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif kind in frozen and item:
            remembered(item, level)
        elif isinstance(item, str):
            append(encode(item))
        elif isinstance(item, int):
            append(int.__repr__(item))
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise _Unsupported
            append(float.__repr__(item))
        elif isinstance(item, dict):
            mapping(item, level)
        elif isinstance(item, list | tuple):
            sequence(item, level)
        else:
            raise _Unsupported

    def remembered(item: Any, level: int) -> None:
        # Written in place the first time; then its text is reused: (the value, kept
        # alive so that its id stays its own; the level it was last written at; its
        # text there). A read-only list's items are values of their own that recur in
        # other lists (a report's adjustments, a run of them), remembered too; a
        # read-only dict's children are parts of one value (a schema's), written as
        # they come. Every newline of a text is followed by its level's indent (strings
        # have theirs escaped), so another level's text is two replaces away.
        nonlocal frozen
        assert shared is not None
        found = shared.get(id(item))
        if found is not None and found[0] is item:
            if found[1] != level:
                text = found[2]
                text = text.replace("\n" + _INDENT * found[1], "\n") if found[1] else text
                text = text.replace("\n", "\n" + _INDENT * level) if level else text
                found = shared[id(item)] = (item, level, text)
            append(found[2])
            return
        first = len(out)
        if type(item) is FrozenList:
            sequence(item, level)
        else:
            saved, frozen = frozen, ()
            mapping(item, level)
            frozen = saved
        text = "".join(out[first:])
        del out[first:]
        append(text)
        if len(shared) >= _SHARED_LIMIT:
            shared.clear()
        shared[id(item)] = (item, level, text)

    def mapping(item: dict[Any, Any], level: int) -> None:
        if not item:
            append("{}")
            return
        inner = "\n" + _INDENT * (level + 1)
        separator = "{" + inner
        for key in sorted(item):  # keys of mixed types: TypeError, as json.dumps
            child = item[key]
            # A key that is not a string (json.dumps would convert it): TypeError.
            if type(child) is str:  # the commonest leaf, without a call of value()
                append(separator + encode(key) + ": " + encode(child))
            else:
                append(separator + encode(key) + ": ")
                value(child, level + 1)
            separator = "," + inner
        append("\n" + _INDENT * level + "}")

    def sequence(item: list[Any] | tuple[Any, ...], level: int) -> None:
        if not item:
            append("[]")
            return
        inner = "\n" + _INDENT * (level + 1)
        separator = "[" + inner
        for child in item:
            append(separator)
            value(child, level + 1)
            separator = "," + inner
        append("\n" + _INDENT * level + "]")

    try:
        value(document, start)
    finally:
        # mapping() and sequence() call value() through its cell and value() calls them
        # through theirs: cycles that only the cyclic collector would free (42,000
        # objects a lock of 2,196 pairs, most of its collections). Rebinding value
        # breaks them all, so the functions are freed on return.
        value = _finished
    return "".join(out)


def _finished(item: Any, level: int) -> None:
    """What ``value`` of a finished :func:`_write` is (nothing calls it)."""
    raise AssertionError("a finished walk was called")


class LockSpool:
    """A lock document written one ``stages`` entry at a time.

    :meth:`add` takes each entry (``stages[STAGE][MODEL]``) in any order and keeps only
    its text, encoded as UTF-8, in the spool; :meth:`finish` takes every other key of
    the document; :meth:`chunks` then gives the document's text. Memory: the spool's
    first :data:`SPOOL_MEMORY` bytes (read once more by :meth:`chunks` while the spool
    is that small), texts not yet written to it (up to 256 KiB), the rest of the
    document, and an index of about 100 bytes per entry (a dict slot and an offset);
    never the whole text of a lock past the spool's memory. A later
    :meth:`add` of the same stage and model replaces the earlier entry (as a dict
    would). Use it as a context manager, or :meth:`close` it: that frees the spool.

    Args:
        stages: stage names present even without an entry (written as ``{}``).
        spool_dir: the folder of the spool file (default: the system's temporary
            folder, ``TMPDIR``); the file has no name on Linux and is gone once closed.
    """

    def __init__(self, stages: Iterable[str] = (), *, spool_dir: str | Path | None = None):
        self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed by close()
            max_size=SPOOL_MEMORY, dir=None if spool_dir is None else str(spool_dir))
        # stage -> model -> the entry's number; entry i is bytes _starts[i]:_starts[i + 1]
        self._index: dict[str, dict[str, int]] = {name: {} for name in stages}
        self._starts = array("q", [0])
        self._size = self._added = 0
        self._pending: list[bytes] = []  # texts not yet in the file (up to _CHUNK bytes)
        self._written = 0  # bytes in the file
        self._shared: dict[int, tuple[Any, ...]] = {}
        self._rest: Mapping[str, Any] = {}

    def __enter__(self) -> LockSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Free the spool (its file is removed)."""
        self._file.close()
        self._shared.clear()

    @property
    def size(self) -> int:
        """Bytes of entry text in the spool (entries replaced by a later :meth:`add`
        included)."""
        return self._size

    @property
    def pairs(self) -> int:
        """How many entries :meth:`add` took (a replaced one counts again)."""
        return self._added

    def add(self, stage: str, model: str, entry: Any) -> None:
        """Write the text of ``stages[stage][model]`` to the spool.

        Raises:
            ValueError, TypeError: as :func:`lock_text` (for this entry).
        """
        data = lock_text(entry, 3, self._shared).encode("utf-8")
        self._pending.append(data)
        self._index.setdefault(stage, {})[model] = self._added
        self._size += len(data)
        self._starts.append(self._size)
        self._added += 1
        if self._size - self._written >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        """Write the pending texts to the spool, in one write."""
        if self._pending:
            self._file.seek(self._written)  # after chunks() read elsewhere
            self._file.write(b"".join(self._pending))
            self._pending.clear()
            self._written = self._size

    def finish(self, rest: Mapping[str, Any]) -> None:
        """Set the document's other keys (every top-level key but ``stages``)."""
        if "stages" in rest:
            raise ValueError("the rest of the document has a 'stages' key; add entries")
        self._flush()
        self._rest = rest

    def chunks(self) -> Iterator[bytes]:
        """The document's text as UTF-8, in pieces of about 256 KiB, with the final
        newline: the bytes of ``lock_text(document) + "\\n"``, ``document`` being the
        rest plus ``stages``, each stage's models and the stages sorted by name."""
        encode = json.encoder.encode_basestring
        out = bytearray()
        separator = "{\n  "
        for key in sorted([*self._rest, "stages"]):
            out += f"{separator}{encode(key)}: ".encode()
            separator = ",\n  "
            if key != "stages":
                out += lock_text(self._rest[key], 1, self._shared).encode("utf-8")
            else:
                yield from self._stages(out)
            if len(out) >= _CHUNK:
                yield bytes(out)
                out.clear()
        out += b"\n}\n"
        yield bytes(out)

    def _stages(self, out: bytearray) -> Iterator[bytes]:
        """Append the ``stages`` value to ``out``, yielding ``out`` whenever it is full."""
        encode = json.encoder.encode_basestring
        if not self._index:
            out += b"{}"
            return
        self._flush()
        # In memory (at most SPOOL_MEMORY bytes): one read, the entries sliced from it.
        whole = None
        if self._size <= SPOOL_MEMORY:
            self._file.seek(0)
            whole = memoryview(self._file.read(self._size))
        stage_separator = b"{\n    "
        for stage, models in sorted(self._index.items()):
            out += stage_separator + encode(stage).encode("utf-8") + b": "
            stage_separator = b",\n    "
            if not models:
                out += b"{}"
                continue
            model_separator = b"{\n      "
            for model, number in sorted(models.items()):
                out += model_separator + encode(model).encode("utf-8") + b": "
                model_separator = b",\n      "
                start, end = self._starts[number], self._starts[number + 1]
                if whole is not None:
                    out += whole[start:end]
                else:
                    self._file.seek(start)
                    out += self._file.read(end - start)
                if len(out) >= _CHUNK:
                    yield bytes(out)
                    out.clear()
            out += b"\n    }"
        out += b"\n  }"
