"""``perfgraph plot``, read as a reviewer reads it: every chart kind written as SVG (text kept
as text) and its tick labels read back from the file; no model line above its own ceiling;
the Pareto chart's families, chosen plan and size."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from perfgraph.cli.main import main  # noqa: E402
from perfgraph.output import chart_axes, chart_data, charts  # noqa: E402
from perfgraph.scenario.loading import load  # noqa: E402

ROOT = Path(__file__).parents[1]
DATA = ROOT / "tests" / "data" / "measured" / "inferencemax_llama70b_fp8"
WORKLOADS = ROOT / "workloads"
SVG = "{http://www.w3.org/2000/svg}"
NUMBER = re.compile(r"[−-]?\d+(\.\d+)?(e[+−-]?\d+)?")
#: A small plan search: a few seconds at most, three families (bf16, fp8 = int8, each both
#: aggregated and disaggregated).
PLAN = ["plan", "--slo", "ttft=1s", "--slo", "itl=50ms", "--rate", "20 request/s",
        "--search", "hardware=h200", "--search", "tp=2,4", "--search", "pp=1",
        "--search", "concurrency=1,2,4,8,16,32,64,128,256"]


def tick_labels(path: Path) -> list[dict[str, list[str]]]:
    """Per panel of the SVG, the text of its x and y tick labels."""
    panels = []
    for group in ET.parse(path).getroot().iter(f"{SVG}g"):
        if re.fullmatch(r"axes_\d+", group.get("id") or ""):
            found: dict[str, list[str]] = {"x": [], "y": []}
            for tick in group.iter(f"{SVG}g"):
                m = re.fullmatch(r"([xy])tick_\d+", tick.get("id") or "")
                if m:
                    found[m.group(1)] += ["".join(t.itertext()).strip()
                                          for t in tick.iter(f"{SVG}text")]
            panels.append(found)
    return panels


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("plot")
    plans, requests = folder / "plans.parquet", folder / "requests.parquet"
    assert main([*PLAN, "--out", str(plans)]) == 0
    assert main(["simulate", "--users", "8", "--requests", "40", "--out", str(requests)]) == 0
    return {"plans": plans, "requests": requests}


def argv(kind: str, files: dict[str, Path]) -> list[str]:
    return {"roofline": ["--measured", str(DATA)],
            "concurrency": ["--measured", str(DATA / "1k1k")],
            "tp": [],
            "tp-relative": ["--measured", str(DATA / "1k1k"), "--relative"],
            "measured": ["--measured", str(DATA)],
            "diff": [str(WORKLOADS / "chat-1k1k.toml"), str(WORKLOADS / "long-prompt-8k1k.toml")],
            "pareto": [str(files["plans"])],
            "simulation": [str(files["requests"])]}[kind]


@pytest.mark.parametrize("kind", ["roofline", "concurrency", "tp", "tp-relative", "measured",
                                  "diff", "pareto", "simulation"])
def test_every_axis_has_three_numbered_ticks(kind: str, files, tmp_path: Path,
                                             capsys) -> None:
    out = tmp_path / f"{kind}.svg"
    assert main(["plot", kind.split("-")[0], *argv(kind, files), "--out", str(out)]) == 0
    panels = tick_labels(out)
    assert panels
    for panel in panels:
        for axis in "xy":
            numbers = [t for t in panel[axis] if NUMBER.fullmatch(t)]
            assert len(numbers) >= 3, (kind, axis, panel[axis])
            assert not [t for t in panel[axis] if "e+" in t or "$" in t]  # plain numbers


@pytest.mark.parametrize(("lo", "hi", "want"), [
    (1, 10_000, ["1", "10", "100", "1000", "10000"]),  # decades when there are enough
    (12, 60, ["20", "30", "50"]),  # under two decades: 1-2-3-5-7
    (11, 37, ["15", "20", "25", "30", "35"]),  # under a factor of four: round steps
    (3.3, 3.4, ["3.3", "3.35", "3.4"]),
])
def test_log_ticks_by_hand(lo: float, hi: float, want: list[str]) -> None:
    assert [chart_axes.label(v) for v in chart_axes.log_ticks(lo, hi)] == want


def test_concurrency_axis_ticks_stay_powers_of_two() -> None:
    assert chart_axes.log_ticks(1, 1024, 2).tolist() == [2.0 ** k for k in range(11)]


def throughput_lines(fig) -> list:
    ax = next(a for a in fig.axes if a.get_title() == "Throughput per GPU")
    return [ln for ln in ax.get_lines() if "ceiling" not in str(ln.get_label())
            and len(ln.get_xdata()) > 2]


def test_throughput_never_above_its_ceiling_and_the_kv_limit_is_marked() -> None:
    sheet = load().sheet
    panels = chart_data.scenario_panels(sheet, "concurrency")
    model = next(s for s in panels["throughput"] if s.label == "model")
    ceiling = next(s for s in panels["throughput"] if s.kind == "ceiling")
    assert np.all(model.y <= ceiling.y * (1 + 1e-9))
    limit = next(s for s in panels["ttft"] if s.kind == "limit")
    # (0.9 × 171.04 GB − 70.55 GB − 2 × 2.34 GB of vLLM's start-up reserve) ÷ 251.66 MB
    kv = np.floor(sheet.magnitude("max_concurrency_paged"))  # 312 users on 2 × H100
    assert limit.x[0] == kv == 312 and limit.label == "model: KV cache full above 312 users"
    assert model.x.max() > kv  # the chart reaches past it …
    fork = sheet.fork()
    fork.set("concurrency", "312")
    beyond = model.x > kv  # … and there shows the batch that fits, flat
    assert np.allclose(model.y[beyond], fork.magnitude("throughput_per_gpu"), rtol=1e-9)
    # what the sheet would say of 662 users all in memory is well above that
    fork.set("concurrency", str(model.x.max()))
    assert fork.magnitude("throughput_per_gpu") > model.y[-1] * 1.1


@pytest.mark.parametrize("x", ["tp", "concurrency"])
def test_tp_and_diff_lines_stay_under_their_ceilings(x: str) -> None:
    from perfgraph.output.diff_chart import diff_figure
    from perfgraph.scenario.loading import ScenarioSpec

    base = ("chat", load(ScenarioSpec(workload=str(WORKLOADS / "chat-1k1k.toml"))))
    head = ("long", load(ScenarioSpec(workload=str(WORKLOADS / "long-prompt-8k1k.toml"))))
    fig = diff_figure(base, head, x)
    ax = next(a for a in fig.axes if a.get_title() == "Throughput per GPU")
    for side in ("BASE chat", "HEAD long"):
        line = next(ln for ln in ax.get_lines() if ln.get_label() == side)
        roof = next(ln for ln in ax.get_lines()
                    if ln.get_label() == f"{side}: ceiling (KV-capped batch)")
        y, cap = (np.asarray(ln.get_ydata(), dtype=float) for ln in (line, roof))
        assert np.all(np.nan_to_num(y) <= cap * (1 + 1e-9)), side


def test_tp_1_is_capped_by_its_kv_cache() -> None:
    sheet = load().sheet  # 64 users of Llama 70B FP8: one H100 holds the KV of fewer
    values = chart_data.curves(sheet, "tp", np.array([1.0, 2.0]))
    assert values["kv_limit"][0] < 64 <= values["kv_limit"][1]
    fork = sheet.fork()
    fork.set("tp", "1")
    fork.set("concurrency", str(values["kv_limit"][0]))
    assert values["throughput"][0] == pytest.approx(fork.magnitude("throughput_per_gpu"))
    assert values["throughput"][0] <= values["ceiling"][0] * (1 + 1e-9)
    mark = next(s for s in chart_data.scenario_panels(sheet, "tp")["itl"] if s.kind == "limit")
    assert mark.x[0] == 2 and mark.label == "model: KV cache holds 64 users from TP 2"


def test_pareto_has_a_colour_per_family_the_plan_marked_and_a_small_file(
        files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "pareto.svg"
    assert main(["plot", "pareto", str(files["plans"]), "--out", str(out)]) == 0
    text = out.read_text()
    assert out.stat().st_size < 1_000_000
    assert "chosen plan" in text and "h200 · fp8 · aggregated, TP" in text
    from perfgraph.cli.commands import plot as command

    fig = command.pareto(type("A", (), {"files": [str(files["plans"])]})())
    fronts = [ln for ln in fig.axes[0].get_lines()]
    labels = [str(ln.get_label()) for ln in fronts]
    assert sorted(labels) == sorted([
        "h200 · fp8 · aggregated = h200 · int8 · aggregated",
        "h200 · fp8 · disaggregated = h200 · int8 · disaggregated",
        "h200 · bf16 · aggregated", "h200 · bf16 · disaggregated"])
    colours = {tuple(np.round(charts_colour(ln), 3)) for ln in fronts}
    assert len(colours) == len(fronts)  # one colour each
    for colour in colours:  # and the SVG draws each (matplotlib writes #rrggbb)
        assert "#" + "".join(f"{round(c * 255):02x}" for c in colour[:3]) in text


def charts_colour(line) -> tuple[float, ...]:
    from matplotlib.colors import to_rgba

    return to_rgba(line.get_color())


def test_the_readme_plan_chart_is_under_a_megabyte(tmp_path: Path, capsys) -> None:
    plans, out = tmp_path / "plans.parquet", tmp_path / "pareto.svg"
    assert main(["plan", "--slo", "ttft=1s", "--slo", "itl=50ms", "--rate", "20 request/s",
                 "--search", "hardware=h200", "--out", str(plans)]) == 0
    assert main(["plot", "pareto", str(plans), "--out", str(out)]) == 0
    assert out.stat().st_size < 1_000_000  # 102,875 plans: 10.9 MB when each was drawn


def test_a_narrow_spread_is_drawn_narrow() -> None:
    itl = 0.012 * (1 + 0.03 * np.linspace(0, 1, 400))  # a 3 % spread
    fig = charts.simulation(np.full(10, 0.05), itl)
    lo, hi = fig.axes[1].get_xlim()
    assert (hi - lo) >= 0.4 * 12.18  # ±20 % of the median at least: the 3 % is a sliver
    assert lo <= 12 and hi >= 12.36
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels[1].startswith("p50: ") and labels[2].startswith("p99: ")
    assert not fig.axes[1].texts  # no label drawn over the plot


def test_measured_runs_are_coloured_by_gpu_and_marked_by_tp(capsys) -> None:
    from perfgraph.measured.comparison import compare_runs
    from perfgraph.measured.reading import read_measured
    from perfgraph.measured.setup import Baseline
    from perfgraph.scenario.loading import ScenarioSpec

    base = Baseline.from_spec(ScenarioSpec())
    runs = compare_runs(read_measured([str(DATA)]).runs, base, levers=False)
    pairs = chart_data.measured_pairs(runs)["itl"]
    by = {s.label: s for s in pairs}
    h100, h200 = by["h100-sxm · fp8 · TP 2 · 921.6/921.6"], by["h200 · fp8 · TP 2 · 921.6/921.6"]
    long = by["h100-sxm · fp8 · TP 2 · 7373/921.6"]
    assert len({h100.color, h200.color, long.color}) == 3  # GPU and lengths: colours
    assert h100.style == h200.style != by["h100-sxm · fp8 · TP 4 · 921.6/921.6"].style  # TP
    fig = charts.measured(chart_data.measured_pairs(runs), title="t")
    ax = next(a for a in fig.axes if a.get_title() == "Inter-token latency (mean TPOT)")
    assert len(ax.collections) == len(pairs) == 10


def test_capacity_is_what_a_configuration_serves_per_gpu() -> None:
    sheet = load().sheet  # aggregated: one replica's output tokens/s per GPU at its batch
    assert sheet.magnitude("capacity_throughput_per_gpu") == pytest.approx(
        sheet.magnitude("throughput_per_gpu"), rel=1e-12)
    fork = sheet.fork()
    fork.set("disaggregated", "1")
    # a decode replica (2 GPUs) at 64 users: 4948.08 token/s; each output token also needs
    # ISL/OSL = 1 prompt token of a 2-GPU prefill replica at 28048.1 prompt tokens/s:
    # 1 / (2/4948.08 + 2/28048.1) = 2103.0 token/s per GPU
    decode, prefill = fork.magnitude("decode_throughput"), fork.magnitude("prefill_pool_rate")
    assert (decode, prefill) == (pytest.approx(4948.08, rel=1e-5),
                                 pytest.approx(28048.1, rel=1e-5))
    assert fork.magnitude("capacity_throughput_per_gpu") == pytest.approx(
        1 / (2 / decode + 2 / prefill), rel=1e-12)
    assert fork.magnitude("capacity_throughput_per_gpu") == pytest.approx(2103.04, rel=1e-5)


def test_more_families_than_colours_leave_the_rest_grey() -> None:
    from perfgraph.output.pareto_data import COLOURED, pareto_data

    n = 14  # families h0 … h13: family k serves 10 + k per GPU at 10 + k tokens/s per user
    k = np.repeat(np.arange(n), 2)
    cols = {"engine": np.array(["vllm"] * 2 * n), "hardware": np.char.add("h", k.astype(str)),
            "precision": np.array(["fp8"] * 2 * n), "disaggregated": np.zeros(2 * n),
            "tp": np.ones(2 * n), "pp": np.ones(2 * n), "concurrency": np.ones(2 * n),
            "deployment_gpus": np.ones(2 * n),
            "tokens_per_s_per_user": np.where(np.arange(2 * n) % 2, 1.0, 10.0 + k),
            "capacity_throughput_per_gpu": np.where(np.arange(2 * n) % 2, 5.0 + k, 1.0),
            "rank": np.where(np.arange(2 * n) == 1, 1, 2)}  # the chosen: h0's second plan
    data = pareto_data(cols)
    labels = [f.label for f in data.frontiers]
    assert len(labels) == COLOURED and len(data.others) == n - COLOURED
    # on the overall frontier: h13 (fastest per user, 23) and h13 (most per GPU, 18) only,
    # then the chosen plan's family, then the rest by what they serve per GPU
    assert labels[:3] == ["h13 · fp8 · aggregated", "h0 · fp8 · aggregated",
                          "h12 · fp8 · aggregated"]
    fig = charts.pareto(data.frontiers, data.scatter, data.chosen, data.others, title="t")
    grey = [ln for ln in fig.axes[0].get_lines() if ln.get_color() == "0.6"]
    assert len(grey) == n - COLOURED
    assert "4 other families' frontiers" in [str(ln.get_label()) for ln in grey]


def test_a_plan_file_without_the_capacity_says_which_command_writes_it(
        files, tmp_path: Path, capsys) -> None:
    import polars as pl

    old = tmp_path / "old.parquet"
    pl.read_parquet(files["plans"]).drop("capacity_throughput_per_gpu").write_parquet(old)
    assert main(["plot", "pareto", str(old), "--out", str(tmp_path / "x.svg")]) == 2
    err = capsys.readouterr().err
    assert "'capacity_throughput_per_gpu'" in err and "perfgraph plan … --out" in err
    assert str(old) in err and not (tmp_path / "x.svg").exists()
