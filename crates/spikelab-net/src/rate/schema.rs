//! The `rate` stage's configuration in a scenario: its fields, defaults and checks, and the
//! stage it builds.

use super::*;
use crate::config::prelude::*;
use crate::config::{
    at_lines, read_csv_lines, resolve_path, schedule_points, ScheduleCell, RATE_TRACE_HEADER,
};
use crate::StallSchedule;

optional_fields! {
    /// A rate stage (`type = "rate"`): one of `rate`, `schedule`, `trace`, `switching`,
    /// `adapt`, and the queue (`queue` packets, default 1000, or `queue_bytes`).
    #[derive(Clone, Debug, Default, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RateConfig {
        rate: Rate,
        queue: i64,
        queue_bytes: Bytes,
        /// A piecewise-constant rate, `[[time_ms, rate], ...]`.
        schedule: Vec<Vec<ScheduleCell>>,
        /// Random switching between rates.
        switching: SwitchingConfig,
        /// A load-driven rate (bearer allocation by traffic volume).
        adapt: AdaptConfig,
        /// First stage of a path only: the queue is the sender's own (its interface queue in
        /// front of a flow-controlled modem); when full it refuses a packet back to its sender
        /// (which reduces its window, Linux `tcp_enter_cwr`) instead of dropping it.
        backpressure: bool,
        /// A `time_ms,rate_bps` CSV file (relative to the scenario's directory).
        trace: String,
    }
    computed {
        /// The `(time, bits per second)` points of `schedule` or `trace`, checked.
        rate_points: Vec<(SimTime, u64)>,
    }
}

impl StageSchema for RateConfig {
    const TYPE: &'static str = "rate";
    const FIELDS: &'static [&'static str] = &[
        "rate",
        "schedule",
        "trace",
        "switching",
        "adapt",
        "queue",
        "queue_bytes",
        "backpressure",
    ];

    fn resolve(&mut self, at: &str, ctx: &ResolveCtx) -> Result<()> {
        let one_of = ["rate", "schedule", "trace", "switching", "adapt"];
        exactly_one(&self.set_fields(), &one_of, (at, Self::TYPE), Some("rate"))?;
        if let Some(a) = &self.adapt {
            a.params(at)?;
        }
        if let Some(rows) = &self.schedule {
            self.rate_points = Some(schedule_points(rows, &format!("{at}.schedule"))?);
        }
        if let Some(file) = &self.trace {
            let full = resolve_path(ctx.base_dir, file);
            let field = format!("{at}.trace");
            let (rows, lines) = read_csv_lines(&full, &field, RATE_TRACE_HEADER)?;
            let cells: Vec<Vec<ScheduleCell>> = rows
                .iter()
                .map(|r| r.iter().map(|v| ScheduleCell::Num(*v)).collect())
                .collect();
            self.rate_points = Some(at_lines(schedule_points(&cells, &field), &full, &lines)?);
            self.trace = Some(full.to_string_lossy().into_owned());
        }
        if let Some(sw) = &self.switching {
            check(
                !sw.rates.is_empty(),
                format!("{at}.switching.rates"),
                "needs at least one rate",
            )?;
            check(
                sw.dwell.0 >= SimDuration::from_millis(1),
                format!("{at}.switching.dwell"),
                format!(
                    "must be at least 1 ms (a mean dwell time), got {}",
                    sw.dwell
                ),
            )?;
        }
        check(
            !(self.queue.is_some() && self.queue_bytes.is_some()),
            format!("{at}.queue_bytes"),
            "give queue (packets) or queue_bytes, not both",
        )?;
        if let Some(q) = self.queue {
            check(
                q >= 1,
                format!("{at}.queue"),
                format!("must be >= 1 packet, got {q}"),
            )?;
            check(
                q <= 1_000_000_000,
                format!("{at}.queue"),
                format!("must be at most 1000000000 packets, got {q}"),
            )?;
        }
        if let Some(b) = self.queue_bytes {
            check(
                b.0 >= 1,
                format!("{at}.queue_bytes"),
                format!("must be >= 1 byte, got {}", b.0),
            )?;
        }
        // Whether `adapt.up_bytes` is reachable depends on the stages after this one (a
        // stall's held data counts): checked with the path (`check_in_path`).
        if self.queue.is_none() && self.queue_bytes.is_none() {
            self.queue = Some(1000);
        }
        Ok(())
    }

    fn check_in_path(&self, at: &str, ctx: &PathCtx) -> Result<()> {
        check_up_reachable_bytes(self, ctx, at)
    }

    fn build(&self, ctx: &PathCtx) -> Stage {
        let limit = match (self.queue, self.queue_bytes) {
            (_, Some(b)) => QueueLimit::Bytes(b.0),
            (Some(q), None) => QueueLimit::Packets(q as u32),
            (None, None) => QueueLimit::Packets(1000),
        };
        let rng = ctx.rng();
        if let Some(points) = &self.rate_points {
            Stage::Rate(RateStage::scheduled(
                RateSchedule::table(points.clone()),
                limit,
            ))
        } else if let Some(a) = &self.adapt {
            let mut r = RateStage::adaptive(a.params("stage").expect("validated"), limit);
            // A stall stage later in the path: what it holds still counts as buffered.
            let stall = ctx.later().find_map(|(j, st)| match st {
                StageConfig::Stall(c) => Some((j, c)),
                _ => None,
            });
            if let Some((j, st)) = stall {
                r.count_stalled(StallSchedule::new(
                    st.params("stage").expect("validated"),
                    ctx.rng_of(j),
                ));
            }
            Stage::Rate(r)
        } else if let Some(sw) = &self.switching {
            let rng = match sw.seed {
                Some(s) => Rng::stream(s, "rate/switching"),
                None => rng,
            };
            let rates = sw.rates.iter().map(|r| r.0).collect();
            Stage::Rate(RateStage::scheduled(
                RateSchedule::switching(Switching::new(rates, sw.dwell.0, rng)),
                limit,
            ))
        } else {
            Stage::Rate(RateStage::new(self.rate.expect("validated").0, limit))
        }
    }
}

