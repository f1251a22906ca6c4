"""Shared test helpers: where ../shared lives, and the example configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
OPENROUTER = SHARED / "data" / "openrouter"


@pytest.fixture
def shared_dir() -> Path:
    """Return ../shared/data/openrouter, skipping the test when it is absent."""
    if not OPENROUTER.is_dir():
        pytest.skip("../shared/data/openrouter is absent")
    return OPENROUTER
