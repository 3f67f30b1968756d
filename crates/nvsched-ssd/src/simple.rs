//! The first device model: `units` independent parallel units with fixed read and write
//! service times per stripe page, page-striped by LBA. Deterministic and exact, which
//! makes it the model for engine tests (Little's law, exact latencies).

use crate::{Command, Device, DeviceCounters};
use nvsched_core::{Nanos, Op};
use serde::Deserialize;

/// `[simple]` section of a profile.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimpleConfig {
    /// Parallel units (dies).
    pub units: u32,
    /// Striping unit: page `p` of the LBA space lives on unit `p % units`.
    pub stripe_bytes: u32,
    /// Service time per stripe page read.
    pub read_ns: u64,
    /// Service time per stripe page written.
    pub write_ns: u64,
}

pub struct SimpleDevice {
    cfg: SimpleConfig,
    queue_depth: u32,
    capacity_bytes: u64,
    busy_until: Vec<Nanos>,
    busy_total: Vec<Nanos>,
    read_bytes: u64,
    write_bytes: u64,
    flushes: u64,
    discards: u64,
}

impl SimpleDevice {
    pub fn new(cfg: SimpleConfig, queue_depth: u32, capacity_bytes: u64) -> SimpleDevice {
        let units = cfg.units.max(1) as usize;
        SimpleDevice {
            cfg,
            queue_depth,
            capacity_bytes,
            busy_until: vec![Nanos::ZERO; units],
            busy_total: vec![Nanos::ZERO; units],
            read_bytes: 0,
            write_bytes: 0,
            flushes: 0,
            discards: 0,
        }
    }
}

impl Device for SimpleDevice {
    fn submit(&mut self, cmd: &Command, now: Nanos) -> Nanos {
        let service = match cmd.op {
            Op::Read => {
                self.read_bytes += u64::from(cmd.len_bytes);
                Nanos(self.cfg.read_ns)
            }
            Op::Write => {
                self.write_bytes += u64::from(cmd.len_bytes);
                Nanos(self.cfg.write_ns)
            }
            Op::Flush => {
                self.flushes += 1;
                return now;
            }
            Op::Discard => {
                self.discards += 1;
                return now;
            }
        };
        let stripe = u64::from(self.cfg.stripe_bytes.max(1));
        let first = cmd.offset_bytes / stripe;
        let last = (cmd.offset_bytes + u64::from(cmd.len_bytes).max(1) - 1) / stripe;
        let units = self.busy_until.len() as u64;
        let mut done = now;
        for page in first..=last {
            let u = (page % units) as usize;
            let start = self.busy_until[u].max(now);
            self.busy_until[u] = start + service;
            self.busy_total[u] += service;
            done = done.max(self.busy_until[u]);
        }
        done
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn counters(&self, now: Nanos) -> DeviceCounters {
        let span = now.as_secs_f64().max(1e-12);
        DeviceCounters {
            model: "simple".into(),
            host_read_bytes: self.read_bytes,
            host_write_bytes: self.write_bytes,
            flushes: self.flushes,
            discards: self.discards,
            write_amplification: if self.write_bytes > 0 { 1.0 } else { 0.0 },
            unit_utilization: self.busy_total.iter().map(|b| (b.as_secs_f64() / span).min(1.0)).collect(),
            ..DeviceCounters::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev() -> SimpleDevice {
        SimpleDevice::new(SimpleConfig { units: 4, stripe_bytes: 4096, read_ns: 100, write_ns: 300 }, 32, 1 << 30)
    }

    fn read(offset: u64, len: u32) -> Command {
        Command { op: Op::Read, offset_bytes: offset, len_bytes: len, fua: false }
    }

    #[test]
    fn pages_on_different_units_run_in_parallel() {
        let mut d = dev();
        assert_eq!(d.submit(&read(0, 4096), Nanos(0)), Nanos(100));
        assert_eq!(d.submit(&read(4096, 4096), Nanos(0)), Nanos(100));
        // same unit as offset 0: queues behind it
        assert_eq!(d.submit(&read(4 * 4096, 4096), Nanos(0)), Nanos(200));
    }

    #[test]
    fn multi_page_request_completes_with_its_slowest_page() {
        let mut d = dev();
        assert_eq!(d.submit(&read(0, 8 * 4096), Nanos(10)), Nanos(210));
        let w = Command { op: Op::Write, ..read(4096, 4096) };
        assert_eq!(d.submit(&w, Nanos(10)), Nanos(510));
    }

    #[test]
    fn utilization_counts_busy_time() {
        let mut d = dev();
        d.submit(&read(0, 4096), Nanos(0));
        let c = d.counters(Nanos(1000));
        assert_eq!(c.unit_utilization, vec![0.1, 0.0, 0.0, 0.0]);
    }
}
