//! `kyber`: Linux's token-based latency scheduler (`block/kyber-iosched.c`, 4.18+).
//!
//! Requests are sorted into domains (read, write, discard, other) that each hold a pool
//! of dispatch tokens; domains take turns in batches. Completion latencies feed per-domain
//! histograms with 8 buckets of target/4; a timer about 100 ms after completions checks
//! congestion: if any domain's p90 I/O latency misses its target, every domain's depth is
//! rescaled by (p99 bucket + 1) / 4, so domains meeting their target are throttled and
//! domains missing it grow. As the kernel's `calculate_percentile`, a percentile needs
//! 500 samples or 1 s since the timer first looked at the domain's samples (one wait for
//! both kinds), and giving one clears that kind's samples.

use crate::params::{ParamKind, ParamSpec, Params};
use crate::registry::{CgroupModel, PolicyInfo};
use crate::scheduler::{Completion, DeviceView, HostCost, Inserted, PolicyReport, Scheduler, TimeSeries};
use crate::{Nanos, Op, Request};
use std::collections::VecDeque;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "read_lat",
        kind: ParamKind::Duration { min: Nanos(1), max: Nanos::from_secs(10) },
        default: "2ms",
        help: "read latency target (sysfs read_lat_nsec)",
    },
    ParamSpec {
        name: "write_lat",
        kind: ParamKind::Duration { min: Nanos(1), max: Nanos::from_secs(10) },
        default: "10ms",
        help: "write latency target (sysfs write_lat_nsec)",
    },
];

pub static INFO: PolicyInfo = PolicyInfo {
    id: "kyber",
    summary: "Linux kyber: per-domain token depths rescaled from latency percentiles",
    source: "Linux block/kyber-iosched.c (4.18+ histogram version)",
    notes: "One FIFO per domain (Linux keeps one per CPU context); the discard target is 5 s; \
            the async-depth limit on scheduler tags is not modelled. Depths start at the \
            maximum (256/128/64/16).",
    params: PARAMS,
    host_cost: HostCost { dispatch: Nanos(250), complete: Nanos(250) },
    example: "kyber",
    validate: None,
    check_cgroups: None,
    cgroups: CgroupModel::Ignored,
    build: |p: &Params| Box::new(Kyber::from_params(p)),
};

const DOMAINS: usize = 4;
const READ: usize = 0;
const WRITE: usize = 1;
const DISCARD: usize = 2;
const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
const BATCH: [u32; DOMAINS] = [16, 8, 1, 1];
const BUCKETS: usize = 8;
const GOOD_BUCKETS: usize = 4;
const TIMER_DELAY: Nanos = Nanos::from_ms(100);
const MIN_SAMPLES: u64 = 500;
const MIN_WINDOW: Nanos = Nanos::from_secs(1);

fn domain(rq: &Request) -> usize {
    match rq.op {
        Op::Read => READ,
        Op::Write => WRITE,
        Op::Discard => DISCARD,
        Op::Flush => 3,
    }
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// [total latency, I/O latency] x buckets
    buckets: [[u64; BUCKETS]; 2],
    /// Until when a percentile waits for 500 samples; set by the first look at the
    /// domain's samples and shared by both kinds, as the kernel's `latency_timeout`.
    latency_timeout: Option<Nanos>,
}

impl Histogram {
    /// `calculate_percentile`: the bucket holding the `pct` percentile of `kind`, once
    /// there are 500 samples or 1 s passed since the first look at them; a percentile
    /// given clears that kind's buckets and the wait.
    fn percentile(&mut self, kind: usize, pct: u64, now: Nanos) -> Option<usize> {
        let n: u64 = self.buckets[kind].iter().sum();
        if n == 0 {
            return None;
        }
        let timeout = *self.latency_timeout.get_or_insert(now + MIN_WINDOW);
        if n < MIN_SAMPLES && timeout > now {
            return None;
        }
        self.latency_timeout = None;
        let target = (n * pct).div_ceil(100);
        let mut acc = 0;
        let mut bucket = BUCKETS - 1;
        for (i, c) in self.buckets[kind].iter().enumerate() {
            acc += c;
            if acc >= target {
                bucket = i;
                break;
            }
        }
        self.buckets[kind] = [0; BUCKETS];
        Some(bucket)
    }
}

#[derive(Debug)]
pub struct Kyber {
    targets: [Nanos; DOMAINS],
    queues: [VecDeque<Request>; DOMAINS],
    depth: [u32; DOMAINS],
    in_use: [u32; DOMAINS],
    cur_domain: usize,
    batching: u32,
    hist: [Histogram; DOMAINS],
    remembered_p99: [Option<usize>; DOMAINS],
    timer: Option<Nanos>,
    last_now: Nanos,
    depth_series: [TimeSeries; 2],
    resizes: u64,
}

