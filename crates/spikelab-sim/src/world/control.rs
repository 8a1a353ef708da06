//! Run control: running the event loop to the end, cancellation and progress, errors, and
//! streaming the trace tables out in chunks while the run goes.

use super::*;
use crate::table::Table;
use spikelab_core::SimTime;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Work items (heap events and same-instant deliveries) the loop accepts at one instant before
/// it declares simulated time stuck: a path with neither delay nor rate lets a bulk flow
/// exchange data and ACKs forever without time advancing.
pub const MAX_WORK_PER_INSTANT: u64 = 20_000_000;

/// A run that could not finish: simulated time stopped advancing, a trace outgrew its bound,
/// or the core hit a bug (a panic, caught and reported with where the run was).
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    /// The scenario field concerned, if one is (`sim.max_packets_rows`); empty otherwise.
    pub field: String,
    pub message: String,
    /// Simulated time when the run stopped.
    pub t: SimTime,
    /// Events processed by then.
    pub events: u64,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(
            f,
            "{} (at t = {} s, after {} events)",
            self.message,
            self.t.as_secs_f64(),
            self.events
        )
    }
}

impl std::error::Error for RunError {}

/// Shared with another thread while a run executes: progress out, cancellation in, and, when
/// streaming, finished chunks of the trace tables out.
#[derive(Debug, Default)]
pub struct RunControl {
    /// Simulated time reached, ns (updated every few thousand events).
    pub progress_ns: AtomicU64,
    /// Set to stop the run at the next check; the result is then marked `cancelled`.
    pub cancel: AtomicBool,
    /// Rows per streamed chunk of `timeseries` and `packets` (0: no streaming; the whole tables
    /// come with the result). Set before the run starts.
    pub stream_rows: AtomicU64,
    /// Chunks waiting for the consumer ([`RunControl::take_chunks`]), in table order.
    chunks: Mutex<Vec<Chunk>>,
    /// Signalled when the consumer took chunks (the run waits while too many are pending).
    taken: Condvar,
    /// Signalled when a chunk is handed over or the run ends (the consumer waits for either).
    ready: Condvar,
    /// The run has ended (completed, cancelled or failed): no more chunks will come.
    finished: AtomicBool,
}

/// A streamed piece of a trace table; the pieces of one table, concatenated in the order they
/// came, followed by the result's own (remaining) rows, are the table.
#[derive(Debug)]
pub struct Chunk {
    /// `"timeseries"` or `"packets"`.
    pub table: &'static str,
    pub data: Table,
}

/// Chunks a run may leave untaken before it waits for the consumer: the bound on the memory a
/// streamed trace holds (a few chunks of `stream_rows` rows).
pub const MAX_PENDING_CHUNKS: usize = 4;

impl RunControl {
    /// Takes the chunks streamed so far (oldest first) and lets a waiting run go on.
    pub fn take_chunks(&self) -> Vec<Chunk> {
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let out = std::mem::take(&mut *q);
        self.taken.notify_all();
        out
    }

