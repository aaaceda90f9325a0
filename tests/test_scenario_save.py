"""perfgraph.scenario.save: edits written back to TOML, comments kept, never half a file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfgraph.errors import InputError
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load
from perfgraph.scenario.save import (
    FileChangedError,
    TargetExistsError,
    changed_on_disk,
    edits,
    save,
    save_as,
    stamp,
)

ROOT = Path(__file__).resolve().parent.parent
LONG_PROMPT = ROOT / "workloads" / "long-prompt-8k1k.toml"


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    """A scenario file with comments: the long-prompt workload, copied."""
    path = tmp_path / "long.toml"
    shutil.copy(LONG_PROMPT, path)
    return path


def values(sc: Scenario) -> dict[str, float | None]:
    sheet = sc.sheet
    return {n: None if sheet.error(n) else sheet.magnitude(n) for n in sheet.names}


def reload(path: Path) -> Scenario:
    return load(ScenarioSpec(file=str(path)))


def test_save_keeps_comments_and_reloads_to_the_same_values(scenario_file: Path) -> None:
    sc = load(ScenarioSpec(file=str(scenario_file)))
    loaded = stamp(scenario_file)
    sc.sheet.set("concurrency", 128)
    sc.sheet.set("hbm_bandwidth", "4.8 TB/s")
    save(sc, loaded)
    text = scenario_file.read_text()
    # the edited key keeps its place and its comment; the new one lands in [values]
    assert "concurrency = 128" in text and "# requests in flight" in text
    assert "# Why TP=4: for Llama 3.1 70B FP8 on H100 80 GB" in text
    assert "hbm_bandwidth = 4.8  # TB/s" in text
    again = reload(scenario_file)
    assert values(again) == values(sc)
    assert again.sheet.magnitude("concurrency") == 128
    assert again.sheet.magnitude("hbm_bandwidth", "B/s") == pytest.approx(4.8e12)
    assert [p.name for p in scenario_file.parent.iterdir()] == [scenario_file.name]


def test_a_pin_is_saved_as_its_formula(scenario_file: Path) -> None:
    sc = load(ScenarioSpec(file=str(scenario_file)))
    sc.sheet.set("concurrency", "floor(max_concurrency_paged)")
    save(sc, stamp(scenario_file))
    assert 'concurrency = "floor(max_concurrency_paged)"' in scenario_file.read_text()
    again = reload(scenario_file)
    assert again.sheet.declaration("concurrency").formula.text == "floor(max_concurrency_paged)"
    # (0.9 × 81559 MiB (85.52 GB) × 4 − 70.55 GB of weights − 4 × 1.98 GB of vLLM's
    # start-up reserve at TP4) ÷ (8704 tokens × 163840 B) = 160.9 sequences
    assert again.sheet.magnitude("concurrency") == 160
    assert values(again) == values(sc)


def test_command_line_sets_and_choices_are_saved(scenario_file: Path) -> None:
    sc = load(ScenarioSpec(file=str(scenario_file), hardware="h200", precision="bf16",
                           sets=(("spec_k", "2"),)))
    assert edits(sc.sheet) == {"spec_k": 2}
    save(sc, stamp(scenario_file))
    text = scenario_file.read_text()
    assert 'hardware = "h200"' in text and 'precision = "bf16"' in text
    assert "spec_k = 2                 # speculative tokens per pass" in text
    assert "model =" not in text  # unchanged choices stay as the file had them
    assert values(reload(scenario_file)) == values(sc)


def test_a_file_changed_on_disk_is_not_overwritten_unless_forced(scenario_file: Path) -> None:
    sc = load(ScenarioSpec(file=str(scenario_file)))
    loaded = stamp(scenario_file)
    scenario_file.write_text(scenario_file.read_text() + "# someone else's line\n")
    assert changed_on_disk(loaded)
    sc.sheet.set("concurrency", 32)
    with pytest.raises(FileChangedError, match="changed on disk since it was loaded"):
        save(sc, loaded)
    assert "# someone else's line" in scenario_file.read_text()
    save(sc, loaded, force=True)
    text = scenario_file.read_text()
    assert "# someone else's line" not in text and "concurrency = 32" in text


def test_touching_a_file_without_changing_it_is_not_a_change(scenario_file: Path) -> None:
    loaded = stamp(scenario_file)
    os.utime(scenario_file, ns=(loaded.mtime_ns + 10**9, loaded.mtime_ns + 10**9))
    assert not changed_on_disk(loaded)
    scenario_file.unlink()
    assert changed_on_disk(loaded)


def test_save_as_a_new_file_names_every_choice(tmp_path: Path) -> None:
    sc = load()
    sc.sheet.set("tp", 4)
    sc.sheet.set("itl", "decode_step_time * 2")
    target = tmp_path / "mine.toml"
    save_as(sc, target)
    text = target.read_text()
    for line in ('model = "llama-3.1-70b"', 'hardware = "h100-sxm"',
                 'workload = "chat-1k1k"', 'precision = "fp8"', "[values]", "tp = 4",
                 'itl = "decode_step_time * 2"'):
        assert line in text
    again = reload(target)
    assert values(again) == values(sc)
    assert again.sheet.declaration("itl").formula.text == "decode_step_time * 2"


def test_save_as_keeps_the_source_file_and_repoints_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(ROOT / "models" / "llama-3.1-8b.toml", tmp_path / "a" / "small.toml")
    source = tmp_path / "a" / "s.toml"
    source.write_text('# my scenario\nmodel = "small.toml"\n\n[values]\ntp = 1  # one GPU\n')
    sc = reload(source)
    sc.sheet.set("concurrency", 16)
    save_as(sc, tmp_path / "b" / "copy.toml", stamp(source))
    text = (tmp_path / "b" / "copy.toml").read_text()
    assert "# my scenario" in text and "tp = 1  # one GPU" in text
    assert 'model = "../a/small.toml"' in text
    assert values(reload(tmp_path / "b" / "copy.toml")) == values(sc)
    assert "concurrency" not in source.read_text()


def test_save_as_refuses_an_existing_file_or_a_name_without_toml(tmp_path: Path,
                                                                scenario_file: Path) -> None:
    sc = load()
    before = scenario_file.read_text()
    with pytest.raises(TargetExistsError, match="the file exists"):
        save_as(sc, scenario_file)
    assert scenario_file.read_text() == before
    with pytest.raises(InputError, match=r"must end in \.toml"):
        save_as(sc, tmp_path / "mine.txt")
    save_as(sc, scenario_file, overwrite=True)
    assert 'workload = "chat-1k1k"' in scenario_file.read_text()


def test_saving_into_a_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such folder"):
        save_as(load(), tmp_path / "nowhere" / "s.toml")
