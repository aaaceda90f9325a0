"""The command line gives NumPy's OpenBLAS one thread (its own arrays are element by element),
set before NumPy loads; a value the user set is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import os, sys; import perfgraph.cli.main; "
         "assert 'numpy' not in sys.modules, 'perfgraph.cli loaded NumPy first'; "
         "import numpy; print(os.environ['OPENBLAS_NUM_THREADS'])")


def probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                            text=True, check=True, env={**clean, **env})
    return result.stdout.strip()


def test_the_cli_sets_one_openblas_thread_before_numpy_loads() -> None:
    assert probe() == "1"


def test_a_thread_count_the_user_set_is_kept() -> None:
    assert probe(OPENBLAS_NUM_THREADS="4") == "4"


def test_the_package_still_gives_its_names() -> None:
    import perfgraph
    from perfgraph.scenario.loading import Scenario, ScenarioSpec

    assert perfgraph.Scenario is Scenario and perfgraph.ScenarioSpec is ScenarioSpec
    assert perfgraph.load().sheet.magnitude("itl") > 0