impl RateConfig {
    /// With `adapt` behind a queue counted in packets: checks that the rate can step up
    /// for packets of at most `largest` bytes (`check_up_reachable_packets`), unless a
    /// stall after it in the path holds what it sends.
    pub fn check_packets_reachable(&self, at: &str, ctx: &PathCtx, largest: u64) -> Result<()> {
        if stall_follows(ctx) {
            return Ok(()); // what the stall holds counts: any up_bytes is reachable
        }
        let (Some(a), Some(q)) = (&self.adapt, self.queue) else {
            return Ok(());
        };
        check_up_reachable_packets(
            &a.params(at)?,
            q.max(0) as u64,
            largest,
            format!("{at}.adapt.up_bytes"),
        )
    }
}

/// Random switching between rates (`switching = { rates = [...], dwell = "5s", seed = 1 }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchingConfig {
    /// The rates switched between; the first is the rate at time 0.
    pub rates: Vec<Rate>,
    /// Mean dwell time in a rate (exponentially distributed).
    pub dwell: Duration,
    /// Seed of the switching (default: the run's seed, so each replication switches
    /// differently; a fixed seed gives every run the same switching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A load-driven rate (`adapt = { rates = [...], up_bytes = ..., ... }`): an R99 RNC's
/// traffic-volume bearer allocation (3GPP TS 25.331 events 4a / 4b; docs/models.md, "UMTS
/// bearer").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptConfig {
    /// The levels, ascending (e.g. a 128 and a 384 kbit/s bearer at IP level).
    pub rates: Vec<Rate>,
    /// Index of the level at time 0 (default 0, the lowest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<i64>,
    /// Up one level when the buffer payload stays above this ...
    pub up_bytes: Bytes,
    /// ... for this long (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_after: Option<Duration>,
    /// Down one level when the buffer payload stays at or below this (default 0: empty) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_bytes: Option<Bytes>,
    /// ... for this long.
    pub down_after: Duration,
    /// From a decision to the new rate (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// The queue limit scales with the level's rate over the top rate (a buffer sized in time;
    /// default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_queue: Option<bool>,
}

/// The smallest `adapt.up_bytes`: one 1500-byte packet.
pub const MIN_ADAPT_UP_BYTES: u64 = 1500;

