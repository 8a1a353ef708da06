//! The real-time engine (Linux): two AF_PACKET sockets, one thread, one timer.
//!
//! - Each veth gets a raw packet socket bound to it, with `PACKET_IGNORE_OUTGOING` (it does not
//!   see the frames it sends itself), kernel receive timestamps (`SO_TIMESTAMPNS`,
//!   CLOCK_REALTIME), `PACKET_QDISC_BYPASS` on transmit, promiscuous membership, and a large
//!   receive buffer. Frames are received and sent in batches (`recvmmsg`, `sendmmsg`).
//! - A frame's arrival time is its kernel receive timestamp, not the time the engine got to it,
//!   so a late wakeup does not shift the emulated path. Every stage hop is an event in the
//!   pipeline's heap; the engine sleeps on an absolute `timerfd` (CLOCK_REALTIME, timer slack
//!   1 ns) until shortly before the next departure, then busy-waits the last `spin_ns` and
//!   sends. Optionally the thread runs under SCHED_FIFO.
//! - A writer thread puts the pcapng on disk, so file I/O never blocks the real-time thread.
//! - The timing error of every departure (actual send time − intended time) is kept and
//!   summarised; it is also in the capture.

use crate::analyze::{self, Timing};
use crate::config::EmuConfig;
use crate::notes::{self, CaptureMeta, CAPTURE_FORMAT};
use crate::pcapng;
use crate::pipeline::{Fate, FateKind, Pipeline, Side};
use serde::Serialize;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::mem;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const SO_TIMESTAMPNS: libc::c_int = 35;
const SO_RCVBUFFORCE: libc::c_int = 33;
const ETH_P_ALL: u16 = 0x0003;
const BATCH: usize = 64;
const CTRL_WORDS: usize = 8; // 64 bytes: one cmsg with a struct timespec
const PCAP_CHUNK: usize = 256 * 1024;

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: libc::c_uint,
    tp_drops: libc::c_uint,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in ns: the clock of the kernel's receive timestamps.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.0) };
    }
}

