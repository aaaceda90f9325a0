"""Every ``sh`` example in README.md runs as written, so that the README stays true.

Each block runs in order, in a temporary folder holding copies of the catalogs and the test
data (so that what an example writes lands there), each ``perfgraph`` command in-process.
The few shell forms the README uses are followed: comments, ``\\`` continuations,
``NAME=value`` and ``"$NAME"``, ``mkdir -p``, and ``cat > FILE <<'EOF'`` … ``EOF``. What
cannot run here is left out by :data:`NOT_RUN`, each with its reason.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from perfgraph.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: Commands left out, by how they start, and why.
NOT_RUN = {
    "python3 -m venv": "makes an environment",
    "python3 -m pip": "installs the package",
    "python3 -m pytest": "the suite itself",
    "ruff": "a linter, run by CI", "mypy": "a type checker, run by CI",
    "git config": "changes the user's git configuration",
    "perfgraph tui": "interactive (a terminal dashboard)",
    "perfgraph web": "interactive (a server until stopped)",
}
#: An argument naming a git revision (``main:path``, ``HEAD~1:path``): needs a repository.
GIT_REVISION = re.compile(r"^[\w~^.-]+:[\w./-]+$")


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, re.S)


def commands(block: str) -> list[tuple[str, str | None]]:
    """The block's commands, each (command line, the here-document it feeds, if any)."""
    out: list[tuple[str, str | None]] = []
    lines = iter(block.splitlines())
    pending = ""
    for raw in lines:
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        command = _uncommented(line).strip()
        if not command:
            continue
        heredoc = re.search(r"<<\s*'?(\w+)'?", command)
        if heredoc:
            body = []
            for more in lines:
                if more.strip() == heredoc[1]:
                    break
                body.append(more)
            out.append((command[:heredoc.start()].strip(), "\n".join(body) + "\n"))
        else:
            out.append((command, None))
    return out


def _uncommented(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` inside quotes stays)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def skipped(command: str) -> str | None:
    for start, why in NOT_RUN.items():
        if command.startswith(start):
            return why
    if any(GIT_REVISION.match(word) for word in shlex.split(command)[2:]):
        return "names a git revision"
    return None


def run_block(block: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """Run what can run of ``block`` in ``folder``; the number of perfgraph commands run."""
    variables: dict[str, str] = {}
    ran = 0
    for command, heredoc in commands(block):
        if skipped(command):
            continue
        for name, value in variables.items():
            command = command.replace(f'"${name}"', value).replace(f"${name}", value)
        words = shlex.split(command)
        if heredoc is not None:
            assert words[:2] == ["cat", ">"], command
            (folder / words[2]).write_text(heredoc, encoding="utf-8")
        elif re.fullmatch(r"[A-Z_]+=\S+", command):
            name, value = command.split("=", 1)
            variables[name] = value
        elif words[:2] == ["mkdir", "-p"]:
            for name in words[2:]:
                (folder / name).mkdir(parents=True, exist_ok=True)
        else:
            assert words[0] == "perfgraph", f"README runs something this test cannot: {command}"
            code = main(words[1:])
            err = capsys.readouterr().err
            # diff's 1 is its answer (something moved), not a failure
            assert code in ((0, 1) if words[1] == "diff" else (0,)), f"{command}\n{err}"
            ran += 1
    return ran


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder like a fresh clone's top: the catalogs copied, the test data linked."""
    for name in ("models", "hardware", "workloads"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


#: Blocks whose commands take more than a few seconds (the charts: ~20 s of Matplotlib; a
#: fit: ~5 s): run with ``PERFGRAPH_README_ALL=1``.
SLOW = ("perfgraph plot", "perfgraph calibrate")


@pytest.mark.parametrize("index", range(len(blocks())))
def test_the_readme_example_runs_as_written(index: int, checkout: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import os

    block = blocks()[index]
    if any(s in block for s in SLOW) and not os.environ.get("PERFGRAPH_README_ALL"):
        pytest.skip("slow: PERFGRAPH_README_ALL=1 runs it")
    run_block(block, checkout, capsys)


def test_the_parser_follows_the_shell_forms_the_readme_uses() -> None:
    block = ("perfgraph eval   # a comment\n"
             "perfgraph eval --set \"x=1 # not a comment\" \\\n    --only itl\n"
             "cat > s.toml <<'EOF'   # a scenario\nmodel = \"m\"\nEOF\n"
             "RUN=a/b.json\n")
    assert commands(block) == [
        ("perfgraph eval", None),
        ('perfgraph eval --set "x=1 # not a comment"      --only itl', None),
        ("cat > s.toml", 'model = "m"\n'),
        ("RUN=a/b.json", None)]
    assert skipped("perfgraph diff main:deploy/prod.toml deploy/prod.toml")
    assert skipped("perfgraph tui --measured x") and not skipped("perfgraph eval")


def test_the_difftool_figures_are_what_diff_prints(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    shown = next(b for b in re.findall(r"```text\n(.*?)```", README, re.S)
                 if b.startswith("$ git difftool"))
    base, head = tmp_path / "a" / "h200.toml", tmp_path / "b" / "h200.toml"
    for side in (base, head):
        side.parent.mkdir()
    text = (ROOT / "hardware" / "h200.toml").read_text(encoding="utf-8")
    base.write_text(text, encoding="utf-8")
    head.write_text(re.sub(r'(?m)^hbm_bandwidth = "4.8 TB/s"', 'hbm_bandwidth = "5.2 TB/s"',
                           text), encoding="utf-8")
    assert main(["diff", "-t", "1", str(base), str(head)]) == 1  # something moved
    printed = capsys.readouterr().out.splitlines()
    expected = [line for line in shown.splitlines()[2:] if line != "…"]
    assert printed[1:1 + len(expected)] == expected
