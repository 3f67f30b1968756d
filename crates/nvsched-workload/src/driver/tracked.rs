//! What a job keeps of its I/Os: the ranges in flight (`serialize_overlap`) and what it
//! wrote, read back by `verify`.

use super::*;

/// The byte ranges of a clone's data I/Os in flight, (file, start, end): at most
/// `iodepth` of them, so a list.
#[derive(Debug, Default)]
pub(super) struct InFlightRanges {
    ranges: Vec<(u16, u64, u64)>,
}

impl InFlightRanges {
    pub(super) fn range(file: u16, offset_bytes: u64, len_bytes: u32) -> (u16, u64, u64) {
        (file, offset_bytes, offset_bytes + u64::from(len_bytes))
    }

    pub(super) fn overlaps(&self, unit: &IoUnit) -> bool {
        let (file, start, end) = Self::range(unit.file, unit.offset_bytes, unit.len_bytes);
        start < end && self.ranges.iter().any(|&(f, s, e)| f == file && s < end && start < e)
    }

    pub(super) fn issued(&mut self, unit: &IoUnit) {
        if unit.len_bytes > 0 {
            self.ranges.push(Self::range(unit.file, unit.offset_bytes, unit.len_bytes));
        }
    }

    pub(super) fn landed(&mut self, file: u16, offset_bytes: u64, len_bytes: u32) {
        let range = Self::range(file, offset_bytes, len_bytes);
        if let Some(i) = self.ranges.iter().position(|&r| r == range) {
            self.ranges.swap_remove(i);
        }
    }
}

/// What a job with `serialize_overlap` or `verify` keeps of its I/Os.
#[derive(Debug, Default)]
pub(super) struct Tracked {
    /// `serialize_overlap`: its data I/Os in flight.
    pub(super) in_flight: Option<InFlightRanges>,
    /// `verify`: what it wrote, read back once its I/O is done.
    pub(super) verify: Option<VerifyPass>,
}

impl Tracked {
    /// `unit` was issued: returns whether a `verify_backlog` read-back is due.
    pub(super) fn issued(&mut self, unit: &IoUnit) -> bool {
        if let Some(ranges) = &mut self.in_flight {
            ranges.issued(unit);
        }
        let Some(v) = &mut self.verify else { return false };
        if unit.op == Op::Discard {
            v.written.trimmed(unit.file, unit.offset_bytes, unit.len_bytes);
        }
        let backlog = unit.op == Op::Write && v.wrote(unit.file, unit.offset_bytes, unit.len_bytes);
        let pass = unit.op.is_data() && v.passed(unit.len_bytes);
        backlog || pass
    }

    pub(super) fn landed(&mut self, op: Op, file: u16, offset_bytes: u64, len_bytes: u32) {
        if let Some(ranges) = &mut self.in_flight {
            ranges.landed(file, offset_bytes, len_bytes);
        }
        if let Some(v) = &mut self.verify {
            match op {
                Op::Write => v.written.landed(file, offset_bytes, len_bytes, 0),
                Op::Discard => v.written.landed(file, offset_bytes, len_bytes, TRIM_GENERATION),
                _ => {}
            }
        }
    }
}

/// `verify`'s read-back: the blocks the job wrote (or, for `verify_only`, every block of
/// its region), read at the job's depth once its I/O is done, as fio's verify phase; and
/// with `verify_backlog`, the oldest of them every so many writes.
#[derive(Debug, Default)]
pub(super) struct VerifyPass {
    pub(super) written: WrittenBlocks,
    /// (file, offset, length) of each block to read, and the next to issue.
    pub(super) list: Vec<(u16, u64, u32)>,
    pub(super) next: usize,
    /// `verify_only`: every block of the clone's regions, walked without listing them (a
    /// whole device holds millions).
    pub(super) walk: Option<RegionWalk>,
    pub(super) state: VerifyState,
    /// `verify_backlog` (0: none) and `verify_backlog_batch`, the writes issued since the
    /// last read-back, and the blocks written in the order they were (a block written
    /// twice is there twice; the first finds it, the second finds it gone).
    /// `in_write_order`: the read-back after a pass reads them in that order too (fio keeps
    /// its history as a list unless offsets may repeat: `norandommap`, `rw=...:N`),
    /// otherwise in offset order (fio's tree).
    pub(super) in_write_order: bool,
    pub(super) backlog: u32,
    pub(super) backlog_batch: u32,
    pub(super) since_backlog: u32,
    pub(super) order: std::collections::VecDeque<(u16, u64)>,
    /// Bytes per pass over the job's size (fio verifies after each, `time_based` passes
    /// included), those issued in the running pass, and whether one just ended.
    pub(super) pass_bytes: u64,
    pub(super) pass_issued: u64,
    pub(super) pass_ended: bool,
    /// Bytes the read-backs have read (fio's keep_running counts them toward `io_size`).
    pub(super) read_bytes: u64,
    /// Time spent in fio's verify phases (the read-backs after a pass and at the end, not
    /// `verify_backlog`'s within one), and when the one under way began.
    pub(super) phase_time: Nanos,
    pub(super) phase_since: Option<Nanos>,
}

