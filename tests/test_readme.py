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


def _worked_example() -> tuple[list[str], str, str]:
    """The worked example's commands, the tail of the plan it shows, and its comparison."""
    section = README.split("## From a question to a deployment and back", 1)[1]
    section = section.split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", section, re.S)[0].strip().splitlines()
    tail, compared = re.findall(r"```text\n(.*?)```", section, re.S)[:2]
    return commands, tail, compared


def test_the_worked_example_runs_as_written_and_prints_what_it_shows(
        tmp_path, monkeypatch, capsys) -> None:
    """From a fresh clone: question → plan → manifests → benchmark command → comparison →
    calibration → the next plan; each exit code as the README says, each output as shown."""
    import shlex

    pytest.importorskip("yaml")
    pytest.importorskip("jsonschema")
    (tmp_path / "tests").symlink_to(Path(__file__).resolve().parent)
    monkeypatch.chdir(tmp_path)
    commands, tail, compared = _worked_example()
    outputs = []
    for line in commands:
        words = shlex.split(line)
        target = None
        if ">" in words:
            words, target = words[:words.index(">")], words[words.index(">") + 1]
        assert words[0] == "perfgraph"
        code = main(words[1:])
        out = capsys.readouterr()
        if target:
            Path(target).write_text(out.out, encoding="utf-8")
        outputs.append((code, out))
    assert [code for code, _ in outputs] == [0, 0, 1, 0, 0]  # compare: the ITL SLO missed
    shown = tail.strip().splitlines()
    assert outputs[1][1].out.strip().splitlines()[-4:] == shown[:4]
    assert outputs[1][1].err.strip().splitlines() == shown[4:]
    assert all((tmp_path / w.removeprefix("perfgraph: wrote ")).is_file() for w in shown[4:])
    command, expected = compared.split("\n", 1)
    assert command == f"$ {commands[2]}" and outputs[2][1].out == expected
    assert (tmp_path / "h100-sxm.vllm.toml").is_file()