fn setsockopt_int(fd: libc::c_int, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> bool {
    // SAFETY: passes a pointer to one c_int and its size.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// A raw packet socket bound to one interface.
fn packet_socket(ifname: &str) -> Result<(Fd, i32), String> {
    let name = CString::new(ifname).map_err(|_| format!("bad interface name {ifname:?}"))?;
    // SAFETY: plain libc calls with valid arguments; every result is checked.
    unsafe {
        let ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
        if ifindex == 0 {
            return Err(format!(
                "interface {ifname}: {}",
                io::Error::last_os_error()
            ));
        }
        // Protocol 0 until bound, so no frame of another interface is queued meanwhile.
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(os_err("AF_PACKET socket (needs CAP_NET_RAW)"));
        }
        let fd = Fd(fd);
        if !setsockopt_int(fd.0, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1) {
            return Err(os_err("PACKET_IGNORE_OUTGOING"));
        }
        if !setsockopt_int(fd.0, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1) {
            return Err(os_err("SO_TIMESTAMPNS"));
        }
        // Optional: transmit straight to the device; fine to go without.
        setsockopt_int(fd.0, SOL_PACKET, PACKET_QDISC_BYPASS, 1);
        if !setsockopt_int(fd.0, libc::SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20) {
            setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_RCVBUF, 16 << 20);
        }
        setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
        let mut sll: libc::sockaddr_ll = mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        if libc::bind(
            fd.0,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        ) != 0
        {
            return Err(os_err(&format!("bind to {ifname}")));
        }
        let mreq = PacketMreq {
            mr_ifindex: ifindex,
            mr_type: PACKET_MR_PROMISC,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        if libc::setsockopt(
            fd.0,
            SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mreq as *const PacketMreq as *const libc::c_void,
            mem::size_of::<PacketMreq>() as libc::socklen_t,
        ) != 0
        {
            return Err(os_err(&format!("promiscuous mode on {ifname}")));
        }
        Ok((fd, ifindex))
    }
}

fn socket_drops(fd: &Fd) -> u32 {
    let mut st = TpacketStats::default();
    let mut len = mem::size_of::<TpacketStats>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `st`.
    let ok = unsafe {
        libc::getsockopt(
            fd.0,
            SOL_PACKET,
            PACKET_STATISTICS,
            &mut st as *mut TpacketStats as *mut libc::c_void,
            &mut len,
        ) == 0
    };
    if ok {
        st.tp_drops
    } else {
        0
    }
}

/// The receive side of a batch: buffers, iovecs, headers and control space, set up once.
struct RxBatch {
    bufs: Vec<u8>,
    size: usize,
    iov: Vec<libc::iovec>,
    ctrl: Vec<[u64; CTRL_WORDS]>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RxBatch {
    fn new(size: usize) -> RxBatch {
        let mut b = RxBatch {
            bufs: vec![0u8; size * BATCH],
            size,
            iov: Vec::with_capacity(BATCH),
            ctrl: vec![[0u64; CTRL_WORDS]; BATCH],
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            hdrs: (0..BATCH).map(|_| unsafe { mem::zeroed() }).collect(),
        };
        for i in 0..BATCH {
            b.iov.push(libc::iovec {
                iov_base: b.bufs[i * size..].as_mut_ptr() as *mut libc::c_void,
                iov_len: size,
            });
        }
        for i in 0..BATCH {
            let h = &mut b.hdrs[i].msg_hdr;
            h.msg_iov = &mut b.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = b.ctrl[i].as_mut_ptr() as *mut libc::c_void;
        }
        b
    }

    /// Receives up to BATCH frames; returns how many.
    fn recv(&mut self, fd: &Fd) -> usize {
        for i in 0..BATCH {
            let h = &mut self.hdrs[i];
            h.msg_hdr.msg_controllen = CTRL_WORDS * 8;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        // SAFETY: every header points at buffers owned by self that outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd.0,
                self.hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        n.max(0) as usize
    }

    fn frame(&self, i: usize) -> &[u8] {
        let len = (self.hdrs[i].msg_len as usize).min(self.size);
        &self.bufs[i * self.size..i * self.size + len]
    }

    fn truncated(&self, i: usize) -> bool {
        self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0
    }

    /// The kernel receive timestamp of frame `i` (CLOCK_REALTIME ns), if there is one.
    fn timestamp(&self, i: usize) -> Option<u64> {
        let h = &self.hdrs[i].msg_hdr;
        // SAFETY: walks the control buffer the kernel filled, with the libc CMSG macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        None
    }
}

/// Hands filled capture buffers to a writer thread and gets empty ones back.
struct PcapSink {
    cur: Vec<u8>,
    full: Option<mpsc::Sender<Vec<u8>>>,
    empty: mpsc::Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl PcapSink {
    fn new(path: &str) -> Result<PcapSink, String> {
        let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
        let (full_tx, full_rx) = mpsc::channel::<Vec<u8>>();
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
        for _ in 0..4 {
            let _ = empty_tx.send(Vec::with_capacity(2 * PCAP_CHUNK));
        }
        let thread = std::thread::Builder::new()
            .name("spikelab-pcap".into())
            .spawn(move || -> io::Result<()> {
                let mut w = BufWriter::with_capacity(1 << 20, file);
                for mut buf in full_rx {
                    pcapng::write_all(&mut w, &buf)?;
                    buf.clear();
                    let _ = empty_tx.send(buf);
                }
                w.flush()?;
                w.into_inner().map_err(|e| e.into_error())?.sync_all()
            })
            .map_err(|e| format!("pcap writer thread: {e}"))?;
        Ok(PcapSink {
            cur: Vec::with_capacity(2 * PCAP_CHUNK),
            full: Some(full_tx),
            empty: empty_rx,
            thread: Some(thread),
        })
    }

    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.cur
    }

    fn maybe_hand_over(&mut self) {
        if self.cur.len() >= PCAP_CHUNK {
            let next = self
                .empty
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(2 * PCAP_CHUNK));
            let full = mem::replace(&mut self.cur, next);
            if let Some(tx) = &self.full {
                let _ = tx.send(full);
            }
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        if let Some(tx) = self.full.take() {
            let _ = tx.send(mem::take(&mut self.cur));
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| "pcap writer thread panicked".to_string())?
                .map_err(|e| format!("writing the capture: {e}")),
            None => Ok(()),
        }
    }
}

/// What a run did, for the report (serialised to JSON).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunStats {
    pub t0_ns: u64,
    pub stop_ns: u64,
    /// Stopped by a signal before its end.
    pub interrupted: bool,
    /// Frames received on the sender's / receiver's side.
    pub frames_in: [u64; 2],
    /// Frames sent towards the sender's / receiver's side.
    pub frames_out: [u64; 2],
    pub unclassified: u64,
    pub drops: u64,
    pub tx_errors: u64,
    /// Frames longer than a frame buffer (dropped).
    pub oversize: u64,
    /// Frames without a usable kernel timestamp (the engine's clock was used instead).
    pub timestamp_fallbacks: u64,
    pub late_stage_arrivals: u64,
    /// Frames the kernel dropped before the emulator read them, per socket.
    pub socket_drops: [u32; 2],
    /// Frames still inside the emulator when the run ended.
    pub left_in_flight: u64,
    pub max_in_flight: u64,
    pub scheduler: String,
    /// The CPU the emulator thread was pinned to.
    pub cpu: Option<usize>,
    pub spin_ns: u64,
    pub timer_wakeups: u64,
    pub spins: u64,
    /// CPU time of the real-time thread, s.
    pub cpu_s: f64,
    pub timing: Timing,
}

/// The emulator, sockets open, waiting to be told when time 0 is.
pub struct Engine {
    cfg: EmuConfig,
    pipe: Pipeline,
    seed: u64,
    socks: [Fd; 2],
    timer: Fd,
    epoll: Fd,
    stop_after: u64,
    snaplen: usize,
}

impl Engine {
    /// Parses the scenario, builds the paths and opens the sockets (in the calling thread's
    /// network namespace).
    pub fn open(cfg: EmuConfig) -> Result<Engine, String> {
        let sc = spikelab_scenario::parse(
            &cfg.scenario,
            &cfg.overrides,
            std::path::Path::new(&cfg.base_dir),
        )
        .map_err(|e| e.to_string())?;
        let seed = cfg.seed.unwrap_or(sc.sim.seed);
        let mut pipe = Pipeline::new(&sc, seed, &cfg.ports, cfg.frame_buf)?;
        pipe.set_dest_addrs(&cfg.dest_addrs)?;
        pipe.host_queues(&cfg.host_queue_paths)?;
        let stop_after = cfg.stop_after_ns.unwrap_or(sc.sim.duration.0.as_nanos());
        let (a, _) = packet_socket(&cfg.iface_a)?;
        let (b, _) = packet_socket(&cfg.iface_b)?;
        // SAFETY: plain libc calls; results checked.
        let (timer, epoll) = unsafe {
            let t =
                libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC);
            if t < 0 {
                return Err(os_err("timerfd_create"));
            }
            let t = Fd(t);
            let e = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            if e < 0 {
                return Err(os_err("epoll_create1"));
            }
            let e = Fd(e);
            for (fd, tag) in [(a.0, 0u64), (b.0, 1), (t.0, 2)] {
                let mut ev = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: tag,
                };
                if libc::epoll_ctl(e.0, libc::EPOLL_CTL_ADD, fd, &mut ev) != 0 {
                    return Err(os_err("epoll_ctl"));
                }
            }
            (t, e)
        };
        let snaplen = if cfg.snaplen == 0 {
            usize::MAX
        } else {
            cfg.snaplen as usize
        };
        Ok(Engine {
            cfg,
            pipe,
            seed,
            socks: [a, b],
            timer,
            epoll,
            stop_after,
            snaplen,
        })
    }

    /// Discards frames queued before the run starts.
    fn drain(&mut self, rx: &mut RxBatch) {
        for s in 0..2 {
            while rx.recv(&self.socks[s]) > 0 {}
        }
    }

    /// Runs from `t0_ns` (CLOCK_REALTIME) until the scenario's end, SIGINT or SIGTERM.
    pub fn run(mut self, t0_ns: u64) -> Result<RunStats, String> {
        let meta = CaptureMeta {
            format: CAPTURE_FORMAT,
            t0_ns,
            seed: self.seed,
            paths: self.pipe.path_meta.clone(),
            flows: self.pipe.flow_meta(),
            ifaces: vec![self.cfg.iface_a.clone(), self.cfg.iface_b.clone()],
        };
        let meta_json = serde_json::to_string(&meta).map_err(|e| e.to_string())?;
        let mut pcap = PcapSink::new(&self.cfg.pcap)?;
        pcap.buf().extend_from_slice(&pcapng::header(
            &meta_json,
            concat!("spikelab-emu ", env!("CARGO_PKG_VERSION")),
            &[&self.cfg.iface_a, &self.cfg.iface_b],
            self.cfg.snaplen,
        ));
        let mut stats = RunStats {
            t0_ns,
            stop_ns: t0_ns + self.stop_after,
            spin_ns: self.cfg.spin_ns,
            ..RunStats::default()
        };
        // SAFETY: prctl / sched_setscheduler on the calling thread; failures are reported.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            stats.scheduler = "SCHED_OTHER".into();
            if let Some(cpu) = self.cfg.cpu {
                let mut set: libc::cpu_set_t = mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
                    stats.cpu = Some(cpu);
                }
            }
            if self.cfg.realtime {
                let p = libc::sched_param {
                    sched_priority: self.cfg.priority,
                };
                if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 {
                    stats.scheduler = format!("SCHED_FIFO {}", self.cfg.priority);
                } else {
                    stats.scheduler = format!(
                        "SCHED_OTHER (SCHED_FIFO refused: {})",
                        io::Error::last_os_error()
                    );
                }
            }
        }
        STOP.store(false, Ordering::SeqCst);
        let old = install_signals();
        let mut rx = RxBatch::new(self.cfg.frame_buf);
        self.drain(&mut rx);
        let cpu0 = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        let result = self.main_loop(&mut rx, &mut pcap, &mut stats);
        restore_signals(old);
        // SAFETY: back to the normal scheduler for whatever the thread does next.
        unsafe {
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
        }
        stats.cpu_s = (clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - cpu0) as f64 / 1e9;
        let errs = result?;
        stats.timing = Timing::from_errors(errs);
        stats.left_in_flight = self.pipe.in_flight() as u64;
        stats.unclassified = self.pipe.stats.unclassified;
        stats.late_stage_arrivals = self.pipe.stats.late_stage_arrivals;
        stats.frames_in = self.pipe.stats.frames_in;
        stats.socket_drops = [socket_drops(&self.socks[0]), socket_drops(&self.socks[1])];
        pcap.finish()?;
        Ok(stats)
    }

    fn main_loop(
        &mut self,
        rx: &mut RxBatch,
        pcap: &mut PcapSink,
        stats: &mut RunStats,
    ) -> Result<Vec<i64>, String> {
        let t0 = stats.t0_ns;
        let stop = stats.stop_ns;
        let spin = self.cfg.spin_ns;
        let mut errs: Vec<i64> = Vec::with_capacity(1 << 20);
        let mut fates: Vec<Fate> = Vec::with_capacity(4 * BATCH);
        let mut note = String::with_capacity(256);
        let mut tx = TxBatch::new();
        let mut armed = 0u64;
        let mut events: [libc::epoll_event; 4] = [libc::epoll_event { events: 0, u64: 0 }; 4];
        loop {
            if STOP.load(Ordering::Relaxed) {
                stats.interrupted = true;
                break;
            }
            let now = now_ns();
            if now >= stop {
                break;
            }
            // Arrivals, each at its kernel timestamp; whatever fell due before it goes first.
            for side in [Side::A, Side::B] {
                loop {
                    let n = rx.recv(&self.socks[side.index()]);
                    if n == 0 {
                        break;
                    }
                    let got = now_ns();
                    for i in 0..n {
                        if rx.truncated(i) {
                            stats.oversize += 1;
                            continue;
                        }
                        let ts = match rx.timestamp(i) {
                            Some(ts) if ts <= got && got - ts < 1_000_000_000 => ts,
                            _ => {
                                stats.timestamp_fallbacks += 1;
                                got
                            }
                        };
                        let t = ts.saturating_sub(t0);
                        self.pipe.run_until(t, &mut fates);
                        let slot = self.pipe.arrive(t, side, rx.frame(i), &mut fates);
                        let p = self.pipe.packet(slot);
                        notes::write_in(&mut note, p.id, p.flow, p.path);
                        pcapng::packet(
                            pcap.buf(),
                            side.index() as u32,
                            ts,
                            p.frame(),
                            self.snaplen,
                            pcapng::INBOUND,
                            &note,
                        );
                    }
                    if n < BATCH {
                        break;
                    }
                }
            }
            let now = now_ns();
            self.pipe.run_until(now.saturating_sub(t0), &mut fates);
            self.dispatch(&mut fates, &mut tx, pcap, stats, &mut errs, &mut note, t0);
            stats.max_in_flight = stats.max_in_flight.max(self.pipe.in_flight() as u64);
            pcap.maybe_hand_over();

            // Sleep until the next event (a little before a departure, then spin).
            let wake = match self.pipe.next_due() {
                Some((t, departure)) => {
                    let due = t0 + t;
                    let now = now_ns();
                    if due <= now {
                        continue;
                    }
                    if departure && due - now <= spin {
                        stats.spins += 1;
                        while now_ns() < due {
                            std::hint::spin_loop();
                        }
                        continue;
                    }
                    if departure {
                        due - spin
                    } else {
                        due
                    }
                }
                None => stop,
            }
            .min(stop);
            if wake != armed {
                arm_timer(&self.timer, wake)?;
                armed = wake;
            }
            // SAFETY: epoll_wait fills at most 4 events.
            let n = unsafe { libc::epoll_wait(self.epoll.0, events.as_mut_ptr(), 4, -1) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("epoll_wait: {e}"));
            }
            for ev in &events[..n as usize] {
                if ev.u64 == 2 {
                    let mut buf = [0u8; 8];
                    // SAFETY: reads the 8-byte expiry count of the non-blocking timerfd.
                    unsafe { libc::read(self.timer.0, buf.as_mut_ptr() as *mut libc::c_void, 8) };
                    stats.timer_wakeups += 1;
                    armed = 0;
                }
            }
        }
        Ok(errs)
    }

    /// Sends the due departures (batched per side) and logs them and the drops.
    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &mut self,
        fates: &mut Vec<Fate>,
        tx: &mut TxBatch,
        pcap: &mut PcapSink,
        stats: &mut RunStats,
        errs: &mut Vec<i64>,
        note: &mut String,
        t0: u64,
    ) {
        if fates.is_empty() {
            return;
        }
        for f in fates.iter() {
            match f.kind {
                FateKind::Depart => {
                    let side = self.pipe.packet(f.slot).side_in.other();
                    tx.pending[side.index()].push(*f);
                }
                FateKind::Drop { stage, cause } => {
                    stats.drops += 1;
                    let p = self.pipe.packet(f.slot);
                    notes::write_drop(note, p.id, stage, cause.as_str(), f.at, p.exits());
                    pcapng::packet(
                        pcap.buf(),
                        p.side_in.index() as u32,
                        t0 + f.at,
                        p.frame(),
                        self.snaplen,
                        pcapng::INBOUND,
                        note,
                    );
                    self.pipe.release(f.slot);
                }
            }
        }
        fates.clear();
        for side in [Side::A, Side::B] {
            let s = side.index();
            if tx.pending[s].is_empty() {
                continue;
            }
            let sent_at = tx.send(s, &self.socks[s], &self.pipe);
            for (k, f) in tx.pending[s].iter().enumerate() {
                let p = self.pipe.packet(f.slot);
                if tx.ok[k] {
                    stats.frames_out[s] += 1;
                    errs.push(sent_at.saturating_sub(t0) as i64 - f.at as i64);
                    notes::write_out(note, p.id, f.at, p.exits());
                    pcapng::packet(
                        pcap.buf(),
                        s as u32,
                        sent_at,
                        p.frame(),
                        self.snaplen,
                        pcapng::OUTBOUND,
                        note,
                    );
                } else {
                    stats.tx_errors += 1;
                    notes::write_drop(note, p.id, u16::MAX, analyze::TX_ERROR, f.at, p.exits());
                    pcapng::packet(
                        pcap.buf(),
                        p.side_in.index() as u32,
                        sent_at,
                        p.frame(),
                        self.snaplen,
                        pcapng::INBOUND,
                        note,
                    );
                }
                self.pipe.release(f.slot);
            }
            tx.pending[s].clear();
        }
    }
}

