"""Media parts of the messages: their modality, and their size in tokens by vendor rules.

An image, file or audio part is not text: its base64 characters say nothing about the
tokens it costs. :func:`media_tokens` estimates it by the vendor's published rule, chosen
by the model id's vendor (``anthropic/`` -> Anthropic, ``google/`` -> Gemini, any other
-> OpenAI's):

* **images**, from the pixel size read from a PNG, GIF, JPEG or WebP data URL header
  (an image by URL, or an unreadable one, is counted at the rule's largest image):
  Anthropic ``ceil(width * height / 750)`` after scaling the long edge to at most
  1568 px (https://docs.claude.com/en/docs/build-with-claude/vision); OpenAI (detail
  high) ``85 + 170 * tiles`` of 512 px after fitting in 2048 x 2048 and scaling the
  short side to at most 768 px, ``85`` at detail ``low``
  (https://platform.openai.com/docs/guides/images-vision); Gemini 258 when both sides
  are at most 384 px, else 258 per 768 x 768 tile
  (https://ai.google.dev/gemini-api/docs/tokens);
* **files** (PDF): per page (``/Type /Page`` objects counted in the decoded data, 1
  when unreadable): Anthropic 3,000 tokens, the top of its 1,500-3,000 text range
  (https://docs.claude.com/en/docs/build-with-claude/pdf-support), Gemini 258
  (https://ai.google.dev/gemini-api/docs/document-processing), OpenAI 3,000 (our
  assumption, as Anthropic's);
* **audio**: 32 tokens per second, Gemini's rule
  (https://ai.google.dev/gemini-api/docs/audio), used for every vendor; the duration is
  read from a WAV header, else assumed from 16,000 bytes per second (128 kbit/s).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

__all__ = ["PART_MODALITY", "image_size", "media_tokens", "vendor_rule"]

#: Content part type -> the ``input_modalities`` entry it needs.
PART_MODALITY: Mapping[str, str] = {"image_url": "image", "file": "file", "input_audio": "audio"}

_DATA_URL = re.compile(r"data:[^;,]*(;[^,]*)?,", re.ASCII)
_HEAD_BYTES = 65_536  # enough of an image to find its size (JPEG SOF is near the start)


def vendor_rule(tree: Mapping[str, Any]) -> str:
    """``anthropic``, ``gemini`` or ``openai``: whose token rules apply, as a model's
    resolved capabilities declare it (``media.token_rule`` in models.yaml; default
    ``openai``)."""
    rule = (tree.get("media") or {}).get("token_rule")
    return str(rule) if rule else "openai"


def _decoded(data: str, limit: int | None = None) -> bytes | None:
    match = _DATA_URL.match(data)
    payload = data[match.end():] if match else data
    if limit is not None:
        payload = payload[: (limit // 3 + 1) * 4]
    try:
        return base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError):
        return None


def image_size(head: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from the start of a PNG, GIF, JPEG or WebP file."""
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
        return width, height
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return width, height
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP" and len(head) >= 30:
        chunk = head[12:16]
        if chunk == b"VP8X":
            return (1 + int.from_bytes(head[24:27], "little"),
                    1 + int.from_bytes(head[27:30], "little"))
        if chunk == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", head[26:30])
            return width & 0x3FFF, height & 0x3FFF
    if head.startswith(b"\xff\xd8"):
        i = 2
        while i + 9 < len(head):
            if head[i] != 0xFF:
                i += 1
                continue
            marker = head[i + 1]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                          0xCE, 0xCF):
                height, width = struct.unpack(">HH", head[i + 5:i + 9])
                return width, height
            length = struct.unpack(">H", head[i + 2:i + 4])[0]
            i += 2 + length
    return None


def _image_tokens(size: tuple[int, int] | None, rule: str, detail: Any) -> int:
    if rule == "anthropic":
        width, height = size or (1568, 1568)
        scale = min(1.0, 1568 / max(width, height, 1))
        return math.ceil(int(width * scale) * int(height * scale) / 750)
    if rule == "gemini":
        if size is None:
            return 258 * 4
        width, height = size
        if width <= 384 and height <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    if detail == "low":
        return 85
    wide, high = (float(v) for v in (size or (2048, 2048)))
    scale = min(1.0, 2048 / max(wide, high, 1.0))
    wide, high = wide * scale, high * scale
    scale = min(1.0, 768 / max(min(wide, high), 1.0))
    wide, high = wide * scale, high * scale
    return 85 + 170 * math.ceil(wide / 512) * math.ceil(high / 512)


def _wav_seconds(data: bytes) -> float | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE" or len(data) < 44:
        return None
    byte_rate = struct.unpack("<I", data[28:32])[0]
    return None if byte_rate == 0 else max(0, len(data) - 44) / byte_rate


def media_tokens(part: Mapping[str, Any], rule: str) -> int | None:
    """The estimated tokens of a media part (``None``: not a media part).

    Args:
        part: a content part (``image_url``, ``file`` or ``input_audio``).
        rule: :func:`vendor_rule` of the model.
    """
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = image.get("url", "") if isinstance(image, Mapping) else ""
        head = _decoded(url, _HEAD_BYTES) if url.startswith("data:") else None
        size = image_size(head) if head else None
        return _image_tokens(size, rule, image.get("detail") if isinstance(image, Mapping)
                             else None)
    if kind == "file":
        file = part.get("file") or {}
        data = file.get("file_data") if isinstance(file, Mapping) else None
        decoded = _decoded(data) if isinstance(data, str) else None
        pages = max(1, len(re.findall(rb"/Type\s*/Page(?![a-z])", decoded or b"")))
        return pages * (258 if rule == "gemini" else 3000)
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        data = audio.get("data") if isinstance(audio, Mapping) else None
        decoded = _decoded(data) if isinstance(data, str) else None
        if decoded is None:
            return 32
        seconds = _wav_seconds(decoded)
        if seconds is None:
            seconds = len(decoded) / 16_000
        return max(1, math.ceil(seconds * 32))
    return None
