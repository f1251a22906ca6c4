"""The SHA-256 of bytes just read, hashed beside the work that follows the read."""

from __future__ import annotations

import hashlib
import threading

__all__ = ["BackgroundDigest"]


class BackgroundDigest:
    """The SHA-256 of one ``bytes`` object, hashed in a daemon thread from the moment the
    object is made.

    :mod:`hashlib` releases the interpreter lock while it hashes more than a couple of
    kilobytes, so with a second core the hash (about 0.7 ms a megabyte on the machine
    the project is measured on: ``bench/run.py``) runs while the caller goes on parsing
    and compiling; :meth:`hexdigest` waits for it. Where the thread cannot help (it could
    not be started, or this process was forked while it ran) the hash is made on the
    spot; the value is the same either way.

    Args:
        data: the bytes (kept until they are hashed; no copy is made).
    """

    __slots__ = ("_data", "_hex", "_thread")

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data
        self._hex: str | None = None
        thread: threading.Thread | None = threading.Thread(
            target=self._work, name="capc-sha256", daemon=True)
        try:
            assert thread is not None
            thread.start()
        except RuntimeError:  # no thread can start here (e.g. at interpreter shutdown)
            thread = None
        self._thread = thread

    def _work(self) -> None:
        data = self._data
        if data is not None:
            self._hex = hashlib.sha256(data).hexdigest()  # before the bytes are let go
            self._data = None

    def hexdigest(self) -> str:
        """Return the SHA-256 of the bytes, 64 lowercase hex digits (waits for the
        thread when it is still hashing)."""
        if self._hex is None and self._thread is not None:
            self._thread.join()  # returns at once in a forked child: the thread is gone
        if self._hex is None:
            self._work()
        assert self._hex is not None
        return self._hex
