"""Type stub of the Rust extension module (crates/spikelab-py)."""

from typing import Any, Literal, TypedDict

__version__: str
__build__: str  # the version and a digest of the engine's sources (build.rs)

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
    def run(self, stream_rows: int = 0, pcap_dir: str | None = None) -> dict[str, Any]:
        """Run once, without the GIL. Keys: runs, timeseries, packets (Table), wall_s, events,
        pcaps (paths of the captures written). With stream_rows > 0 the trace rows leave in
        chunks through take_chunks(); the tables returned hold the rows after the last chunk.
        With pcap_dir, the captures of sim.pcap are written there (temporary names until the
        run completes)."""

# ---- paper 004 §6.2: the SCTP RTO alpha/beta study (spikelab-sctp::rto_study) ------------

Alignment = Literal["after", "before"]

def rto_study(
    rtt_ms: list[float],
    pairs: list[tuple[float, float]],
    rto_initial: float = 3.0,
    rto_min: float = 1.0,
    rto_max: float = 60.0,
    alignment: Alignment = "after",
    grade_base: Literal[0, 1] = 1,
) -> dict[str, list[Any]]:
    """The RFC 4960 estimator over one RTT sample a second (ms) for each (alpha, beta); columns
    alpha, beta, delay_sum_s, spurious_s, grade_delay, grade_spurious, distance, rank, one row
    per pair in the order given. RTO bounds in seconds; ValueError names a bad argument."""

def rto_series(
    rtt_ms: list[float],
    alpha: float,
    beta: float,
    rto_initial: float = 3.0,
    rto_min: float = 1.0,
    rto_max: float = 60.0,
    alignment: Alignment = "after",
) -> list[float]:
    """The RTO (ms) paired with each RTT sample: after the estimator took it ("after") or the
    one armed before it ("before")."""

def walkaway_rtt_ms(seconds: int, noise: float = 0.0, seed: int = 1) -> list[float]:
    """The wlan-walkaway preset's RTT (ms) at t = 0 .. seconds - 1 s: the skeleton, or with
    noise > 0 each sample times LogNormal(0, noise) drawn from stream ``seed``."""

def table_schema(name: str) -> list[dict[str, Any]]:
    """The columns of result table ``name`` (runs, timeseries, packets, or sweep: the columns
    a sweep adds) as the core's schema describes them: ``name`` (a pattern may hold ``<d>`` or
    ``<path>_<stage>``), ``type``, ``unit``, ``description``, ``nullable``."""

def column_meta(table: str, column: str) -> tuple[str, str] | None:
    """(unit, description) of a column of a result table, or None if the schema lacks it."""

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
def emu_resolve(text: str, overrides: list[str], base_dir: str
                ) -> tuple[str, str, list[str | None]]:
    """(resolved scenario JSON, emu_scenario's view JSON, each flow's congestion control that
    only the kernel has, or None): such a TCP flow is read as reno."""

# ---- packet captures (crates/spikelab-py/src/capture.rs) ---------------------------------

class CaptureError(ValueError):
    """A capture that cannot be read; one line, ``PATH: byte N: problem`` (or ``PATH: problem``)."""

#: A column: (numpy dtype string such as "<u4", little-endian bytes of its values).
ColumnBytes = tuple[str, bytes]

class CaptureTransport(TypedDict):
    tcp: dict[str, ColumnBytes]  # ts_ns conn seq ack flags window length wire has_ts tsval
    #                              tsecr sack_count sack_le0 sack_re0 sack_le1 sack_re1
    #                              iface direction
    sctp: dict[str, ColumnBytes]  # ts_ns conn wire has_cum cum_tsn data_offsets chunk_tsn
    #                               chunk_bytes dup_offsets dup_tsn iface direction
    tcp_conns: list[tuple[str, int, str, int]]
    sctp_conns: list[tuple[str, int, str, int]]
    frames: int
    other_links: list[int]
    iface_names: list[str]
    matched: bool
    truncated_at: int | None
    section_comment: str
    size: int

def capture_transport(path: str, iface: str | None = None) -> CaptureTransport:
    """The TCP segments and SCTP packets of a pcap or pcapng file as columns, read as a
    stream without the GIL (only that pcapng interface's with ``iface``; never a frame the
    emulator records as dropped). OSError for the file, CaptureError for its content."""

def capture_frames(path: str) -> dict[str, Any]:
    """Every frame as columns: ts_ns, linktype, iface, direction, orig_len, iface_name (codes
    into iface_names) as ColumnBytes; data and comment (bytes) with data_offsets and
    comment_offsets; section_comment, truncated_at, size. The whole capture in memory."""
