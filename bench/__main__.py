"""Run benchmarks: `python -m bench` runs every bench/bench_*.py; `python -m bench NAME...` runs some.

Each module exposes ``main() -> None`` and reports through ``bench.report.emit``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    names = argv or sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))
    for name in names:
        print(f"==> bench {name}", flush=True)
        importlib.import_module(f"bench.bench_{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
