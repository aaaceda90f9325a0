"""``perfgraph plot``: the data each chart holds, read back from the Figure (its lines'
and scatter points' data) or from the SVG written, never pixels; one file per kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from perfgraph.cli.main import main  # noqa: E402
from perfgraph.measured.comparison import compare_runs  # noqa: E402
from perfgraph.measured.reading import read_measured  # noqa: E402
from perfgraph.measured.setup import Baseline  # noqa: E402
from perfgraph.output import chart_data, charts  # noqa: E402
from perfgraph.scenario.loading import ScenarioSpec, load  # noqa: E402

DATA = Path(__file__).parent / "data" / "measured" / "inferencemax_llama70b_fp8"
WORKLOADS = Path(__file__).parents[1] / "workloads"


def line(fig, title: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    ax = next(a for a in fig.axes if a.get_title() == title)
    found = next(ln for ln in ax.get_lines() if ln.get_label() == label)
    return np.asarray(found.get_xdata()), np.asarray(found.get_ydata())


def points(fig, title: str, label: str) -> np.ndarray:
    ax = next(a for a in fig.axes if a.get_title() == title)
    return np.asarray(next(c for c in ax.collections if c.get_label() == label).get_offsets())


def at(x: np.ndarray, y: np.ndarray, where: float) -> float:
    return float(y[np.flatnonzero(x == where)[0]])


def test_concurrency_chart_is_the_sheet_at_each_concurrency() -> None:
    sheet = load().sheet
    fig = charts.across(chart_data.scenario_panels(sheet, "concurrency"), x="concurrency",
                        title="t")
    x, y = line(fig, "Throughput per GPU", "model")
    assert at(x, y, 64) == pytest.approx(sheet.magnitude("throughput_per_gpu"), rel=1e-12)
    x, y = line(fig, "Inter-token latency (mean TPOT)", "model")
    assert at(x, y, 64) == pytest.approx(sheet.magnitude("itl"), rel=1e-12)  # ms
    x, y = line(fig, "End-to-end latency", "model")
    assert at(x, y, 64) == pytest.approx(sheet.magnitude("e2e_latency"), rel=1e-12)  # s
    fork = sheet.fork()
    fork.set("concurrency", "1")
    x, y = line(fig, "Time to first token", "model")
    assert at(x, y, 1) == pytest.approx(fork.magnitude("ttft"), rel=1e-12)
    x, y = line(fig, "Throughput per GPU", "model: ceiling (KV-capped batch)")
    assert at(x, y, 64) == pytest.approx(sheet.magnitude("throughput_ceiling") / 2, rel=1e-12)
    assert np.all(np.diff(line(fig, "Throughput per GPU", "model")[1]) >= -1e-9)


def test_tp_chart_spans_1_to_8_and_passes_through_the_scenario() -> None:
    sheet = load().sheet
    fig = charts.across(chart_data.scenario_panels(sheet, "tp"), x="tp", title="t")
    x, y = line(fig, "Inter-token latency (mean TPOT)", "model")
    assert list(x) == [1, 2, 4, 8]
    assert at(x, y, 2) == pytest.approx(sheet.magnitude("itl"), rel=1e-12)
    assert y[0] > y[1] > y[2] > y[3]  # more GPUs share each step's bytes


@pytest.fixture(scope="module")
def comparisons():
    base = Baseline.from_spec(ScenarioSpec())
    return compare_runs(read_measured([str(DATA / "1k1k")]).runs, base, levers=False), base


def test_measured_runs_are_points_at_their_own_numbers(comparisons) -> None:
    runs, base = comparisons
    fig = charts.across(chart_data.measured_panels(runs, base, "concurrency"),
                        x="concurrency", title="t")
    label = "h100-sxm · fp8 · TP 2 · 921.6/921.6"
    got = points(fig, "Throughput per GPU", f"{label} (measured)")
    # InferenceMAX's H100 TP 2 at 64 users: 2127.3 output tokens/s over 2 GPUs
    assert got[got[:, 0] == 64][0, 1] == pytest.approx(2127.2857 / 2, rel=1e-6)
    tpot = points(fig, "Inter-token latency (mean TPOT)", f"{label} (measured)")
    run = next(c for c in runs if c.setup.hardware == "h100-sxm" and c.setup.tp == 2
               and c.setup.concurrency == 64)
    assert tpot[tpot[:, 0] == 64][0, 1] == pytest.approx(run.metric("tpot").measured)
    # per GPU, TP 2, 4 and 8 of one GPU model the same throughput: one line, named for all
    x, y = line(fig, "Throughput per GPU",
                "h100-sxm · fp8 · TP 2 = TP 4 = TP 8 · 921.6/921.6 (model)")
    assert at(x, y, 64) == pytest.approx(run.metric("throughput").modelled * 1024 / 2048,
                                         rel=1e-9)  # the file's total tokens/s per GPU
    x, y = line(fig, "Inter-token latency (mean TPOT)", f"{label} (model)")  # apart here
    assert at(x, y, 64) == pytest.approx(run.metric("tpot").modelled, rel=1e-9)


def test_relative_is_percent_of_possible(comparisons) -> None:
    runs, base = comparisons
    fig = charts.across(chart_data.measured_panels(runs, base, "tp", relative=True),
                        x="tp", title="t", relative=True)
    got = points(fig, "Throughput per GPU", "h100-sxm · fp8 · 4 users · 921.6/921.6 (measured)")
    assert got[:, 0].tolist() == [2, 4, 8]
    run = next(c for c in runs if c.setup.hardware == "h100-sxm" and c.setup.tp == 2
               and c.setup.concurrency == 4)
    assert got[0, 1] == pytest.approx(100 * run.possible)  # 59.1 %, as perfgraph compare says
    # 59.78% with vLLM's BF16 KV cache (--kv-cache-dtype auto) at the runs' mean lengths
    # (921.6 = 0.9 × 1024; 59.95% at 1024/1024, 59.12% with FP8 KV), recomputed by the graph
    assert got[0, 1] == pytest.approx(59.78, abs=0.01)


def test_roofline_has_the_ridge_and_the_scenarios_points() -> None:
    sheet = load().sheet
    data = chart_data.roofline_data(sheet)
    fig = charts.roofline_figure(data.roof, data.ridge, data.points, title="t", x_unit="FLOP/B",
                          y_unit="TFLOP/s")
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    x, y = (np.asarray(a) for a in (ax.get_lines()[0].get_xdata(),
                                    ax.get_lines()[0].get_ydata()))
    ridge = sheet.magnitude("ridge_point")
    assert data.ridge == (pytest.approx(ridge), pytest.approx(y.max()))
    below = x < ridge / 2
    slope = np.diff(np.log(y[below])) / np.diff(np.log(x[below]))
    assert slope == pytest.approx(np.ones_like(slope))  # bandwidth-bound: FLOP/s ∝ intensity
    decode = points(fig, "", f"decode ({104.2} FLOP/B)")
    assert decode[0] == pytest.approx([sheet.magnitude("decode_intensity"),
                                       sheet.magnitude("attainable_flops")])


def test_measured_runs_on_the_roofline_sit_below_their_own_roof(comparisons) -> None:
    runs, base = comparisons
    named, series = chart_data.measured_roofline_points(runs, base, "TFLOP/s", load().sheet)
    by = {s.label: s for s in series}
    assert named == "roof: h100-sxm (one GPU)"  # the scenario's roof is the H100's
    assert "roof: h100-sxm (one GPU)" not in by and "roof: h200 (one GPU)" in by
    h200 = [c for c in runs if c.setup.hardware == "h200"]
    got = by["h200: measured runs, by MBU"]
    assert len(got.x) == len(h200) and len(by["h100-sxm: measured runs, by MBU"].x) == \
        len(runs) - len(h200)
    # achieved decode FLOP/s = MBU × bandwidth × intensity ≤ the roof there, each run's own
    # hardware's (the H200 runs' 4.8 TB/s is above the H100's 3.35)
    roof = by["roof: h200 (one GPU)"]
    assert np.all(got.y <= np.interp(got.x, roof.x, roof.y) * 1.0001)
    assert got.color != roof.color  # the runs a lighter shade of their roof
    # each point is the sheet's achieved_decode_flops: y ÷ x = MBU × the H200's 4.8 TB/s
    assert sorted(got.y / got.x) == pytest.approx(sorted(c.mbu * 4.8 for c in h200), rel=1e-9)
    assert sorted(got.y) == pytest.approx(sorted(c.achieved_decode_flops / 1e12 for c in h200),
                                          rel=1e-12)


def test_pareto_families_frontiers_and_the_chosen_plan() -> None:
    from perfgraph.output.pareto_data import pareto_data

    cols = {"engine": np.array(["vllm"] * 6), "hardware": np.array(["h100"] * 4 + ["h200"] * 2),
            "precision": np.array(["fp8"] * 6), "disaggregated": np.array([0.0] * 6),
            "tp": np.ones(6), "pp": np.ones(6), "concurrency": np.arange(1.0, 7.0),
            "deployment_gpus": np.full(6, 2.0),
            "tokens_per_s_per_user": np.array([10, 20, 15, 40, 30, 5.0]),
            "capacity_throughput_per_gpu": np.array([100, 80, 70, 30, 50, 200.0]),
            "rank": np.array([3, 1, 2, 4, 5, 6])}
    data = pareto_data(cols)
    assert [f.label for f in data.frontiers] == ["h200 · fp8 · aggregated",  # the highest first
                                                 "h100 · fp8 · aggregated"]
    h100 = data.frontiers[1]
    assert h100.x.tolist() == [10, 20, 40] and h100.y.tolist() == [100, 80, 30]  # 15/70 beaten
    assert data.chosen is not None and data.chosen.x.tolist() == [20]
    assert data.chosen.label == "chosen plan: vllm · h100 · fp8 · aggregated, TP 1, batch 2, 2 GPUs"
    assert sum(len(s.x) for s in data.scatter) == 6


def test_simulation_cdfs_on_synthetic_samples() -> None:
    rng = np.random.default_rng(0)
    ttft, itl = rng.exponential(0.2, 500), rng.normal(0.012, 0.001, 2000)
    fig = charts.simulation(ttft, itl)
    x, y = (np.asarray(a) for a in (fig.axes[0].get_lines()[0].get_xdata(),
                                    fig.axes[0].get_lines()[0].get_ydata()))
    assert x.tolist() == pytest.approx(np.sort(ttft * 1e3).tolist())
    assert y[-1] == 1 and np.all(np.diff(y) > 0)
    assert "2000 samples" in fig.axes[1].get_title()


KINDS = {"roofline": [], "concurrency": ["--measured", str(DATA / "1k1k")],
         "tp": ["--measured", str(DATA / "1k1k"), "--relative"],
         "measured": ["--measured", str(DATA)],
         "diff": [str(WORKLOADS / "chat-1k1k.toml"), str(WORKLOADS / "long-prompt-8k1k.toml")]}
#: Text each kind's SVG must hold: its title, an axis label with its unit, a legend entry.
SAYS = {"roofline": ["Roofline: Llama 3.1 70B · fp8 · NVIDIA H100 SXM5 80GB",
                     "arithmetic intensity (FLOP/B)", "ridge (590.7 FLOP/B)"],
        "concurrency": ["against concurrent users", "End-to-end latency (s)",
                        "h200 · fp8 · TP 8 · 921.6/921.6 (measured)", "mean time per output"],
        "tp": ["as % of possible", "tensor parallelism (TP)", "the model (100 %)"],
        "measured": ["Every measured run", "measured (ms)", "measured = modelled"],
        "diff": ["chat-1k1k.toml → ", "Time to first token (ms)", "HEAD "]}


def svg_text(path: Path) -> str:
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    return "\n".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_writes_an_svg_with_a_title_and_units(kind: str, tmp_path: Path,
                                                         capsys) -> None:
    out = tmp_path / f"{kind}.svg"
    assert main(["plot", kind, *KINDS[kind], "--out", str(out)]) == 0
    text = svg_text(out)
    for said in SAYS[kind]:
        assert said in text, said
    assert not list(tmp_path.glob("*.tmp*"))


def test_png_too(tmp_path: Path) -> None:
    out = tmp_path / "roofline.png"
    assert main(["plot", "roofline", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("argv", "says"), [
    (["plot", "pie", "--out", "x.svg"], "unknown chart kind 'pie'"),
    (["plot", "tp", "--out", "x.pdf"], "--out must end in .svg or .png"),
    (["plot", "diff", "a.toml", "--out", "x.svg"], "plot diff takes BASE HEAD"),
    (["plot", "tp", "--relative", "--out", "x.svg"], "--relative needs --measured"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, says, tmp_path: Path, capsys,
                                               monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_diff_markdown_links_its_plot(tmp_path: Path, capsys) -> None:
    out = tmp_path / "diff.svg"
    main(["diff", str(WORKLOADS / "chat-1k1k.toml"), str(WORKLOADS / "long-prompt-8k1k.toml"),
          "--format", "markdown", "--plot", str(out)])
    assert f"]({out})" in capsys.readouterr().out
    assert out.read_text().rstrip().endswith("</svg>")


def test_plot_names_the_extra_when_matplotlib_is_missing(monkeypatch, capsys) -> None:
    import perfgraph.output.diff_chart as plot  # where plot and diff --plot check for it

    real = plot.importlib.util.find_spec
    monkeypatch.setattr(plot.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["plot", "roofline", "--out", "x.svg"]) == 2
    assert "pip install 'perfgraph[plot]'" in capsys.readouterr().err


def test_the_readmes_pictures_are_made_by_the_commands_it_gives() -> None:
    from perfgraph.cli import pictures

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for name in ("pareto.png", "concurrency.png"):
        assert f"](perfgraph/output/assets/{name})" in readme
        assert (pictures.DEFAULT / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "python3 -m perfgraph.cli.pictures" in readme
    plan, pareto, across = pictures.COMMANDS
    flat = " ".join(readme.split())
    assert plan.split(" --out")[0] in flat
    for command in (pareto, across):
        assert command.format(plans="plans.parquet", out="perfgraph/output/assets") in flat


def test_pareto_and_simulation_draw_what_plan_and_simulate_wrote(tmp_path) -> None:
    import polars as pl

    from perfgraph.cli.main import main as cli

    plans, requests = tmp_path / "plans.parquet", tmp_path / "requests.parquet"
    assert cli(["plan", "--slo", "ttft=1s", "--slo", "itl=50ms", "--rate", "20 request/s",
                "--search", "hardware=h200", "--search", "tp=2,4", "--out", str(plans)]) == 0
    assert cli(["simulate", "--users", "8", "--requests", "60", "--out", str(requests)]) == 0
    from perfgraph.cli.commands import plot as command
    from perfgraph.output import charts

    frame = pl.read_parquet(plans)
    assert frame["rank"].sort().to_list() == list(range(1, frame.height + 1))
    fig = command.pareto(type("A", (), {"files": [str(plans)]})())
    fp8 = frame.filter((pl.col("precision") == "fp8") & (pl.col("disaggregated") == 0))
    xs = fp8["tokens_per_s_per_user"].to_numpy()
    ys = fp8["capacity_throughput_per_gpu"].to_numpy()
    keep = charts.frontier(xs, ys)
    drawn = next(ln for ln in fig.axes[0].lines
                 if ln.get_label() == "h200 · fp8 · aggregated = h200 · int8 · aggregated")
    assert list(drawn.get_xdata()) == pytest.approx(list(xs[keep]))
    assert list(drawn.get_ydata()) == pytest.approx(list(ys[keep]))
    rows = pl.read_parquet(requests)
    fig = command.simulation(type("A", (), {"files": [str(requests)]})())
    ttft_line = fig.axes[0].lines[0]
    assert sorted(ttft_line.get_xdata()) == pytest.approx(sorted(rows["ttft"].to_numpy()))
    assert fig.axes[1].get_xlabel().startswith("TPOT")
    for kind, path in (("pareto", plans), ("simulation", requests)):
        assert cli(["plot", kind, str(path), "--out", str(tmp_path / f"{kind}.svg")]) == 0
        assert (tmp_path / f"{kind}.svg").read_text().startswith("<?xml")
    assert cli(["plot", "pareto", str(requests), "--out", str(tmp_path / "x.svg")]) == 2
    assert not (tmp_path / "x.svg").exists()


def test_the_concurrency_charts_ceiling_is_the_sheets_per_gpu_cell() -> None:
    sheet = load().sheet  # the default: 2 × H100 at 64 users
    out = chart_data.curves(sheet, "concurrency", np.array([64.0]))
    assert out["ceiling"][0] == pytest.approx(
        sheet.magnitude("throughput_ceiling", "token/s") / 2, rel=1e-12)
    assert sheet.magnitude("throughput_ceiling_per_gpu", "token/s") == out["ceiling"][0]
