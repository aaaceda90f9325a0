"""README.md stays true: its examples are run, and what it shows is what they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfgraph.cli.main import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_the_explain_example_is_what_explain_prints(capsys) -> None:
    shown = next(b for b in blocks("text") if b.startswith("$ perfgraph explain "))
    command, expected = shown.split("\n", 1)
    assert main(command.removeprefix("$ perfgraph ").split()) == 0
    assert capsys.readouterr().out == expected


def test_the_python_api_example_runs_and_gives_the_values_it_shows() -> None:
    code = next(b for b in blocks("python") if "from perfgraph.scenario.loading import" in b)
    shown = re.search(r'sheet\.get\("itl"\)\s+# <Quantity\(([\d.]+), \'millisecond\'\)>', code)
    assert shown is not None
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)  # our own example, not user input
    sheet = namespace["sheet"]
    # the example pins decode_step_time after reading itl: read the loaded value again
    sc = namespace["load"](namespace["ScenarioSpec"](  # type: ignore[operator]
        model="llama-3.1-8b", precision="bf16", sets=(("tp", "1"),)))
    assert sc.sheet.magnitude("itl", "ms") == pytest.approx(float(shown[1]), rel=1e-8)
    assert sheet.magnitude("decode_step_time", "ms") == 5  # type: ignore[attr-defined]


def test_every_command_the_readme_names_exists() -> None:
    named = set(re.findall(r"^perfgraph ([a-z-]+)", "\n".join(blocks("sh")), re.M))
    assert named >= {"eval", "explain", "tui", "levers", "compare", "calibrate"}
    for command in named:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0


def test_json_units_parse_with_plain_pint_and_the_three_definitions_it_gives(capsys) -> None:
    import json

    import pint

    definitions = re.findall(r'ureg\.define\("([^"]+)"\)', README)
    assert definitions == ["FLOP = [flop]", "token = [token]", "request = [request]"]
    registry = pint.UnitRegistry()
    for d in definitions:
        registry.define(d)
    assert main(["eval", "--format", "json"]) == 0
    quantities = json.loads(capsys.readouterr().out)["quantities"]
    for name, q in quantities.items():
        parsed = registry.Quantity(1, q["unit"])  # raises on a unit plain Pint lacks
        assert parsed.magnitude == 1, name