    /// Waits up to `timeout` for a chunk (returning at once if one is pending or the run has
    /// ended), then takes the chunks as [`RunControl::take_chunks`] does. A consumer that
    /// waits here takes each chunk as soon as it is made, so the run never waits on a poll.
    pub fn wait_chunks(&self, timeout: std::time::Duration) -> Vec<Chunk> {
        let deadline = std::time::Instant::now() + timeout;
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        while q.is_empty() && !self.finished.load(Ordering::Acquire) {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            q = self
                .ready
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let out = std::mem::take(&mut *q);
        self.taken.notify_all();
        out
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Marks the run ended and wakes a waiting consumer.
    fn mark_finished(&self) {
        let _q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        self.finished.store(true, Ordering::Release);
        self.ready.notify_all();
    }

    /// Hands a chunk over; waits while [`MAX_PENDING_CHUNKS`] are untaken (unless cancelled).
    fn give(&self, chunk: Chunk) {
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        while q.len() >= MAX_PENDING_CHUNKS && !self.cancel.load(Ordering::Relaxed) {
            q = self
                .taken
                .wait_timeout(q, std::time::Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        q.push(chunk);
        self.ready.notify_all();
    }
}

/// Tables and counters of one run.
#[derive(Debug, Default)]
pub struct RunResult {
    pub runs: Table,
    pub timeseries: Table,
    pub packets: Table,
    /// Events processed.
    pub events: u64,
    /// The end of the run (the scenario's duration).
    pub end: SimTime,
    /// The run was stopped through [`RunControl::cancel`]; the tables are partial.
    pub cancelled: bool,
    /// The captures written (`sim.pcap`), complete under their final names.
    pub pcaps: Vec<std::path::PathBuf>,
}

impl World {
    /// Runs to the scenario's end. `ctl`, if given, receives progress and may cancel the run.
    ///
    /// A panic inside the core is caught and returned as a [`RunError`] carrying the simulated
    /// time and event count where it happened.
    pub fn run(mut self, ctl: Option<&RunControl>) -> Result<RunResult, RunError> {
        struct Finish<'a>(Option<&'a RunControl>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                if let Some(c) = self.0 {
                    c.mark_finished();
                }
            }
        }
        let _finish = Finish(ctl);
        let outcome = catch_unwind(AssertUnwindSafe(|| self.run_loop(ctl)));
        let stopped = |w: &World, field: String, message: String| RunError {
            field,
            message,
            t: w.now,
            events: w.events,
        };
        match outcome {
            Ok(Ok(cancelled)) => {
                if let (Some(c), false) = (ctl, cancelled) {
                    c.progress_ns.store(self.end.as_nanos(), Ordering::Relaxed);
                }
                // A cancelled run's captures are dropped (their temporary files removed).
                let pcaps = match (self.pcap.take(), cancelled) {
                    (Some(w), false) => w.commit().map_err(|e| {
                        stopped(
                            &self,
                            "sim.pcap".into(),
                            format!("could not finish the captures: {e}"),
                        )
                    })?,
                    _ => Vec::new(),
                };
                let mut r = self.finish();
                r.cancelled = cancelled;
                r.pcaps = pcaps;
                Ok(r)
            }
            Ok(Err((field, message))) => Err(stopped(&self, field, message)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown cause".into());
                Err(stopped(
                    &self,
                    String::new(),
                    format!("internal error in the simulator core: {what}; please report it with the scenario"),
                ))
            }
        }
    }

    /// The event loop; `Ok(true)` when cancelled, `Err((field, message))` when a bound was hit.
    fn run_loop(
        &mut self,
        ctl: Option<&RunControl>,
    ) -> std::result::Result<bool, (String, String)> {
        let mut instant = SimTime::ZERO;
        let mut work_at_instant: u64 = 0;
        let stream_rows = ctl.map_or(0, |c| c.stream_rows.load(Ordering::Relaxed)) as usize;
        while let Some(t) = self.io.queue.peek_time() {
            if t > self.end {
                break;
            }
            let (t, ev) = self.io.queue.pop().expect("peeked");
            self.now = t;
            self.events += 1;
            if self.test_panic {
                panic!("test-only failure requested by SPIKELAB_TEST_PANIC");
            }
            if t != instant {
                instant = t;
                work_at_instant = 0;
            }
            work_at_instant += 1;
            if self.events & 0x3FFF == 0 {
                if let Some(c) = ctl {
                    c.progress_ns.store(t.as_nanos(), Ordering::Relaxed);
                    if c.cancel.load(Ordering::Relaxed) {
                        return Ok(true);
                    }
                }
            }
            match ev {
                Ev::Start(c) => self.conn_start(c),
                Ev::Hop {
                    pkt,
                    from,
                    to,
                    cont,
                } => self.on_hop(pkt, from as usize, to as usize, cont),
                Ev::DropAt { pkt, stage, cause } => self.drop_pkt(pkt, stage as usize, cause),
                Ev::Held(path) => self.release_held(path),
                Ev::PathHead(path) => self.path_head(path),
                Ev::Timer(c, timer) => self.conn_timer(c, timer),
            }
            if work_at_instant > MAX_WORK_PER_INSTANT {
                return Err((
                    String::new(),
                    format!(
                        "simulated time stopped advancing: more than {MAX_WORK_PER_INSTANT} \
                         events in one instant; a path with neither a delay nor a rate stage \
                         lets a bulk flow send without limit (give its paths a rate or delay \
                         stage)"
                    ),
                ));
            }
            if let Some(f) = self.failure.take() {
                return Err(f);
            }
            if stream_rows > 0 {
                self.stream_chunks(ctl, stream_rows);
            }
        }
        Ok(false)
    }

    /// Hands full chunks of the trace tables to the consumer.
    fn stream_chunks(&mut self, ctl: Option<&RunControl>, rows: usize) {
        let Some(ctl) = ctl else { return };
        if self.io.series.t.len() >= rows {
            let data = series_table(
                std::mem::take(&mut self.io.series),
                Markers::default(),
                std::mem::take(&mut self.io.dest_series),
            );
            ctl.give(Chunk {
                table: "timeseries",
                data,
            });
        }
        if self.ptrace.len() >= rows {
            let data = self.packets_table();
            ctl.give(Chunk {
                table: "packets",
                data,
            });
        }
    }
}