impl Kyber {
    pub fn from_params(p: &Params) -> Kyber {
        Kyber {
            targets: [p.duration("read_lat"), p.duration("write_lat"), Nanos::from_secs(5), Nanos::ZERO],
            queues: Default::default(),
            depth: MAX_DEPTH,
            in_use: [0; DOMAINS],
            cur_domain: READ,
            batching: 0,
            hist: Default::default(),
            remembered_p99: [None; DOMAINS],
            timer: None,
            last_now: Nanos::ZERO,
            depth_series: [TimeSeries::new("read_depth", "tokens"), TimeSeries::new("write_depth", "tokens")],
            resizes: 0,
        }
    }

    /// The current token depth of (read, write).
    pub fn depths(&self) -> (u32, u32) {
        (self.depth[READ], self.depth[WRITE])
    }

    fn bucket(&self, d: usize, latency: Nanos) -> usize {
        let width = (self.targets[d].0 >> 2).max(1);
        if latency.0 == 0 {
            0
        } else {
            (((latency.0 - 1) / width) as usize).min(BUCKETS - 1)
        }
    }

    /// `kyber_timer_fn`: congestion check and depth rescaling.
    fn on_timer(&mut self, now: Nanos) {
        let measured = [READ, WRITE, DISCARD];
        // every domain is looked at (a look may clear its samples), not just up to the first bad one
        let mut bad = false;
        for &d in &measured {
            bad |= self.hist[d].percentile(1, 90, now).is_some_and(|b| b >= GOOD_BUCKETS);
        }
        for &d in &measured {
            let mut p99 = self.hist[d].percentile(0, 99, now);
            if bad {
                if p99.is_none() {
                    p99 = self.remembered_p99[d];
                }
                self.remembered_p99[d] = None;
            } else if p99.is_some() {
                self.remembered_p99[d] = p99;
            }
            if let Some(b) = p99 {
                if bad || b >= GOOD_BUCKETS {
                    let new = (self.depth[d] * (b as u32 + 1)) >> 2;
                    self.depth[d] = new.clamp(1, MAX_DEPTH[d]);
                    self.resizes += 1;
                }
            }
        }
        for (i, d) in [READ, WRITE].iter().enumerate() {
            self.depth_series[i].push(now, f64::from(self.depth[*d]));
        }
    }

    fn try_domain(&mut self, d: usize) -> Option<Request> {
        if self.queues[d].is_empty() || self.in_use[d] >= self.depth[d] {
            return None;
        }
        self.in_use[d] += 1;
        self.queues[d].pop_front()
    }
}

