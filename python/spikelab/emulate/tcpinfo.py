"""``struct tcp_info`` (include/uapi/linux/tcp.h) as Linux 6.7+ returns it (248 bytes).

Older kernels return a prefix; the fields they lack read as 0 and :func:`parse` says which
fields the kernel filled. Later kernels append fields (AccECN counters, 6.18+) that are not
read here.
"""

from __future__ import annotations

import struct

# name, struct code; in order, with the C layout's natural alignment (explicit below).
FIELDS: tuple[tuple[str, str], ...] = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"),
    ("backoff", "B"), ("options", "B"), ("wscale", "B"), ("app_limited", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"),
    ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"),
    ("snd_ssthresh", "I"), ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt", "I"), ("rcv_space", "I"), ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"),
    ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"), ("notsent_bytes", "I"), ("min_rtt", "I"),
    ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate", "Q"), ("busy_time", "Q"), ("rwnd_limited", "Q"),
    ("sndbuf_limited", "Q"),
    ("delivered", "I"), ("delivered_ce", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"),
    ("dsack_dups", "I"), ("reord_seen", "I"), ("rcv_ooopack", "I"), ("snd_wnd", "I"),
    ("rcv_wnd", "I"), ("rehash", "I"),
    ("total_rto", "H"), ("total_rto_recoveries", "H"), ("total_rto_time", "I"),
)
FORMAT = "<" + "".join(code for _, code in FIELDS)
SIZE = struct.calcsize(FORMAT)
NAMES = tuple(name for name, _ in FIELDS)
OFFSETS: dict[str, int] = {}
_off = 0
for _name, _code in FIELDS:
    OFFSETS[_name] = _off
    _off += struct.calcsize("<" + _code)
assert SIZE == 248, SIZE

TCP_INFINITE_SSTHRESH = 0x7FFFFFFF
# include/net/tcp.h enum tcp_ca_state
CA_STATES = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}
# The simulator's ca_state codes: 0 open, 1 disorder, 2 recovery, 3 loss, 4 CWR (a window
# reduction without loss: the simulator's local congestion, the kernel's also after ECN).
SIM_CA_STATE = {0: 0, 1: 1, 2: 4, 3: 2, 4: 3}


def parse(raw: bytes) -> tuple[dict[str, int], int]:
    """Decode a TCP_INFO answer; returns (fields, bytes the kernel filled)."""
    n = len(raw)
    values = struct.unpack(FORMAT, raw[:SIZE].ljust(SIZE, b"\0"))
    return dict(zip(NAMES, values, strict=True)), n


def available(filled: int) -> list[str]:
    """Fields a kernel that filled ``filled`` bytes provides."""
    return [name for name, code in FIELDS
            if OFFSETS[name] + struct.calcsize("<" + code) <= filled]
