"""Inputs hold only what they can mean: a bandwidth above 0, a whole TP, a fraction of peak.

The sheets declare a ``domain`` for each input (perfgraph/scenario/sheets/*.toml); a value outside
it is refused wherever it comes from, with the cell, the value and what was expected.
"""

from __future__ import annotations

import pytest

from perfgraph.cli.main import main
from perfgraph.engine.declarations import DOMAINS
from perfgraph.errors import DeclarationError, PerfgraphError
from perfgraph.scenario.loading import ScenarioSpec, load


@pytest.mark.parametrize(("assignment", "expected"), [
    ("hbm_bandwidth=-1 TB/s", "hbm_bandwidth: -1 TB/s is out of range: expected a number "
                              "above 0"),
    ("tp=2.5", "tp: 2.5 is out of range: expected a whole number of at least 1"),
    ("tp=0", "tp: 0 is out of range: expected a whole number of at least 1"),
    ("chunked_prefill=2", "chunked_prefill: 2 is out of range: expected on or off"),
    ("bandwidth_efficiency=2.5", "bandwidth_efficiency: 2.5 is out of range: expected a "
                                 "fraction above 0 and at most 1"),
    ("spec_alpha=1.5", "spec_alpha: 1.5 is out of range: expected a probability from 0 to 1"),
    ("spec_k=-1", "spec_k: -1 is out of range: expected a whole number of at least 0"),
    ("osl_spread=0.5", "osl_spread: 0.5 is out of range: expected a number of at least 1"),
])
def test_a_value_outside_its_domain_is_one_clear_error(capsys, assignment, expected) -> None:
    assert main(["eval", "--set", assignment]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err


def test_the_edges_of_each_domain_are_allowed() -> None:
    sheet = load().sheet
    for name, value in (("concurrency", 0), ("spec_k", 0), ("spec_alpha", 1),
                        ("prefix_hit_rate", 0), ("compute_efficiency", 1),
                        ("step_host_time", 0), ("osl_spread", 1), ("tp", 1)):
        sheet.set(name, value)
        assert sheet.magnitude(name) == value


def test_a_refused_edit_leaves_the_sheet_as_it_was() -> None:
    sheet = load().sheet
    before = sheet.magnitude("itl")
    with pytest.raises(DeclarationError):
        sheet.set("hbm_bandwidth", -3.35)
    assert sheet.magnitude("itl") == before and sheet.magnitude("hbm_bandwidth") == 3.35


def test_a_catalog_or_scenario_value_out_of_range_names_its_file_and_line(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('# a deployment\n[values]\ntp = 4\ngpu_memory_utilization = 1.2\n')
    with pytest.raises(PerfgraphError) as exc:
        load(ScenarioSpec(file=str(bad)))
    assert str(exc.value).startswith(f"{bad}:4: gpu_memory_utilization: 1.2 is out of range")


def test_every_input_of_the_default_sheet_has_a_domain_or_is_a_flag() -> None:
    sheet = load().sheet
    for name in sheet.names:
        decl = sheet.declaration(name)
        if decl.is_input:
            assert decl.flag or decl.domain in DOMAINS, name
