//! fio's `lockfile`: jobs that share a file take turns on it (`exclusive`), or let reads
//! share it while anything else has it alone (`readwrite`).
//!
//! As in fio 3.33 (ioengines.c), an I/O takes its file's lock before it is submitted and
//! gives it back once the engine's queue call returns. A synchronous engine's queue call
//! is the I/O itself, so the lock is held until the I/O completes; an asynchronous
//! engine's returns at once, so there the lock changes nothing (fio 3.33 measured so:
//! three libaio jobs on one file do the same I/O with and without it). Only clones of
//! synchronous engines therefore lock here. Waiting for a lock is not latency: fio starts
//! an I/O's clock once it holds the lock.
//!
//! Turns: fio's exclusive lock is a semaphore, and the jobs waiting on it take it in turn
//! (three psync jobs on one file each did a third of the I/O); here the waiters queue and
//! the longest waiting goes first. fio's `readwrite` lock is a POSIX read-write lock,
//! which lets a read in whenever no write holds the file, even with writes waiting
//! (two psync readers held a writer to 9 writes in 3 s); here too, reads never wait for
//! a queued write, and the writes queue among themselves.

use crate::driver::JobDriver;
use crate::gen::IoUnit;
use crate::spec::EngineKind;
use nvsched_core::Op;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// fio's `lockfile` modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockMode {
    /// No locking (fio's default).
    #[default]
    None,
    /// One I/O at a time on the file, whatever its direction.
    Exclusive,
    /// Reads share the file; any other I/O (write, trim, flush) has it alone.
    ReadWrite,
}

impl LockMode {
    pub fn parse(value: &str) -> Result<LockMode, String> {
        match value {
            "none" => Ok(LockMode::None),
            "exclusive" => Ok(LockMode::Exclusive),
            "readwrite" => Ok(LockMode::ReadWrite),
            other => Err(format!("'{other}' is not one of none, exclusive, readwrite")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LockMode::None => "none",
            LockMode::Exclusive => "exclusive",
            LockMode::ReadWrite => "readwrite",
        }
    }

    /// Whether an I/O of `op` shares the file with other reads.
    fn shares(self, op: Op) -> bool {
        self == LockMode::ReadWrite && op == Op::Read
    }
}

/// One file's lock, shared by every locking clone that uses the file.
#[derive(Debug, Default)]
struct LockState {
    /// Reads holding the file (`readwrite`).
    readers: u32,
    /// An I/O has the file alone.
    alone: bool,
    /// Clones waiting to have the file alone, the longest waiting first.
    queue: VecDeque<u64>,
}

impl LockState {
    /// Takes the lock for `waiter` if it can have it now; otherwise queues it (once) for
    /// a turn alone.
    fn take(&mut self, waiter: u64, shared: bool) -> bool {
        if shared {
            if self.alone {
                return false;
            }
            self.readers += 1;
            return true;
        }
        let my_turn = self.queue.front().is_none_or(|&w| w == waiter);
        if !self.alone && self.readers == 0 && my_turn {
            if !self.queue.is_empty() {
                self.queue.pop_front();
            }
            self.alone = true;
            return true;
        }
        if !self.queue.contains(&waiter) {
            self.queue.push_back(waiter);
        }
        false
    }

    fn give_back(&mut self, shared: bool) {
        if shared {
            debug_assert!(self.readers > 0, "a read gave back a lock it did not hold");
            self.readers = self.readers.saturating_sub(1);
        } else {
            debug_assert!(self.alone, "an I/O gave back a lock it did not hold");
            self.alone = false;
        }
    }
}

/// A locking clone's side: the locks of its files, and the I/O that waits for one.
#[derive(Debug)]
pub struct CloneLocks {
    mode: LockMode,
    /// Tells this clone from the others in the locks' queues.
    waiter: u64,
    /// By the clone's file number. A `Mutex`, not a `RefCell`, so that drivers stay
    /// `Send`; every engine drives its clones from one thread, so it is never contended.
    files: Vec<Arc<Mutex<LockState>>>,
    /// Drawn and counted in flight, but waiting for their files' locks, in order.
    waiting: VecDeque<IoUnit>,
}

impl CloneLocks {
    /// Whether I/O waits for a lock (the clone is held until another gives one back).
    pub fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Queues `units` (just drawn) behind any already waiting.
    pub fn wait(&mut self, units: impl IntoIterator<Item = IoUnit>) {
        self.waiting.extend(units);
    }

    /// Moves the waiting units whose locks can be taken now, in order and at most
    /// `max_units`, to `out`; stops at the first that cannot have its lock. Returns how
    /// many moved.
    pub fn release_to(&mut self, out: &mut Vec<IoUnit>, max_units: u32) -> u32 {
        let mut moved = 0;
        while moved < max_units {
            let Some(unit) = self.waiting.front() else { break };
            let shared = self.mode.shares(unit.op);
            let lock = &self.files[usize::from(unit.file)];
            if !lock.lock().expect("file lock poisoned").take(self.waiter, shared) {
                break;
            }
            out.extend(self.waiting.pop_front());
            moved += 1;
        }
        moved
    }

    /// An I/O of `op` on file `file` completed: its lock goes back.
    pub fn give_back(&mut self, file: u16, op: Op) {
        let shared = self.mode.shares(op);
        self.files[usize::from(file)].lock().expect("file lock poisoned").give_back(shared);
    }
}

/// The file locks of one run, by file name.
#[derive(Debug, Default)]
pub struct FileLocks {
    by_name: BTreeMap<String, Arc<Mutex<LockState>>>,
    clones: u64,
}

impl FileLocks {
    /// The locks for a clone whose files are `names` (by file number) under `mode`; none
    /// without locking.
    pub fn for_clone(&mut self, mode: LockMode, names: impl IntoIterator<Item = String>) -> Option<CloneLocks> {
        if mode == LockMode::None {
            return None;
        }
        self.clones += 1;
        let files = names.into_iter().map(|name| self.by_name.entry(name).or_default().clone()).collect();
        Some(CloneLocks { mode, waiter: self.clones, files, waiting: VecDeque::new() })
    }

