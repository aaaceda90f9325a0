"""``python3 -m perfgraph.cli.pictures [FOLDER]``: the README's pictures, made by the CLI.

Runs the :data:`COMMANDS` below (``perfgraph …`` in a shell, relative to the checkout) with
their files in ``perfgraph/output/assets/`` or FOLDER: the plan search behind the Pareto chart (its
Parquet file left in a temporary folder), the Pareto chart, and the InferenceMAX runs over
the model against concurrent users. The README lists the same commands.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "perfgraph" / "output" / "assets"
#: The commands, as the README gives them ({plans} and {out} are filled in).
COMMANDS = (
    'perfgraph plan --slo ttft=1s --slo itl=50ms --rate "20 request/s" --search hardware=h200 '
    "--out {plans}",
    "perfgraph plot pareto {plans} --out {out}/pareto.png",
    "perfgraph plot concurrency --measured tests/data/measured/inferencemax_llama70b_fp8/1k1k "
    "--out {out}/concurrency.png",
)


def argv_of(command: str, plans: Path, out: Path) -> list[str]:
    """One of :data:`COMMANDS` as the CLI's argv: its files filled in, checkout paths made
    absolute, the leading ``perfgraph`` dropped."""
    import shlex

    words = shlex.split(command.format(plans=plans, out=out))[1:]
    return [str(ROOT / w) if w.startswith("tests/") else w for w in words]


def main(argv: list[str] | None = None) -> int:
    from perfgraph.cli.main import main as cli

    parser = argparse.ArgumentParser(prog="python3 -m perfgraph.cli.pictures",
                                     description="Draw the README's pictures with the CLI.")
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT,
                        help=f"where to write them (default: {DEFAULT})")
    folder = parser.parse_args(argv).folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for command in COMMANDS:
            with contextlib.redirect_stdout(io.StringIO()):  # the plan's tables: not wanted
                status = cli(argv_of(command, Path(tmp) / "plans.parquet", folder))
            if status != 0:
                print(f"error: {command!r} exited {status}", file=sys.stderr)
                return 2
    print("\n".join(str(p) for p in sorted(folder.glob("*.png"))))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
