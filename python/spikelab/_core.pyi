"""Type stub of the Rust extension module (crates/spikelab-py)."""

from typing import Any, Literal, TypedDict

__version__: str

TraceLevel = Literal["summary", "timeseries", "packets"]

class SimulationError(RuntimeError):
    """A run that could not finish (time stopped advancing, a trace bound, a core failure)."""

class ScenarioError(ValueError):
    """Invalid scenario; the message is one line, ``field.path: problem``."""

class Column(TypedDict, total=False):
    name: str
    type: Literal["int64", "int32", "float64", "dict"]
    data: bytes  # num_rows little-endian values (int32 codes for "dict"; -1 = null)
    dictionary: list[str]  # only for "dict"

class Table(TypedDict):
    num_rows: int
    columns: list[Column]

def resolve(text: str, overrides: list[str] = ..., base_dir: str = ...) -> str:
    """Validate a scenario; return it resolved (defaults filled) as JSON."""

class Simulation:
    def __init__(
        self,
        text: str,
        overrides: list[str] = ...,
        base_dir: str = ...,
        seed: int | None = None,
        trace: TraceLevel | None = None,
    ) -> None: ...
    @property
    def seed(self) -> int: ...
    @property
    def trace(self) -> TraceLevel: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def scenario_json(self) -> str: ...
    def progress(self) -> float:
        """Fraction of simulated time done (0..1); callable while run() executes."""
    def cancel(self) -> None:
        """Ask a run() executing in another thread to stop; that run() raises KeyboardInterrupt."""
    def runs_template(self) -> Table:
        """The runs table before any event (columns and settings, counters zero), no simulation."""
    def finished(self) -> bool:
        """Whether run() has ended (no more chunks will be streamed)."""
    def wait_chunks(self, timeout_s: float) -> list[tuple[Literal["timeseries", "packets"], Table]]:
        """Waits up to timeout_s (without the GIL) for streamed chunks, then takes them."""
    def take_chunks(self) -> list[tuple[Literal["timeseries", "packets"], Table]]:
        """Trace chunks streamed so far (oldest first); callable while run() executes."""
    def run(self, stream_rows: int = 0) -> dict[str, Any]:
        """Run once, without the GIL. Keys: runs, timeseries, packets (Table), wall_s, events.
        With stream_rows > 0 the trace rows leave in chunks through take_chunks(); the tables
        returned hold the rows after the last chunk."""

# ---- emulation (crates/spikelab-py/src/emu.rs) ------------------------------------------

class Emulator:
    """The real-time emulator; opens its AF_PACKET sockets in the calling process's network
    namespace (Linux, CAP_NET_RAW)."""
    def __init__(self, config_json: str) -> None: ...
    def run(self, t0_ns: int) -> str:
        """Emulate from t0_ns (CLOCK_REALTIME) to the end, without the GIL; statistics JSON."""

def emu_analyze(pcap: str, duration_ns: int) -> dict[str, Any]:
    """An emulator capture -> packets and series (Table), flows/timing/meta (JSON), stages."""

def emu_scenario(text: str, overrides: list[str] = ..., base_dir: str = ...) -> str:
    """The numbers (ns, bytes) of a scenario that the kernel side needs, as JSON."""