    /// Gives a new clone the locks of its files, if its job locks them and its engine is
    /// synchronous (an asynchronous engine's I/O gives the lock back as it is queued).
    pub fn attach(&mut self, driver: &mut JobDriver) {
        let spec = &driver.spec;
        if spec.engine_kind != EngineKind::Sync {
            return;
        }
        let names = (0..spec.files_per_clone()).map(|k| spec.file_name_of(driver.clone_index, k));
        if let Some(locks) = self.for_clone(spec.lockfile, names) {
            driver.set_locks(locks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::SyncRange;
    use nvsched_core::IoPrio;

    fn unit(op: Op) -> IoUnit {
        IoUnit { op, sync_range: SyncRange::FSYNC, offset_bytes: 0, len_bytes: 4096, prio: IoPrio::default(), file: 0 }
    }

    fn clones(mode: LockMode, n: usize) -> Vec<CloneLocks> {
        let mut locks = FileLocks::default();
        (0..n).map(|_| locks.for_clone(mode, ["f".to_string()]).unwrap()).collect()
    }

    /// Tries to issue `op` for clone `c`: true if it went out.
    fn try_issue(cs: &mut [CloneLocks], c: usize, op: Op) -> bool {
        let mut out = Vec::new();
        if !cs[c].waiting() {
            cs[c].wait([unit(op)]);
        }
        cs[c].release_to(&mut out, u32::MAX) == 1
    }

    #[test]
    fn no_lock_without_a_mode() {
        assert!(FileLocks::default().for_clone(LockMode::None, ["f".to_string()]).is_none());
    }

    #[test]
    fn exclusive_lets_one_io_at_a_time_and_hands_over_in_turn() {
        let mut cs = clones(LockMode::Exclusive, 3);
        assert!(try_issue(&mut cs, 0, Op::Read));
        assert!(!try_issue(&mut cs, 1, Op::Read), "a second read while the first holds the file");
        assert!(!try_issue(&mut cs, 2, Op::Write));
        cs[0].give_back(0, Op::Read);
        // clone 0 comes back first, but 1 and 2 waited longer
        assert!(!try_issue(&mut cs, 0, Op::Read));
        assert!(try_issue(&mut cs, 1, Op::Read));
        cs[1].give_back(0, Op::Read);
        assert!(!try_issue(&mut cs, 0, Op::Read));
        assert!(try_issue(&mut cs, 2, Op::Write));
        cs[2].give_back(0, Op::Write);
        assert!(try_issue(&mut cs, 0, Op::Read));
    }

    #[test]
    fn exclusive_turns_share_the_file_evenly() {
        let mut cs = clones(LockMode::Exclusive, 3);
        let mut done = [0u32; 3];
        let mut holder: Option<usize> = None;
        for _ in 0..300 {
            // each clone always has an I/O to issue; the holder finishes its one
            if let Some(h) = holder.take() {
                cs[h].give_back(0, Op::Write);
                done[h] += 1;
            }
            for c in 0..3 {
                if holder.is_none() && try_issue(&mut cs, c, Op::Write) {
                    holder = Some(c);
                } else if holder != Some(c) {
                    try_issue(&mut cs, c, Op::Write);
                }
            }
        }
        assert!(done.iter().all(|&d| (99..=100).contains(&d)), "{done:?}");
    }

    #[test]
    fn readwrite_reads_share_and_writes_go_alone() {
        let mut cs = clones(LockMode::ReadWrite, 3);
        assert!(try_issue(&mut cs, 0, Op::Read));
        assert!(try_issue(&mut cs, 1, Op::Read), "reads share the file");
        assert!(!try_issue(&mut cs, 2, Op::Write), "a write waits for the reads");
        cs[0].give_back(0, Op::Read);
        // a read gets in beside the other while the write waits (readers first, as POSIX
        // read-write locks do by default)
        assert!(try_issue(&mut cs, 0, Op::Read));
        cs[0].give_back(0, Op::Read);
        cs[1].give_back(0, Op::Read);
        assert!(try_issue(&mut cs, 2, Op::Write));
        assert!(!try_issue(&mut cs, 0, Op::Read), "no read while a write holds the file");
        assert!(!try_issue(&mut cs, 1, Op::Flush), "a flush goes alone too");
        cs[2].give_back(0, Op::Write);
        assert!(try_issue(&mut cs, 0, Op::Read));
    }

    #[test]
    fn waiting_units_go_out_in_order_up_to_the_limit() {
        let mut locks = FileLocks::default();
        let names = || ["a".to_string(), "b".to_string()];
        let mut first = locks.for_clone(LockMode::Exclusive, names()).unwrap();
        let mut second = locks.for_clone(LockMode::Exclusive, names()).unwrap();
        let on = |file| IoUnit { file, ..unit(Op::Flush) };
        let mut out = Vec::new();
        second.wait([on(1)]);
        assert_eq!(second.release_to(&mut out, 1), 1); // second holds b
        first.wait([on(0), on(1), on(0)]);
        assert_eq!(first.release_to(&mut out, u32::MAX), 1, "a goes; b waits; the unit behind it too");
        assert!(first.waiting());
        second.give_back(1, Op::Flush);
        assert_eq!(first.release_to(&mut out, 1), 1, "the limit holds the last back");
        assert_eq!(out.iter().map(|u| u.file).collect::<Vec<_>>(), [1, 0, 1]);
    }
}