impl VerifyPass {
    /// A verify phase begins at `now`.
    pub(super) fn phase_begins(&mut self, now: Nanos) {
        self.phase_since.get_or_insert(now);
    }
    /// The verify phase under way, if any, ends at `now`.
    pub(super) fn phase_ends(&mut self, now: Nanos) {
        if let Some(since) = self.phase_since.take() {
            self.phase_time += now.saturating_sub(since);
        }
    }

    /// A write was issued: whether a backlog read-back is now due.
    pub(super) fn wrote(&mut self, file: u16, offset_bytes: u64, len_bytes: u32) -> bool {
        self.written.issued(file, offset_bytes, len_bytes, 0);
        if self.in_write_order || self.backlog > 0 {
            self.order.push_back((file, offset_bytes));
        }
        if self.backlog == 0 {
            return false;
        }
        self.since_backlog += 1;
        if self.since_backlog < self.backlog {
            return false;
        }
        self.since_backlog = 0;
        true
    }

    /// `len_bytes` of data were issued: whether a pass over the job's size just ended.
    pub(super) fn passed(&mut self, len_bytes: u32) -> bool {
        self.pass_issued += u64::from(len_bytes);
        if self.pass_bytes == 0 || self.pass_issued < self.pass_bytes {
            return false;
        }
        self.pass_issued -= self.pass_bytes;
        self.pass_ended = true;
        true
    }

    /// Lists the blocks to read back now, taking them from those left for the end; the
    /// writes have all landed. After a pass, every block written; otherwise
    /// (`verify_backlog`) the oldest, at most `backlog_batch`.
    pub(super) fn begin_backlog(&mut self) {
        self.next = 0;
        self.state = VerifyState::Backlog;
        self.list.clear();
        if std::mem::take(&mut self.pass_ended) {
            if self.in_write_order {
                self.take_oldest(usize::MAX);
            }
            self.list.append(&mut self.written.take_all());
            self.order.clear();
            self.since_backlog = 0;
            return;
        }
        self.take_oldest(self.backlog_batch as usize);
    }

    /// Lists the oldest written blocks still unchecked, in the order written, until the
    /// list holds `count`.
    pub(super) fn take_oldest(&mut self, count: usize) {
        while self.list.len() < count {
            let Some((file, offset)) = self.order.pop_front() else { break };
            if let Some(len) = self.written.take(file, offset) {
                self.list.push((file, offset, len));
            }
        }
    }

    /// How many blocks the read-back under way reads.
    pub(super) fn listed(&self) -> usize {
        self.walk.as_ref().map_or(self.list.len(), |w| w.blocks.last().copied().unwrap_or(0) as usize)
    }

    /// Appends reads of listed blocks not yet issued, at most `room`; returns how many.
    pub(super) fn issue_reads(&mut self, out: &mut Vec<IoUnit>, room: u32, prio: IoPrio) -> u32 {
        let n = (room as usize).min(self.listed() - self.next);
        for i in self.next..self.next + n {
            let (file, offset_bytes, len_bytes) = match &self.walk {
                Some(w) => w.block(i as u64),
                None => self.list[i],
            };
            out.push(IoUnit { op: Op::Read, sync_range: SyncRange::FSYNC, offset_bytes, len_bytes, prio, file });
            self.read_bytes += u64::from(len_bytes);
        }
        self.next += n;
        n as u32
    }
}

/// Every `bs` block of a clone's regions, one file after another.
#[derive(Debug)]
pub(super) struct RegionWalk {
    regions: Vec<Region>,
    bs: u64,
    /// Blocks in the regions up to and including each (a running sum).
    blocks: Vec<u64>,
}

impl RegionWalk {
    pub(super) fn new(regions: &[Region], bs: u64) -> RegionWalk {
        let blocks = regions
            .iter()
            .scan(0, |sum, r| {
                *sum += r.len / bs;
                Some(*sum)
            })
            .collect();
        RegionWalk { regions: regions.to_vec(), bs, blocks }
    }

    /// The `i`th block: (file, offset, length).
    pub(super) fn block(&self, i: u64) -> (u16, u64, u32) {
        let file = self.blocks.partition_point(|&b| b <= i);
        let before = if file == 0 { 0 } else { self.blocks[file - 1] };
        (file as u16, self.regions[file].start + (i - before) * self.bs, self.bs as u32)
    }
}
