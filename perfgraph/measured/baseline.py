"""What one measured run is modelled at (``RunSetup``) and what the scenario options say
(``Baseline``): the records ``perfgraph.measured.setup`` fills in, and the sheet cells they set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from perfgraph.engine.sheet import Sheet
from perfgraph.scenario import profiles
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load

#: The serving inputs set per run, as columns of the sheet.
CONFIG_CELLS = ("tp", "concurrency", "isl", "osl")
#: A measured in-flight concurrency under this fraction of the configured one replaces it
#: (within 5% the two agree up to the ramp at the run's start and end).
IN_FLIGHT_BELOW = 0.95
#: Where a run's ISL or OSL came from, as the outputs name it.
MEASURED, EXPECTED, CONFIGURED, OPTIONS = "measured", "expected", "configured", "scenario options"
#: The concurrency source of a maximum-load run: the sheet's ``capacity_batch``
CAPACITY = "capacity"
#: How a run's requests arrived (``RunSetup.arrivals``): a closed loop of N users, paced at a
#: request rate (an open loop), or every request at once (a burst of the run's R requests)
CLOSED, PACED, BURST = "closed", "paced", "burst"
#: The deployment a run record may carry, each set as the cell of its name where the sheet has it
#: (ep, dp_attention and the disaggregated pools wait for the physics that uses them).
DEPLOYMENT_CELLS = ("pp", "ep", "dp_attention", "disaggregated", "prefill_gpus",
                    "decode_gpus", "prefill_tp", "decode_tp")
#: Run fields the sheet spells otherwise: its tp and ep are the decode workers' (the
#: disaggregation sheet sizes the prefill pool with prefill_tp).
_CELL_FOR = {"decode_tp": "tp"}


@dataclass(frozen=True)
class RunSetup:
    """The model's configuration for one run: catalog names, serving inputs, and notes saying
    where each came from. ``error`` says why the run cannot be modelled (then the rest may be
    None)."""

    model: str | None
    hardware: str | None
    precision: str | None
    tp: float | None
    concurrency: float | None
    isl: float | None
    osl: float | None
    notes: tuple[str, ...] = ()
    error: str | None = None
    isl_source: str | None = None  # MEASURED | CONFIGURED | OPTIONS
    osl_source: str | None = None
    #: the OSL the model's E2EL is taken at: the run's implied mean OSL where the file gives
    #: only a configured one and its latencies imply another (InferenceMAX rows), else ``osl``
    e2el_osl: float | None = None
    #: "configured" | "in flight" | "options" | "little" | "capacity" (a maximum-load run: the
    #: sheet's capacity_batch, set by compare once the run's sheet is loaded)
    concurrency_source: str | None = None
    engine: str | None = None  # the run's engine where the file names a known one, else None
    #: (cell, value) for the run's deployment beyond TP, only cells the sheet has
    deployment: tuple[tuple[str, str], ...] = ()
    #: CLOSED | PACED (``request_rate`` the offered λ, request/s) | BURST (``burst_requests``
    #: its R requests sent at once): which of the sheet's throughput cells it is held against
    arrivals: str = CLOSED
    request_rate: float | None = None
    burst_requests: float = 0.0

    @property
    def group(self) -> tuple:
        """Runs with the same group share one loaded scenario."""
        return self.model, self.hardware, self.precision, self.engine, self.deployment

    def spec(self, base: ScenarioSpec) -> ScenarioSpec:
        return ScenarioSpec(file=base.file, model=self.model, hardware=self.hardware,
                            workload=base.workload, precision=self.precision,
                            sets=(*base.sets, *self.deployment),
                            calibration=base.calibration, engine=self.engine or base.engine)


@dataclass(frozen=True)
class Baseline:
    """What the scenario options say, and which of it the user gave on purpose."""

    spec: ScenarioSpec
    choices: Mapping[str, str]  # model / hardware / precision: catalog name or path
    values: Mapping[str, float]  # tp / concurrency / isl / osl
    explicit: frozenset[str]
    cells: frozenset[str] = frozenset()  # the sheet's cell names
    engine: str = "vllm"
    #: the calibration's label for runs taken together (each run's domain verdict is in its
    #: own notes: "predicted by …"); roofline without one
    label: str = "roofline"
    #: the scenario's sheet, whose cells work out what a run's readings imply
    #: (``perfgraph.measured.derived``); None: a default scenario's
    sheet: Sheet | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_spec(cls, spec: ScenarioSpec) -> Baseline:
        """Load the scenario once (bad options fail here, as PerfgraphError) and note which
        parts the user chose rather than the built-in defaults."""
        scenario = load(spec)
        choices = {"model": spec.model or scenario.model.path,
                   "hardware": spec.hardware or scenario.hardware.path,
                   "precision": scenario.precision}
        values = {name: scenario.sheet.magnitude(name) for name in CONFIG_CELLS
                  if scenario.sheet.error(name) is None}
        label = profiles.label(scenario.calibration.doc) if scenario.calibration else \
            "roofline"
        return cls(spec, choices, values, frozenset(_explicit(spec, scenario)),
                   frozenset(scenario.sheet.names), scenario.engine, label,
                   scenario.sheet)

    @property
    def set_cells(self) -> frozenset[str]:
        """The cells the user pinned with ``--set``: what a run's own settings never override."""
        return frozenset(name for name, _ in self.spec.sets)

    @property
    def reference(self) -> str:
        """What the runs are held against: the roofline, or the calibration's label."""
        return self.label

    def shown(self, kind: str) -> str:
        """A choice as a user reads it: the catalog slug for a catalog file."""
        text = self.choices[kind]
        return text.rsplit("/", 1)[-1].removesuffix(".toml") if kind != "precision" else text


def _explicit(spec: ScenarioSpec, scenario: Scenario) -> set[str]:
    file_data = scenario.file.doc.data if scenario.file is not None else {}
    file_values = file_data.get("values", {}) if isinstance(file_data, dict) else {}
    chosen = {kind for kind in ("model", "hardware", "precision", "engine")
              if getattr(spec, kind) is not None or kind in file_data}
    set_names = {name for name, _ in spec.sets}
    for name in CONFIG_CELLS:
        if name in set_names or name in file_values or spec.workload is not None:
            chosen.add(name)
    return chosen