/// Departures waiting to be sent, and the sendmmsg vectors.
struct TxBatch {
    pending: [Vec<Fate>; 2],
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    ok: Vec<bool>,
}

impl TxBatch {
    fn new() -> TxBatch {
        TxBatch {
            pending: [Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)],
            iov: Vec::with_capacity(BATCH),
            hdrs: Vec::with_capacity(BATCH),
            ok: Vec::with_capacity(BATCH),
        }
    }

    /// Sends `pending[s]` on `fd`; returns the time just before the first send call. `ok`
    /// says whether each frame was sent.
    fn send(&mut self, s: usize, fd: &Fd, pipe: &Pipeline) -> u64 {
        let pending = &self.pending[s];
        let n = pending.len();
        self.ok.clear();
        self.ok.resize(n, false);
        self.iov.clear();
        self.hdrs.clear();
        for f in pending {
            let p = pipe.packet(f.slot);
            self.iov.push(libc::iovec {
                iov_base: p.frame().as_ptr() as *mut libc::c_void,
                iov_len: p.frame().len(),
            });
        }
        for i in 0..n {
            // SAFETY: mmsghdr is plain data; all-zero is valid.
            let mut h: libc::mmsghdr = unsafe { mem::zeroed() };
            h.msg_hdr.msg_iov = &mut self.iov[i];
            h.msg_hdr.msg_iovlen = 1;
            self.hdrs.push(h);
        }
        let sent_at = now_ns();
        let mut done = 0;
        let mut retries = 0;
        while done < n {
            // SAFETY: the headers point at iovecs and frame buffers alive for the call.
            let r = unsafe {
                libc::sendmmsg(
                    fd.0,
                    self.hdrs[done..].as_mut_ptr(),
                    (n - done) as libc::c_uint,
                    0,
                )
            };
            if r > 0 {
                for k in done..done + r as usize {
                    self.ok[k] = true;
                }
                done += r as usize;
            } else {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if e.kind() == io::ErrorKind::WouldBlock && retries < 100 {
                    retries += 1;
                    std::hint::spin_loop();
                    continue;
                }
                // This frame cannot go out (e.g. the peer's backlog is full): skip it.
                done += 1;
            }
        }
        sent_at
    }
}

fn arm_timer(timer: &Fd, at_ns: u64) -> Result<(), String> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: arms our timerfd with an absolute CLOCK_REALTIME time.
    let r = unsafe {
        libc::timerfd_settime(
            timer.0,
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if r != 0 {
        return Err(os_err("timerfd_settime"));
    }
    Ok(())
}

type OldSignals = [libc::sigaction; 2];

fn install_signals() -> OldSignals {
    // SAFETY: installs a handler that only stores to an atomic; the old actions are kept.
    unsafe {
        let mut sa: libc::sigaction = mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: OldSignals = mem::zeroed();
        libc::sigaction(libc::SIGINT, &sa, &mut old[0]);
        libc::sigaction(libc::SIGTERM, &sa, &mut old[1]);
        old
    }
}

fn restore_signals(old: OldSignals) {
    // SAFETY: puts back the actions saved by install_signals.
    unsafe {
        libc::sigaction(libc::SIGINT, &old[0], std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &old[1], std::ptr::null_mut());
    }
}
