"""Write tests/fixtures/output_hashes.json: SHA-256s of bodies, reports, locks and audits.

The fixture is the reference that keeps optimisations honest: ``tests/test_output_hashes.py``
recomputes the hashes (``tests/output_hashes.py`` says what each covers) and compares.
Regenerate it only when an output is meant to change, and say why in the commit::

    python scripts/make_output_hashes.py

Needs ``../shared/data/openrouter`` (the snapshots the hashes are of).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    """Compute every set and write the fixture; exit status 2 without the shared data."""
    sys.path.insert(0, str(ROOT))
    from tests.output_hashes import FIXTURE, OPENROUTER, compute_all

    if not OPENROUTER.is_dir():
        print(f"make_output_hashes: {OPENROUTER} is absent", file=sys.stderr)
        return 2
    data = compute_all()
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    count = sum(len(models) for s in data.values() for models in s["pairs"].values())
    print(f"wrote {FIXTURE.relative_to(ROOT)}: {count} stage x model hashes in {len(data)} sets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
