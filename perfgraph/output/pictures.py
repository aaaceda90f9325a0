"""``python3 -m perfgraph.output.pictures [FOLDER]``: the README's two charts.

The seed's "Across configurations" throughput and latencies against concurrent users, with
the InferenceMAX Llama 3.3 70B FP8 runs (1k/1k) the repo ships over the model, and the
default scenario's roofline; written (atomically) to ``perfgraph/output/assets/`` or FOLDER,
as ``perfgraph plot`` writes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from perfgraph.cli import main as perfgraph

DEFAULT = Path(__file__).resolve().parent / "assets"
MEASURED = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / \
    "inferencemax_llama70b_fp8" / "1k1k"
PICTURES = {"concurrency.svg": ["plot", "concurrency", "--measured", str(MEASURED)],
            "roofline.svg": ["plot", "roofline"]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else DEFAULT
    for name, command in PICTURES.items():
        if perfgraph([*command, "--out", str(folder / name)]) != 0:
            return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
