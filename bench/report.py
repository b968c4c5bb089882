"""One way for every benchmark to report: a table on stdout and JSON in bench/results/<name>.json."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def emit(name: str, rows: Sequence[Mapping[str, Any]], *, notes: str = "") -> Path:
    """Print `rows` as an aligned table and save them with the machine they were measured on."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    cells = [[_fmt(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)]
    print(f"\n== {name} ==")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for r in cells:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    if notes:
        print(notes)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    out.write_text(
        json.dumps(
            {
                "name": name,
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": {
                    "python": platform.python_version(),
                    "cpu": platform.processor(),
                    "node": platform.node(),
                },
                "notes": notes,
                "rows": list(rows),
            },
            indent=2,
        )
    )
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)
