//! Rate pacing of one clone (`rate`, `rate_iops`, `rate_process`), as fio's
//! usec_for_io and rate_ddir pace a job.

use crate::spec::{JobSpec, RateProcess};
use nvsched_core::{Nanos, Op, SimRng};

/// When each direction of a clone may issue next. fio paces by bytes: a direction may move
/// `rate` bytes per second, or `rate_iops` times its smallest block (so under `rate_iops`
/// a 16 KiB I/O of `bssplit=4k/50:16k/50` takes four 4 KiB turns: fio 3.33 moves 409,600
/// bytes in 45 reads in 1 s at `rate_iops=100`). The next I/O is due when the bytes
/// issued so far would have taken that long, counted in whole microseconds from the
/// start, so no rounding adds up over a run (`rate_iops=300` issues 300 reads in 1 s,
/// the 301st falling due as the runtime ends). `rate_process=poisson` adds an
/// exponential gap per I/O instead, of mean one smallest block's time.
#[derive(Debug)]
pub(super) struct Pacer {
    /// Bytes per second per direction (read, write, trim); 0: not paced.
    bps: [u64; 3],
    min_bs: [u64; 3],
    poisson: bool,
    /// Where each direction's pacing counts from, in nanoseconds on the run's clock: the
    /// start, moved by the pauses that `rate_ignore_thinktime` leaves out (possibly
    /// before the run's start, where a pause pulls a far turn in).
    origin_ns: [i128; 3],
    issued_bytes: [u64; 3],
    /// `rate_process=poisson`: the gaps drawn so far, added up (fio's last_usec).
    poisson_us: [u64; 3],
    next: [Nanos; 3],
    rng: SimRng,
    /// Whether reads and writes each have a share of the mix (`rwmixread` not 100 or 0):
    /// only then may pacing take one for the other.
    has_share: [bool; 2],
}

impl Pacer {
    /// The clone's pacer, or None when no direction is paced.
    pub(super) fn new(spec: &JobSpec, rng: SimRng) -> Option<Box<Pacer>> {
        let min_bs: [u64; 3] = std::array::from_fn(|d| u64::from(spec.bs[d].min()).max(1));
        let bps: [u64; 3] = std::array::from_fn(|d| match spec.rate_bps[d] {
            0 => spec.rate_iops[d].saturating_mul(min_bs[d]),
            bytes => bytes,
        });
        bps.iter().any(|&b| b > 0).then(|| {
            Box::new(Pacer {
                bps,
                min_bs,
                poisson: spec.rate_process == RateProcess::Poisson,
                origin_ns: [0; 3],
                issued_bytes: [0; 3],
                poisson_us: [0; 3],
                next: [Nanos::ZERO; 3],
                rng,
                has_share: [spec.rwmix_read_pct > 0, spec.rwmix_read_pct < 100],
            })
        })
    }

    /// Pacing starts `now`: every direction may issue at once.
    pub(super) fn start(&mut self, now: Nanos) {
        self.origin_ns = [i128::from(now.0); 3];
        self.next = [now; 3];
    }

    /// The direction table index `op` is paced under, if it is paced (flushes never are).
    fn paced_index(&self, op: Op) -> Option<usize> {
        let d = op.index();
        (d < 3 && self.bps[d] > 0).then_some(d)
    }

    /// When `op` may go next, if its direction is paced.
    pub(super) fn due(&self, op: Op) -> Option<Nanos> {
        self.paced_index(op).map(|d| self.next[d])
    }

    /// `len_bytes` of `op` went out: its direction's next turn moves on.
    pub(super) fn issued(&mut self, op: Op, len_bytes: u32) {
        let Some(d) = self.paced_index(op) else { return };
        self.issued_bytes[d] = self.issued_bytes[d].saturating_add(u64::from(len_bytes));
        let since_origin_us = if self.poisson {
            // fio: a gap of mean 1/iops per I/O, iops counted at the smallest block
            let iops = (self.bps[d] / self.min_bs[d]).max(1);
            let mean_us = (1_000_000 / iops) as f64;
            self.poisson_us[d] += (mean_us * self.rng.exponential(1.0)) as u64;
            self.poisson_us[d]
        } else {
            // u128: a rate of terabytes a second must not overflow the remainder's product
            let (bytes, bps) = (u128::from(self.issued_bytes[d]), u128::from(self.bps[d]));
            u64::try_from((bytes / bps) * 1_000_000 + (bytes % bps) * 1_000_000 / bps).unwrap_or(u64::MAX)
        };
        let next_ns = self.origin_ns[d].saturating_add(i128::from(since_origin_us) * 1_000);
        self.next[d] = Nanos(u64::try_from(next_ns.max(0)).unwrap_or(u64::MAX));
    }

    /// `rate_ignore_thinktime`: a pause of `pause` ending at `until` does not count
    /// against the pace; each direction's next turn moves on by the pause, and is at
    /// `until` at the latest, so the first I/O after it goes at once.
    pub(super) fn skip_pause(&mut self, pause: Nanos, until: Nanos) {
        for d in 0..3 {
            let moved = (self.next[d] + pause).min(until);
            self.origin_ns[d] += i128::from(moved.0) - i128::from(self.next[d].0);
            self.next[d] = moved;
        }
    }

