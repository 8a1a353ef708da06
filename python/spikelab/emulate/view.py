"""The kernel view: the schema of what the core gives the emulator about a scenario.

``_core.emu_resolve`` returns, besides the resolved scenario, the numbers of it that the kernel
side of an emulation needs, in plain units (ns, bytes, segments, bit/s): what
:mod:`.kernel` maps to sysctls, routes, socket options and usrsctp settings, and what
:mod:`.tables` reads back. It is JSON built from ``crates/spikelab-emu/src/view.rs``; the
``TypedDict`` s here mirror those structs field by field (names, nesting, value types), and
``tests/test_emu_view.py`` checks that every example's and study's view has exactly these keys
and types. docs/emulation.md, "The kernel view".
"""

from __future__ import annotations

from typing import TypedDict


class RtoView(TypedDict):
    """A flow's retransmission timer."""

    estimator: str  # rfc6298, linux or ns2
    alpha: float  # SRTT gain, dimensionless (0.125 for linux and ns2)
    beta: float  # RTTVAR gain, dimensionless (0.25 for linux and ns2)
    k: float  # RTTVAR multiplier K, dimensionless (4 for linux and ns2)
    min_ns: int  # lower bound, ns
    max_ns: int  # upper bound, ns
    initial_ns: int  # RTO before the first RTT sample, ns


class TcpView(TypedDict):
    """A flow's TCP settings, as spikelab-tcp's ``TcpConfig`` has them."""

    variant: str  # reno, newreno or sack (the scenario's spelling)
    mss: int  # maximum segment size, payload bytes
    initial_window: int  # initial congestion window, segments
    initial_ssthresh: int | None  # initial slow-start threshold, bytes (None: arbitrarily high)
    rwnd: int  # receive window, bytes
    abc: bool  # appropriate byte counting (RFC 3465)
    dupthresh: int  # duplicate ACKs that trigger fast retransmit, count
    limited_transmit: bool  # RFC 3042 limited transmit
    block_fr_after_rto: bool  # no fast retransmit after a timeout until recover (RFC 6582)
    timestamps: bool  # RFC 7323 timestamps
    sack: bool  # RFC 2018 SACK
    dsack: bool  # RFC 2883 DSACK
    delayed_ack: bool  # delayed ACK
    delack_timeout_ns: int  # delayed-ACK timeout (its least value with delack_ato), ns
    delack_ato: bool  # the delayed-ACK timeout adapts as Linux's ato does
    delack_segments: int  # full-sized segments that force an ACK, count
    comp_sack: int  # receiver SACK compression: ACKs held back at most, count (0: off)
    comp_sack_delay_ns: int  # the compressed-ACK timer's bound, ns
    comp_sack_slack_ns: int  # the compressed-ACK timer's slack, ns
    timer_hz: int  # the timers' tick rate, Hz (0: exact timers)
    rto: RtoView  # the retransmission timer


class SctpView(TypedDict):
    """An SCTP flow's endpoint settings, as spikelab-sctp's ``SctpConfig`` has them."""

    profile: str  # rfc9260, rfc4960 or ns2
    destinations: int  # the peer's addresses (paths of the association), count
    primary: int  # the primary destination's index, from 0
    rto_initial_ns: int  # RTO.Initial, ns
    rto_min_ns: int  # RTO.Min, ns
    rto_max_ns: int  # RTO.Max, ns
    rto_alpha: float  # RTO.Alpha, dimensionless
    rto_beta: float  # RTO.Beta, dimensionless
    rto_max_cap_on_backoff: bool  # a backed-off RTO is capped at RTO.Max
    max_burst: int | None  # Max.Burst, packets (None: no limit)
    max_burst_mode: str  # how Max.Burst applies: packets, clamp or after_fast_rtx
    assoc_max_retrans: int  # Association.Max.Retrans, count
    path_max_retrans: int  # Path.Max.Retrans, count
    max_init_retransmits: int  # Max.Init.Retransmits, count
    heartbeats: bool  # heartbeats on idle destinations
    hb_interval_ns: int  # HB.interval, ns
    sack_delay_ns: int  # SACK.Delay, ns
    sack_freq: int  # packets carrying DATA that force a SACK, count
    mtu: int  # path MTU, bytes
    recv_buffer: int  # the receiver's buffer, bytes
    pf_max_retrans: int | None  # PotentiallyFailed threshold, count (None: no PF state)
    psmr: int | None  # Primary.Switchover.Max.Retrans, count (None: off)
    message_size: int  # payload bytes per DATA chunk (default: what fills the MTU)
    cwnd_validation: bool  # halve an idle destination's cwnd once per RTO (RFC 9260 §7.2.1)


class FlowView(TypedDict):
    """One ``[[flow]]``."""

    start_ns: int  # when the flow starts, ns from time 0
    app: str  # bulk or file
    size: int | None  # a file's size, bytes (None for bulk)
    cc: str  # the congestion control's name (reno, cubic, ...)
    fwd: str  # the data path's name
    rev: str  # the ACK path's name
    sctp: SctpView | None  # the SCTP endpoint settings (None for a TCP flow)
    tcp: TcpView  # the TCP settings (an SCTP flow has [flow.tcp]'s defaults)


class OwnQueueView(TypedDict):
    """A path whose first stage is the sender's own queue (``backpressure = true``)."""

    path: str  # the path's name
    rate_bps: int  # the stage's rate as built (before any change), bit/s
    queue_packets: int | None  # the queue's capacity, packets (None when given in bytes)
    queue_bytes: int | None  # the queue's capacity, bytes (None when given in packets)
    constant: bool  # the rate never changes (no schedule, trace, switching or adapt)


class KernelView(TypedDict):
    """A scenario's kernel view."""

    duration_ns: int  # sim.duration, ns
    seed: int  # sim.seed
    flows: list[FlowView]  # one per [[flow]], in the scenario's order
    backpressure: list[OwnQueueView]  # the paths whose first stage is the sender's own queue