impl AdaptConfig {
    /// The stage's parameters, checked; errors name `{at}.adapt.<field>`.
    pub fn params(&self, at: &str) -> Result<AdaptParams> {
        let f = |k: &str| format!("{at}.adapt.{k}");
        check(
            !self.rates.is_empty(),
            f("rates"),
            "needs at least one rate",
        )?;
        for (i, r) in self.rates.iter().enumerate() {
            check(r.0 > 0, f("rates"), format!("rate {i} must be > 0"))?;
            if i > 0 {
                check(
                    r.0 > self.rates[i - 1].0,
                    f("rates"),
                    "the rates must be ascending (lowest level first)",
                )?;
            }
        }
        let start = self.start.unwrap_or(0);
        check(
            start >= 0 && (start as usize) < self.rates.len(),
            f("start"),
            format!(
                "must index a rate (0 to {}), got {start}",
                self.rates.len() - 1
            ),
        )?;
        check(
            self.up_bytes.0 >= MIN_ADAPT_UP_BYTES,
            f("up_bytes"),
            format!(
                "must be at least one packet ({MIN_ADAPT_UP_BYTES} bytes), got {} bytes",
                self.up_bytes.0
            ),
        )?;
        let down = self.down_bytes.map_or(0, |b| b.0);
        check(
            down < self.up_bytes.0,
            f("down_bytes"),
            format!(
                "must be below up_bytes ({} bytes), got {down} bytes",
                self.up_bytes.0
            ),
        )?;
        Ok(AdaptParams {
            rates: self.rates.iter().map(|r| r.0).collect(),
            start: start as usize,
            up_bytes: self.up_bytes.0,
            up_after: self.up_after.map_or(SimDuration::ZERO, |d| d.0),
            down_bytes: down,
            down_after: self.down_after.0,
            delay: self.delay.map_or(SimDuration::ZERO, |d| d.0),
            scale_queue: self.scale_queue.unwrap_or(false),
        })
    }
}

/// Checks that a load-driven rate stage with a byte queue can step up (`at` is its name). A stall stage with stalls after it in the path makes
/// any `up_bytes` reachable: what the stall holds counts as buffered
/// ([`spikelab_net::RateStage::count_stalled`]), and a stall holds whatever the link sends.
fn check_up_reachable_bytes(st: &RateConfig, ctx: &PathCtx, at: &str) -> Result<()> {
    let (Some(a), Some(b)) = (&st.adapt, st.queue_bytes) else {
        return Ok(());
    };
    if stall_follows(ctx) {
        return Ok(());
    }
    check_up_reachable(
        &a.params(at)?,
        b.0,
        format!("{at}.adapt.up_bytes"),
        [
            "the queue",
            "the lowest rate",
            "queue_bytes scaled by scale_queue",
            "the rate",
        ],
    )
}

/// A stall stage that stalls (a positive `stall_rate`) comes after this one.
pub fn stall_follows(ctx: &PathCtx) -> bool {
    ctx.later()
        .any(|(_, s)| matches!(s, StageConfig::Stall(c) if c.stall_rate.unwrap_or(0.0) > 0.0))
}

/// Checks that a load-driven rate can step up: `up_bytes` below what its queue of
/// `queue_bytes` holds at the lowest level (scaled to that level's rate with `scale_queue`),
/// or event 4a never fires. `words`: the queue, the lowest level, the scaling switch and what
/// steps up, as the caller's table names them (a stage's or a preset's).
pub fn check_up_reachable(
    p: &AdaptParams,
    queue_bytes: u64,
    field: String,
    words: [&str; 4],
) -> Result<()> {
    let [queue, lowest, scaled_by, what] = words;
    let cap = if p.scale_queue {
        let top = *p.rates.last().expect("validated") as u128;
        ((queue_bytes as u128 * p.rates[0] as u128 / top) as u64).max(1)
    } else {
        queue_bytes
    };
    let scaled = if p.scale_queue {
        format!(", {scaled_by}")
    } else {
        String::new()
    };
    check(
        p.up_bytes < cap,
        field,
        format!(
            "must be below what {queue} holds at {lowest} ({cap} bytes{scaled}), or {what} \
             never steps up; got {} bytes",
            p.up_bytes
        ),
    )
}

/// Checks that a load-driven rate behind a queue of `queue` packets can step up: `up_bytes`
/// below what that many packets of at most `largest` bytes (the largest packet a flow sends on
/// the path) hold at the lowest level (the packet limit scaled to that level's rate with
/// `scale_queue`, as the stage scales it), or event 4a never fires.
pub fn check_up_reachable_packets(
    p: &AdaptParams,
    queue: u64,
    largest: u64,
    field: String,
) -> Result<()> {
    let packets = if p.scale_queue {
        let top = *p.rates.last().expect("validated") as u128;
        ((queue as u128 * p.rates[0] as u128 / top) as u64).max(1)
    } else {
        queue
    };
    let cap = packets.saturating_mul(largest);
    let scaled = if p.scale_queue {
        ", queue scaled by scale_queue,"
    } else {
        ""
    };
    let plural = if packets == 1 { "" } else { "s" };
    check(
        p.up_bytes < cap,
        field,
        format!(
            "must be below what the queue holds at the lowest rate ({packets} packet{plural}\
             {scaled} of at most {largest} bytes, the largest packet the flows send on this \
             path: {cap} bytes), or the rate never steps up; got {} bytes",
            p.up_bytes
        ),
    )
}
