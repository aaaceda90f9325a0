"""import-model ORG/NAME: config.json through huggingface_hub's cache, never the network.

Each test builds a Hugging Face cache in tmp_path the way huggingface_hub lays it out
(``models--ORG--NAME/refs/main`` holding a commit, ``snapshots/<commit>/config.json``), points
HF_HUB_CACHE at it and sets HF_HUB_OFFLINE=1, so nothing can download.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from perfgraph.cli.main import main
from perfgraph.errors import ImportModelError
from perfgraph.scenario import hf_hub
from tests.test_import_model import CONFIGS

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_with(root: Path, repo_id: str, config: Path, *, commit: str = COMMIT) -> Path:
    """A Hugging Face hub cache under ``root`` holding ``repo_id``'s config.json at main."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    shutil.copy(config, snapshot / "config.json")
    return root


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("huggingface_hub")
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_repository_id_is_read_from_the_cache(offline_cache: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cache_with(offline_cache, "meta-llama/Llama-3.1-8B", CONFIGS / "llama-3.1-8b.json")
    code, out, err = run(capsys, "import-model", "meta-llama/Llama-3.1-8B")
    assert code == 0, err
    doc = tomllib.loads(out)
    assert doc["hf_id"] == "meta-llama/Llama-3.1-8B"
    assert doc["name"] == "Llama 3.1 8B"               # the slug is NAME lowercased
    assert doc["values"]["n_params"] == 8_030_261_248  # tests/test_import_model.py: exact count
    assert f"config.json of meta-llama/Llama-3.1-8B (Hugging Face, revision {COMMIT})" in out


def test_fetch_config_returns_the_cached_snapshot(offline_cache: Path) -> None:
    cache_with(offline_cache, "Qwen/Qwen3-32B", CONFIGS / "qwen3-32b.json")
    path = hf_hub.fetch_config("Qwen/Qwen3-32B")
    assert path.read_bytes() == (CONFIGS / "qwen3-32b.json").read_bytes()
    assert path.parent.name == COMMIT


def test_offline_with_no_cache_entry_says_so(offline_cache: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "import-model", "deepseek-ai/DeepSeek-V3.2")
    assert code == 2 and out == ""
    assert err == ("perfgraph: error: deepseek-ai/DeepSeek-V3.2: offline (HF_HUB_OFFLINE) and "
                   "config.json is not in the Hugging Face cache; download it once online, or "
                   "pass the path of a config.json\n")


def test_the_offline_flag_keeps_the_network_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    code, _, err = run(capsys, "import-model", "org/absent", "--offline")
    assert code == 2 and "config.json is not in the Hugging Face cache" in err


@pytest.mark.parametrize("repo_id", ["deepseek-ai/DeepSeek V3", "org/-name", "org/na--me",
                                     "o" * 60 + "/" + "n" * 40])
def test_a_malformed_repository_id_is_refused_before_any_lookup(
        repo_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import-model", repo_id)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"perfgraph: error: {repo_id}: not a Hugging Face repository id: "
                          "expected ORG/NAME")


def test_a_missing_file_that_is_no_repository_id_names_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import-model", "llama")
    assert code == 2
    assert err == ("perfgraph: error: llama: no such file (a Hugging Face repository is named "
                   "ORG/NAME)\n")
    code, _, err = run(capsys, "import-model", str(tmp_path / "none.json"))
    assert code == 2 and "no such file" in err


def test_without_huggingface_hub_the_message_names_the_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import raises ImportError
    code, _, err = run(capsys, "import-model", "meta-llama/Llama-3.1-8B")
    assert code == 2
    assert err == ("perfgraph: error: meta-llama/Llama-3.1-8B: reading a Hugging Face "
                   "repository needs the huggingface_hub package: pip install "
                   "'perfgraph[hub]' (or download config.json and pass its path)\n")


def test_revision_belongs_to_a_repository(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import-model", str(CONFIGS / "llama-3.1-8b.json"),
                       "--revision", "main")
    assert code == 2 and "--revision needs a repository id" in err


@pytest.mark.parametrize("text,expected", [
    ("deepseek-ai/DeepSeek-V3.2", True), ("Qwen/Qwen3-Coder-480B-A35B-Instruct", True),
    ("configs/x.json", False), ("./org/name", False), ("/abs/name", False),
    ("a/b/c", False), ("name", False),
])
def test_what_counts_as_a_repository_id(text: str, expected: bool) -> None:
    assert hf_hub.is_repo_id_like(text) is expected


def test_a_malformed_id_raises_import_model_error() -> None:
    with pytest.raises(ImportModelError, match="not a Hugging Face repository id"):
        hf_hub.fetch_config("org/bad..name")


def test_a_model_folder_is_read_through_its_config_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "Qwen3-32B"
    folder.mkdir()
    shutil.copy(CONFIGS / "qwen3-32b.json", folder / "config.json")
    code, out, _ = run(capsys, "import-model", str(folder))
    assert code == 0 and tomllib.loads(out)["name"] == "Qwen3 32B"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "import-model", str(empty))
    assert code == 2 and err == f"perfgraph: error: {empty}: a folder with no config.json in it\n"