impl Scheduler for Kyber {
    fn id(&self) -> &'static str {
        "kyber"
    }

    fn insert(&mut self, rq: Request, now: Nanos) -> Inserted {
        self.last_now = self.last_now.max(now);
        self.queues[domain(&rq)].push_back(rq);
        Inserted::Queued
    }

    fn dispatch(&mut self, now: Nanos, _device: DeviceView) -> Option<Request> {
        self.last_now = self.last_now.max(now);
        if self.timer.is_some_and(|t| now >= t) {
            self.timer = None;
            self.on_timer(now);
        }
        if self.batching < BATCH[self.cur_domain] {
            if let Some(rq) = self.try_domain(self.cur_domain) {
                self.batching += 1;
                return Some(rq);
            }
        }
        self.batching = 0;
        for step in 1..=DOMAINS {
            let d = (self.cur_domain + step) % DOMAINS;
            if let Some(rq) = self.try_domain(d) {
                self.cur_domain = d;
                self.batching = 1;
                return Some(rq);
            }
        }
        None
    }

    fn complete(&mut self, done: &Completion<'_>) {
        let d = domain(done.rq);
        if done.dispatched_by_policy {
            self.in_use[d] = self.in_use[d].saturating_sub(1);
        }
        if d == 3 {
            return;
        }
        let total = self.bucket(d, done.total_latency());
        let io = self.bucket(d, done.io_latency());
        let h = &mut self.hist[d];
        h.buckets[0][total] += 1;
        h.buckets[1][io] += 1;
        let due = done.now + TIMER_DELAY;
        self.timer = Some(self.timer.map_or(due, |t| t.min(due)));
    }

    fn requeue(&mut self, rq: Request, _now: Nanos) {
        let d = domain(&rq);
        self.in_use[d] = self.in_use[d].saturating_sub(1);
        self.queues[d].push_front(rq);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.timer
    }

    fn queued(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    fn report(&self) -> PolicyReport {
        PolicyReport::default()
            .counter("read_depth", f64::from(self.depth[READ]))
            .counter("write_depth", f64::from(self.depth[WRITE]))
            .counter("resizes", self.resizes as f64)
            .with_series(self.depth_series[0].clone())
            .with_series(self.depth_series[1].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::testkit::Harness;

    fn kyber(params: &str) -> Kyber {
        Kyber::from_params(&Params::parse("kyber", PARAMS, params).unwrap())
    }

    #[test]
    fn domains_take_turns_in_batches() {
        let mut h = Harness::new(Box::new(kyber("")), 1024);
        for i in 0..40 {
            h.insert(Request::read(i, i * 4096));
            h.insert(Request::write(100 + i, i * 4096));
        }
        let order: Vec<bool> = h.dispatch_all().iter().take(48).map(Request::is_read).collect();
        // reads in batches of 16, writes in batches of 8
        assert!(order[..16].iter().all(|&r| r));
        assert!(order[16..24].iter().all(|&r| !r));
        assert!(order[24..40].iter().all(|&r| r));
    }

    fn feed(k: &mut Kyber, d_op: Op, latency: Nanos, n: u64, now: Nanos) {
        for i in 0..n {
            let mut rq = if d_op == Op::Read { Request::read(i, 0) } else { Request::write(i, 0) };
            rq.submit_time = now - latency;
            k.complete(&Completion { rq: &rq, dispatched_at: now - latency, now, dispatched_by_policy: false });
        }
    }

    #[test]
    fn write_depth_shrinks_when_reads_miss_and_grows_when_writes_miss() {
        let mut k = kyber("read_lat=100us,write_lat=10ms");
        let now = Nanos::from_secs(1);
        // reads far over target (congestion), writes well within theirs
        feed(&mut k, Op::Read, Nanos::from_us(400), 600, now);
        feed(&mut k, Op::Write, Nanos::from_ms(1), 600, now);
        let t = k.next_wakeup().unwrap();
        let view = DeviceView { inflight: 0, queue_depth: 1024 };
        k.dispatch(t, view);
        let (read, write) = k.depths();
        assert!(write < 128, "write depth shrinks: {write}");
        assert_eq!(read, 256, "the missing domain is not throttled (it would grow)");
        // later: no read traffic, writes now miss their target -> write depth grows back
        let now = t + Nanos::from_secs(2);
        feed(&mut k, Op::Write, Nanos::from_ms(15), 600, now);
        let t2 = k.next_wakeup().unwrap();
        k.dispatch(t2, view);
        assert!(k.depths().1 > write, "write depth grows back: {} -> {}", write, k.depths().1);
    }

    /// Under 500 samples a percentile waits 1 s from the timer's first look at them, and
    /// the two kinds share that wait (kernel `calculate_percentile`): each time the p90
    /// that finds congestion takes the wait, the p99 starts a new one, so at a low rate the
    /// depths move only once the p99's samples, kept meanwhile, reach 500.
    #[test]
    fn few_samples_wait_a_second_from_the_first_look_and_the_kinds_share_the_wait() {
        let mut k = kyber("read_lat=100us,write_lat=10ms");
        let view = DeviceView { inflight: 0, queue_depth: 1024 };
        // 200 reads at 4x their target (congestion), 200 writes well within theirs
        let feed_both = |k: &mut Kyber, at_ms: u64| {
            feed(k, Op::Read, Nanos::from_us(400), 200, Nanos::from_ms(at_ms));
            feed(k, Op::Write, Nanos::from_ms(3), 200, Nanos::from_ms(at_ms));
        };
        let tick = |k: &mut Kyber, at_ms: u64| {
            k.timer = Some(Nanos::from_ms(at_ms));
            k.dispatch(Nanos::from_ms(at_ms), view);
            k.depths().1
        };
        feed_both(&mut k, 100);
        assert_eq!(tick(&mut k, 200), 128, "the first look starts the wait");
        assert_eq!(tick(&mut k, 1_300), 128, "the p90 sees congestion; the p99 waits anew");
        feed_both(&mut k, 1_350);
        assert_eq!(tick(&mut k, 2_400), 128, "again: 400 samples for the p99");
        assert_eq!(k.resizes, 0);
        feed_both(&mut k, 2_450);
        assert_eq!(tick(&mut k, 3_500), 64, "600 samples: the write p99 (bucket 1) halves the depth");
    }

    #[test]
    fn tokens_limit_a_domain() {
        let mut k = kyber("");
        k.depth[WRITE] = 2;
        let mut h = Harness::new(Box::new(k), 1024);
        for i in 0..10 {
            h.insert(Request::write(i, i * 4096));
        }
        assert_eq!(h.dispatch_all().len(), 2);
        h.complete_oldest();
        assert_eq!(h.dispatch_all().len(), 1);
    }
}