    /// How the pace steers a mixed read/write job's drawn direction at `now`.
    pub(super) fn steer(&self, now: Nanos) -> RateSteer {
        RateSteer { next: [self.next[0], self.next[1]], now, has_share: self.has_share }
    }
}

/// fio's rate_ddir for a job that mixes reads and writes under `rate`/`rate_iops`: a drawn
/// direction that is ahead of its pace gives way to the other where that one is due (a
/// direction without a rate always is) or due sooner, provided the other has a share of
/// the mix. So each direction keeps its own rate (fio 3.33, `rw=randrw rate_iops=100,10`
/// for 2 s: 200 reads and 20 writes), where waiting for the drawn one would hold the
/// other to its pace.
#[derive(Clone, Copy, Debug)]
pub(super) struct RateSteer {
    /// When each direction (read, write) may go next.
    next: [Nanos; 2],
    now: Nanos,
    /// Whether each direction has a share of the mix (`rwmixread` not 0 or 100).
    has_share: [bool; 2],
}

impl RateSteer {
    pub(super) fn direction(&self, drawn: Op) -> Op {
        let (d, other) = match drawn {
            Op::Read => (0, Op::Write),
            Op::Write => (1, Op::Read),
            _ => return drawn,
        };
        let o = 1 - d;
        if self.next[d] <= self.now || !self.has_share[o] {
            return drawn;
        }
        if self.next[o] <= self.now || self.next[o] < self.next[d] {
            other
        } else {
            drawn
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobfile::tests::env;
    use crate::spec::{parse_job_str, ParseOptions};
    use std::path::Path;

    fn pacer(options: &str) -> Option<Box<Pacer>> {
        let text = format!("[a]\nrw=randrw\nsize=1m\n{options}\n");
        let jobs = parse_job_str(&text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs;
        let mut p = Pacer::new(&jobs[0], SimRng::stream(1, 4))?;
        p.start(Nanos::ZERO);
        Some(p)
    }

    #[test]
    fn pacing_counts_bytes_at_the_smallest_block_without_drift() {
        assert!(pacer("bs=4k").is_none(), "nothing to pace");
        // rate_iops=300: 300 reads of 4 KiB take exactly 1 s (1/300 s per read, rounded
        // each time, would let a 301st in before the second is up)
        let mut p = pacer("bs=4k\nrate_iops=300").unwrap();
        for _ in 0..300 {
            p.issued(Op::Read, 4096);
        }
        assert_eq!(p.due(Op::Read), Some(Nanos::from_secs(1)));
        assert_eq!(p.due(Op::Flush), None, "flushes are never paced");
        // under rate_iops a 16 KiB I/O of a 4-16 KiB job takes four 4 KiB turns, as fio's
        let mut p = pacer("bssplit=4k/50:16k/50\nrate_iops=100").unwrap();
        p.issued(Op::Read, 16384);
        assert_eq!(p.due(Op::Read), Some(Nanos::from_ms(40)));
        // rate in bytes: to the whole microsecond, as fio's usec_for_io
        let mut p = pacer("bs=4k\nrate=3000").unwrap();
        p.issued(Op::Write, 4096);
        assert_eq!(p.due(Op::Write), Some(Nanos::from_us(1_365_333)));
        assert_eq!(p.due(Op::Read), Some(Nanos::ZERO), "rate=N paces reads too, each direction on its own");
        // a rate of exabytes a second paces nothing, without overflowing
        let mut p = pacer("bs=1m\nrate_iops=9000000000000").unwrap();
        p.issued(Op::Read, 1 << 20);
        assert_eq!(p.due(Op::Read), Some(Nanos::ZERO));
        let mut p = pacer("bs=4k\nrate=3000").unwrap();
        p.issued(Op::Write, 4096);
        // rate_ignore_thinktime: the next turn moves on by the pause, at most to its end
        p.skip_pause(Nanos::from_secs(1), Nanos::from_secs(1));
        assert_eq!(p.due(Op::Write), Some(Nanos::from_secs(1)));
        p.issued(Op::Write, 4096);
        assert_eq!(p.due(Op::Write), Some(Nanos::from_secs(1) + Nanos::from_us(1_365_333)));
    }

    #[test]
    fn a_paced_direction_ahead_of_its_turn_gives_way_to_the_other() {
        let steer = |next: [u64; 2], has_share: [bool; 2], drawn: Op| {
            let next = next.map(Nanos::from_ms);
            RateSteer { next, now: Nanos::from_ms(10), has_share }.direction(drawn)
        };
        assert_eq!(steer([5, 50], [true; 2], Op::Read), Op::Read, "due: it goes");
        assert_eq!(steer([50, 5], [true; 2], Op::Read), Op::Write, "the other is due");
        assert_eq!(steer([50, 30], [true; 2], Op::Read), Op::Write, "the other is due sooner");
        assert_eq!(steer([30, 50], [true; 2], Op::Read), Op::Read, "it is due sooner: wait for it");
        assert_eq!(steer([50, 5], [true, false], Op::Read), Op::Read, "writes have no share of the mix");
        assert_eq!(steer([50, 5], [true; 2], Op::Discard), Op::Discard);
    }
}
