//! The flash translation layer, without time: page-level mapping (one `u32` per 4 KiB
//! logical page and one per physical slot), blocks and their free pools per die, greedy
//! or cost-benefit victim choice, relocation (GC and SLC folding) step by step, TRIM,
//! and fast preconditioning. [`super::NandDevice`] puts times on what this does.

use super::config::{GcPolicy, Geometry};
use nvsched_core::rng::mix64;
use nvsched_core::{Permutation, SimRng};
use std::collections::VecDeque;

/// Hears how far a preconditioning got (the fraction done, 0..=1) every so often, as a
/// large drive's takes up to a minute; false stops it.
pub type Watch<'a> = dyn FnMut(f64) -> bool + 'a;

/// A preconditioning that its [`Watch`] stopped: the drive state is unfinished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// `l2p` value of a logical page that was never written or was trimmed.
const UNMAPPED: u32 = 0;
/// `l2p` value of a logical page whose newest data sits in the DRAM write buffer.
pub const STAGED: u32 = u32::MAX;
/// `p2l` value of a slot without valid data (slots store lpn + 1, so the table can be
/// allocated zeroed, which the OS maps lazily).
const NO_LPN: u32 = 0;
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    Free,
    Open,
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellMode {
    Native,
    Slc,
}

/// Where writes come from; each has its own open block per die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Host = 0,
    HostSlc = 1,
    Relocate = 2,
}

/// Where a logical page's data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Unmapped,
    Staged,
    Slot(u32),
}

/// What one relocation step did, for timing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepWork {
    pub page_reads: u32,
    /// Whether the pages read were in SLC mode.
    pub slc_source: bool,
    pub slots_moved: u32,
    pub programs: u32,
    pub erased: bool,
}

/// Free blocks, open blocks and relocation jobs of one die.
#[derive(Clone, Debug, Default)]
struct Die {
    free: Vec<u32>,
    open: [Option<u32>; 3],
    /// Full SLC blocks, oldest first: the folding order.
    slc_full: VecDeque<u32>,
    /// SLC blocks open or full.
    slc_blocks: u32,
    gc_victim: Option<(u32, u32)>,
    fold_victim: Option<(u32, u32)>,
}

/// Full native blocks bucketed by valid count, per die: O(1) updates, fast minimum.
#[derive(Clone, Debug)]
struct VictimIndex {
    buckets: u32,
    heads: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    bucket_of: Vec<u32>,
    min_hint: Vec<u32>,
}

impl VictimIndex {
    fn new(dies: u32, blocks: u32, slots_per_block: u32) -> VictimIndex {
        let buckets = slots_per_block + 1;
        VictimIndex {
            buckets,
            heads: vec![NIL; (dies * buckets) as usize],
            next: vec![NIL; blocks as usize],
            prev: vec![NIL; blocks as usize],
            bucket_of: vec![NIL; blocks as usize],
            min_hint: vec![0; dies as usize],
        }
    }

    fn insert(&mut self, die: u32, block: u32, valid: u32) {
        let h = (die * self.buckets + valid) as usize;
        let b = block as usize;
        self.next[b] = self.heads[h];
        self.prev[b] = NIL;
        if self.heads[h] != NIL {
            self.prev[self.heads[h] as usize] = block;
        }
        self.heads[h] = block;
        self.bucket_of[b] = valid;
        self.min_hint[die as usize] = self.min_hint[die as usize].min(valid);
    }

    fn remove(&mut self, die: u32, block: u32) {
        let b = block as usize;
        let valid = self.bucket_of[b];
        if valid == NIL {
            return;
        }
        let h = (die * self.buckets + valid) as usize;
        if self.prev[b] != NIL {
            self.next[self.prev[b] as usize] = self.next[b];
        } else {
            self.heads[h] = self.next[b];
        }
        if self.next[b] != NIL {
            self.prev[self.next[b] as usize] = self.prev[b];
        }
        self.bucket_of[b] = NIL;
    }

    fn contains(&self, block: u32) -> bool {
        self.bucket_of[block as usize] != NIL
    }

    fn min(&mut self, die: u32) -> Option<u32> {
        let base = die * self.buckets;
        let mut v = self.min_hint[die as usize];
        while v < self.buckets {
            let head = self.heads[(base + v) as usize];
            if head != NIL {
                self.min_hint[die as usize] = v;
                return Some(head);
            }
            v += 1;
        }
        self.min_hint[die as usize] = self.buckets;
        None
    }
}

/// Counters of the FTL.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FtlCounters {
    pub host_slots_written: u64,
    pub slc_slots_written: u64,
    pub nand_slots_written: u64,
    pub gc_victims: u64,
    pub gc_slots_moved: u64,
    pub fold_blocks: u64,
    pub fold_slots_moved: u64,
    pub erases: u64,
}

#[derive(Clone)]
pub struct Ftl {
    pub geo: Geometry,
    l2p: MapTable,
    p2l: MapTable,
    valid: Vec<u32>,
    wp: Vec<u32>,
    state: Vec<BlockState>,
    mode: Vec<CellMode>,
    erase_count: Vec<u32>,
    /// Write sequence number when the block filled (its age, for cost-benefit).
    closed_seq: Vec<u64>,
    dies: Vec<Die>,
    victims: VictimIndex,
    seq: u64,
    /// Logical pages mapped or staged.
    mapped: u64,
    next_host_die: u32,
    pub policy: GcPolicy,
    pub counters: FtlCounters,
}

impl Ftl {
    pub fn new(geo: Geometry, policy: GcPolicy) -> Ftl {
        let blocks = geo.blocks as usize;
        let slots = blocks * geo.slots_per_block as usize;
        let mut dies = vec![Die::default(); geo.dies as usize];
        for (d, die) in dies.iter_mut().enumerate() {
            // pop from the back: lowest block numbers first
            die.free = (0..geo.blocks_per_die).rev().map(|i| d as u32 * geo.blocks_per_die + i).collect();
        }
        Ftl {
            l2p: MapTable::zeroed(geo.user_lpns as usize),
            p2l: MapTable::zeroed(slots),
            valid: vec![0; blocks],
            wp: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            mode: vec![CellMode::Native; blocks],
            erase_count: vec![0; blocks],
            closed_seq: vec![0; blocks],
            victims: VictimIndex::new(geo.dies, geo.blocks, geo.slots_per_block),
            dies,
            seq: 0,
            mapped: 0,
            next_host_die: 0,
            policy,
            counters: FtlCounters::default(),
            geo,
        }
    }

    #[inline]
    pub fn lookup(&self, lpn: u32) -> Lookup {
        match self.l2p[lpn as usize] {
            UNMAPPED => Lookup::Unmapped,
            STAGED => Lookup::Staged,
            s => Lookup::Slot(s - 1),
        }
    }

    /// Brings `lpn`'s mapping entry into the cache (no effect out of range).
    #[inline]
    pub fn prefetch_mapping(&self, lpn: u64) {
        prefetch_entry(&self.l2p, lpn as usize);
    }

    /// Logical pages holding data (mapped or in the buffer).
    pub fn mapped_lpns(&self) -> u64 {
        self.mapped
    }

    pub fn free_blocks(&self, die: u32) -> u32 {
        self.dies[die as usize].free.len() as u32
    }

    pub fn slc_blocks(&self, die: u32) -> u32 {
        self.dies[die as usize].slc_blocks
    }

    pub fn slc_blocks_total(&self) -> u64 {
        self.dies.iter().map(|d| u64::from(d.slc_blocks)).sum()
    }

    pub fn block_mode(&self, block: u32) -> CellMode {
        self.mode[block as usize]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    pub fn valid_in_block(&self, block: u32) -> u32 {
        self.valid[block as usize]
    }

    pub fn block_state(&self, block: u32) -> BlockState {
        self.state[block as usize]
    }

    fn capacity(&self, block: u32) -> u32 {
        match self.mode[block as usize] {
            CellMode::Native => self.geo.slots_per_block,
            CellMode::Slc => self.geo.slc_slots_per_block,
        }
    }

    /// Marks a logical page as held in the write buffer (its old slot becomes invalid).
    pub fn stage(&mut self, lpn: u32) {
        match self.l2p[lpn as usize] {
            UNMAPPED => self.mapped += 1,
            STAGED => {}
            s => self.invalidate(s - 1),
        }
        self.l2p[lpn as usize] = STAGED;
    }

    /// Whether the page's newest data is still only in the buffer.
    pub fn is_staged(&self, lpn: u32) -> bool {
        self.l2p[lpn as usize] == STAGED
    }

    /// TRIM: forget a logical page.
    pub fn trim(&mut self, lpn: u32) {
        match self.l2p[lpn as usize] {
            UNMAPPED => return,
            STAGED => {}
            s => self.invalidate(s - 1),
        }
        self.l2p[lpn as usize] = UNMAPPED;
        self.mapped -= 1;
    }

    fn invalidate(&mut self, slot: u32) {
        debug_assert_ne!(self.p2l[slot as usize], NO_LPN, "invalidating an empty slot");
        self.p2l[slot as usize] = NO_LPN;
        let b = self.geo.block_of_slot(slot);
        let die = self.geo.die_of_block(b);
        let in_index = self.victims.contains(b);
        if in_index {
            self.victims.remove(die, b);
        }
        self.valid[b as usize] -= 1;
        if in_index {
            self.victims.insert(die, b, self.valid[b as usize]);
        }
    }

    /// The die the next host program will go to, without advancing.
    pub fn peek_host_die(&self) -> u32 {
        self.next_host_die
    }

    /// Whether `stream` has an open block on `die`.
    pub fn has_open(&self, die: u32, stream: Stream) -> bool {
        self.dies[die as usize].open[stream as usize].is_some()
    }

    /// Valid slots of the block GC would clean next on `die` (greedy view).
    pub fn min_victim_valid(&mut self, die: u32) -> Option<u32> {
        if let Some((b, _)) = self.dies[die as usize].gc_victim {
            return Some(self.valid[b as usize]);
        }
        self.victims.min(die).map(|b| self.valid[b as usize])
    }

    /// The die the next host program goes to (round-robin striping).
    pub fn next_host_die(&mut self) -> u32 {
        let d = self.next_host_die;
        self.next_host_die = (d + 1) % self.geo.dies;
        d
    }

    /// Whether `stream` on `die` can take one more slot without a free block.
    pub fn has_room(&self, die: u32, stream: Stream) -> bool {
        let d = &self.dies[die as usize];
        d.open[stream as usize].is_some() || !d.free.is_empty()
    }

    fn open_block(&mut self, die: u32, stream: Stream) -> u32 {
        if let Some(b) = self.dies[die as usize].open[stream as usize] {
            return b;
        }
        let b = self.dies[die as usize]
            .free
            .pop()
            .unwrap_or_else(|| panic!("die {die} has no free block for {stream:?}: GC reserve violated"));
        self.state[b as usize] = BlockState::Open;
        self.wp[b as usize] = 0;
        self.valid[b as usize] = 0;
        let mode = if stream == Stream::HostSlc { CellMode::Slc } else { CellMode::Native };
        self.mode[b as usize] = mode;
        if mode == CellMode::Slc {
            self.dies[die as usize].slc_blocks += 1;
        }
        self.dies[die as usize].open[stream as usize] = Some(b);
        b
    }

    /// Writes a logical page's data to the next slot of `stream` on `die`; returns the slot.
    pub fn write(&mut self, lpn: u32, die: u32, stream: Stream) -> u32 {
        match self.l2p[lpn as usize] {
            UNMAPPED => self.mapped += 1,
            STAGED => {}
            s => self.invalidate(s - 1),
        }
        self.counters.host_slots_written += 1;
        if stream == Stream::HostSlc {
            self.counters.slc_slots_written += 1;
        }
        self.place(lpn, die, stream)
    }

    /// Moves valid data from `old_slot` (in a block being relocated, so outside the
    /// victim index) to the relocation stream of `die`. Knowing the old slot saves the
    /// random read of the mapping table, the dominant cost of GC in the simulator.
    fn relocate_slot(&mut self, old_slot: u32, lpn: u32, die: u32) -> u32 {
        debug_assert_eq!(self.l2p[lpn as usize], old_slot + 1, "relocating a stale slot");
        self.p2l[old_slot as usize] = NO_LPN;
        self.valid[self.geo.block_of_slot(old_slot) as usize] -= 1;
        self.place(lpn, die, Stream::Relocate)
    }

    fn place(&mut self, lpn: u32, die: u32, stream: Stream) -> u32 {
        let b = self.open_block(die, stream);
        let slot = b * self.geo.slots_per_block + self.wp[b as usize];
        self.wp[b as usize] += 1;
        self.l2p[lpn as usize] = slot + 1;
        self.p2l[slot as usize] = lpn + 1;
        self.valid[b as usize] += 1;
        self.counters.nand_slots_written += 1;
        if self.wp[b as usize] == self.capacity(b) {
            self.close_block(die, stream, b);
        }
        slot
    }

    fn close_block(&mut self, die: u32, stream: Stream, b: u32) {
        self.state[b as usize] = BlockState::Full;
        self.seq += 1;
        self.closed_seq[b as usize] = self.seq;
        self.dies[die as usize].open[stream as usize] = None;
        match self.mode[b as usize] {
            CellMode::Native => self.victims.insert(die, b, self.valid[b as usize]),
            CellMode::Slc => self.dies[die as usize].slc_full.push_back(b),
        }
    }

    fn erase(&mut self, die: u32, b: u32) {
        debug_assert_eq!(self.valid[b as usize], 0, "erasing a block with valid data");
        if self.victims.contains(b) {
            self.victims.remove(die, b);
        }
        if self.mode[b as usize] == CellMode::Slc {
            self.dies[die as usize].slc_blocks -= 1;
        }
        self.state[b as usize] = BlockState::Free;
        self.mode[b as usize] = CellMode::Native;
        self.wp[b as usize] = 0;
        self.erase_count[b as usize] += 1;
        self.counters.erases += 1;
        self.dies[die as usize].free.push(b);
    }

    /// Full SLC blocks waiting to be folded on `die`.
    pub fn slc_full_blocks(&self, die: u32) -> usize {
        self.dies[die as usize].slc_full.len() + usize::from(self.dies[die as usize].fold_victim.is_some())
    }

    /// Whether there is a GC victim (or a GC in progress) on `die`.
    pub fn has_gc_work(&mut self, die: u32) -> bool {
        self.dies[die as usize].gc_victim.is_some() || self.victims.min(die).is_some()
    }

    fn choose_gc_victim(&mut self, die: u32) -> Option<u32> {
        match self.policy {
            GcPolicy::Greedy => self.victims.min(die),
            GcPolicy::CostBenefit => {
                let first = die * self.geo.blocks_per_die;
                let mut best: Option<(f64, u32)> = None;
                for b in first..first + self.geo.blocks_per_die {
                    if !self.victims.contains(b) {
                        continue;
                    }
                    let u = f64::from(self.valid[b as usize]) / f64::from(self.geo.slots_per_block);
                    let age = (self.seq - self.closed_seq[b as usize] + 1) as f64;
                    let score = if u == 0.0 { f64::INFINITY } else { age * (1.0 - u) / (1.0 + u) };
                    if best.is_none_or(|(s, _)| score > s) {
                        best = Some((score, b));
                    }
                }
                best.map(|(_, b)| b)
            }
        }
    }

    /// One GC step on `die`: moves up to one native program's worth of valid data out of
    /// the victim (choosing one if none is in progress) and erases it once empty.
    /// `None` when there is nothing to collect.
    pub fn gc_step(&mut self, die: u32) -> Option<StepWork> {
        let (victim, cursor) = match self.dies[die as usize].gc_victim {
            Some(v) => v,
            None => {
                let b = self.choose_gc_victim(die)?;
                self.victims.remove(die, b);
                self.counters.gc_victims += 1;
                (b, 0)
            }
        };
        let (work, done_at) = self.relocate_from(die, victim, cursor);
        self.counters.gc_slots_moved += u64::from(work.slots_moved);
        self.dies[die as usize].gc_victim = if work.erased { None } else { Some((victim, done_at)) };
        Some(work)
    }

    /// One folding step on `die`: SLC data of the oldest full SLC block moves to native
    /// blocks. `None` when nothing is waiting.
    pub fn fold_step(&mut self, die: u32) -> Option<StepWork> {
        let (victim, cursor) = match self.dies[die as usize].fold_victim {
            Some(v) => v,
            None => {
                let b = self.dies[die as usize].slc_full.pop_front()?;
                self.counters.fold_blocks += 1;
                (b, 0)
            }
        };
        let (work, done_at) = self.relocate_from(die, victim, cursor);
        self.counters.fold_slots_moved += u64::from(work.slots_moved);
        self.dies[die as usize].fold_victim = if work.erased { None } else { Some((victim, done_at)) };
        Some(work)
    }

    /// Moves up to one native program unit of valid slots from `victim` starting at slot
    /// offset `cursor`; erases the victim when its last valid slot is gone.
    fn relocate_from(&mut self, die: u32, victim: u32, mut cursor: u32) -> (StepWork, u32) {
        let mut work = StepWork { slc_source: self.mode[victim as usize] == CellMode::Slc, ..StepWork::default() };
        let base = victim * self.geo.slots_per_block;
        let end = self.wp[victim as usize];
        let mut last_page = u32::MAX;
        // Gather first, so the mapping-table lines of the whole step can be fetched from
        // memory in parallel (the table is far larger than the caches).
        let mut moves: Vec<(u32, u32)> = Vec::with_capacity(self.geo.unit_slots as usize);
        while cursor < end
            && moves.len() < self.geo.unit_slots as usize
            && (moves.len() as u32) < self.valid[victim as usize]
        {
            let slot = base + cursor;
            cursor += 1;
            let stored = self.p2l[slot as usize];
            if stored == NO_LPN {
                continue;
            }
            let page = (cursor - 1) / self.geo.lpns_per_page;
            if page != last_page {
                work.page_reads += 1;
                last_page = page;
            }
            prefetch_entry(&self.l2p, (stored - 1) as usize);
            moves.push((slot, stored - 1));
        }
        for &(slot, lpn) in &moves {
            self.relocate_slot(slot, lpn, die);
        }
        work.slots_moved = moves.len() as u32;
        if work.slots_moved > 0 {
            work.programs = 1;
        }
        if self.valid[victim as usize] == 0 {
            self.erase(die, victim);
            work.erased = true;
        }
        (work, cursor)
    }

    /// Sequential fill of the first `fraction` of the logical space (see `fill_sequential`),
    /// telling `watch` how far it got.
    pub fn precondition_sequential(&mut self, fraction: f64, watch: &mut Watch<'_>) -> Result<(), Stopped> {
        let n = ((f64::from(self.geo.user_lpns) * fraction.clamp(0.0, 1.0)) as u64).min(u64::from(self.geo.user_lpns));
        // whole program units per chunk, so that the dies take turns as in one fill
        let chunk = u64::from(self.geo.unit_slots) << 8;
        let mut start = 0;
        while start < n {
            let end = (start + chunk).min(n);
            self.fill_sequential(std::iter::once(start..end));
            start = end;
            if !watch(start as f64 / n as f64) {
                return Err(Stopped);
            }
        }
        Ok(())
    }

    /// Whether every logical page of `lpns` holds data, so that [`Ftl::fill_sequential`]
    /// would write nothing. Pages past the logical space are left out, as there.
    pub fn holds_data(&self, lpns: impl IntoIterator<Item = std::ops::Range<u64>>) -> bool {
        lpns.into_iter().all(|range| self.in_logical_space(range).all(|lpn| self.l2p[lpn as usize] != UNMAPPED))
    }

    /// The logical pages of `range` that exist.
    fn in_logical_space(&self, range: std::ops::Range<u64>) -> impl Iterator<Item = u32> {
        (range.start..range.end.min(u64::from(self.geo.user_lpns))).map(|lpn| lpn as u32)
    }

    /// Writes the logical pages of `lpns` that hold no data, in order, striped over the
    /// dies one native program unit at a time, as a host writing them sequentially (with
    /// the SLC cache folded afterwards) leaves them. Pages that hold data keep it, so
    /// nothing becomes invalid. Pages past the logical space are left out.
    pub fn fill_sequential(&mut self, lpns: impl IntoIterator<Item = std::ops::Range<u64>>) {
        let unit = self.geo.unit_slots;
        let (mut die, mut in_unit) = (0, 0);
        for range in lpns {
            for lpn in self.in_logical_space(range) {
                if self.l2p[lpn as usize] != UNMAPPED {
                    continue;
                }
                if in_unit == 0 {
                    die = self.next_host_die();
                }
                self.write(lpn, die, Stream::Host);
                in_unit = (in_unit + 1) % unit;
            }
        }
    }

    /// The steady state of uniform random overwrites under greedy GC, written directly.
    ///
    /// Under uniform random writes every valid page is overwritten with probability 1/U
    /// per host write (U = user pages), so a block that has seen `w` host writes since it
    /// was written keeps a fraction exp(-w/U) of its pages. Cleaning the least-valid block
    /// (greedy ~ oldest for uniform traffic) gives the log-structured steady state of
    /// Desnoyers (SYSTOR 2012, "LRW"): with N used blocks of S slots, the block at age
    /// position x in [0, 1] holds exp(-x c) S valid slots, where c = N S (1 - u) / U and
    /// the victim's valid fraction u solves u = exp(-(1 - u) / rho), rho = U / (N S).
    /// Blocks are assigned ages round-robin over the dies, a random subset of each
    /// block's slots is valid (selection sampling), and the logical pages are placed by a
    /// random permutation.
    /// `keep_free` blocks per die stay free (GC's working room). `watch` hears how far it got.
    pub fn precondition_steady_state(
        &mut self,
        seed: u64,
        keep_free: u32,
        watch: &mut Watch<'_>,
    ) -> Result<(), Stopped> {
        let geo = self.geo.clone();
        let dies = geo.dies as usize;
        let s = geo.slots_per_block as u64;
        let u_total = u64::from(geo.user_lpns);
        let used = u64::from(geo.blocks) - u64::from(keep_free) * dies as u64;
        let rho = u_total as f64 / (used * s) as f64;
        let u = lrw_victim_utilization(rho);
        let c = used as f64 * s as f64 * (1.0 - u) / u_total as f64;
        // valid slots per block by age, scaled to sum to exactly U
        let mut counts: Vec<u64> =
            (0..used).map(|i| ((-(i as f64 + 0.5) / used as f64 * c).exp() * s as f64).round() as u64).collect();
        let mut sum: u64 = counts.iter().sum();
        let mut i = 0usize;
        while sum != u_total {
            let idx = i % counts.len();
            if sum < u_total && counts[idx] < s {
                counts[idx] += 1;
                sum += 1;
            } else if sum > u_total && counts[idx] > 0 {
                counts[idx] -= 1;
                sum -= 1;
            }
            i += 1;
        }
        let mut perm = Permutation::new(u_total, seed);
        // The logical pages land at random places in the 250 MB-scale l2p table, one
        // cache miss each; drawing them a few ahead and prefetching overlaps the misses.
        const LOOKAHEAD: u64 = 16;
        let mut upcoming = [0u32; LOOKAHEAD as usize];
        for slot in upcoming.iter_mut().take(u_total.min(LOOKAHEAD) as usize) {
            *slot = perm.next_index() as u32;
            prefetch_entry(&self.l2p, *slot as usize);
        }
        let mut placed = 0u64;
        let mut rng = SimRng::stream(seed, 77);
        // oldest first, so the newest blocks end up open-like at the end of each die
        for (age_rank, &valid) in counts.iter().enumerate().rev() {
            // a large drive takes most of a minute
            if age_rank % 1024 == 0 && !watch((counts.len() - 1 - age_rank) as f64 / counts.len() as f64) {
                return Err(Stopped);
            }
            let die = (age_rank % dies) as u32;
            let b = self.dies[die as usize].free.pop().expect("enough blocks for the steady state");
            self.state[b as usize] = BlockState::Full;
            self.mode[b as usize] = CellMode::Native;
            self.wp[b as usize] = s as u32;
            self.valid[b as usize] = valid as u32;
            self.erase_count[b as usize] = 1 + (mix64(seed ^ u64::from(b)) % 3) as u32;
            self.seq += 1;
            self.closed_seq[b as usize] = self.seq;
            // selection sampling: `valid` of the `s` slots, uniformly
            let mut need = valid;
            for k in 0..s {
                let left = s - k;
                if need > 0 && rng.below(left) < need {
                    let slot = b * geo.slots_per_block + k as u32;
                    let ring = (placed % LOOKAHEAD) as usize;
                    let lpn = upcoming[ring];
                    placed += 1;
                    if placed + LOOKAHEAD <= u_total {
                        upcoming[ring] = perm.next_index() as u32;
                        prefetch_entry(&self.l2p, upcoming[ring] as usize);
                    }
                    self.p2l[slot as usize] = lpn + 1;
                    self.l2p[lpn as usize] = slot + 1;
                    need -= 1;
                }
            }
            self.victims.insert(die, b, valid as u32);
        }
        self.mapped = u_total;
        self.counters = FtlCounters::default();
        Ok(())
    }

    /// Idle-time GC without timing until every die has `target` free blocks, or until
    /// cleaning would gain almost nothing (the best victim is nearly all valid). Returns
    /// the steps taken.
    pub fn collect_until_free(&mut self, target: u32) -> u64 {
        let mut steps = 0;
        let worthwhile = self.geo.slots_per_block - self.geo.unit_slots;
        for die in 0..self.geo.dies {
            while self.free_blocks(die) < target {
                let starting_victim = self.dies[die as usize].gc_victim.is_none();
                if starting_victim && self.min_victim_valid(die).is_none_or(|v| v > worthwhile) {
                    break;
                }
                if self.gc_step(die).is_none() {
                    break;
                }
                steps += 1;
            }
        }
        steps
    }

    /// Valid-slot counts of all full native blocks (for tests and reports).
    pub fn full_block_valid_counts(&self) -> Vec<u32> {
        (0..self.geo.blocks)
            .filter(|&b| self.state[b as usize] == BlockState::Full && self.mode[b as usize] == CellMode::Native)
            .map(|b| self.valid[b as usize])
            .collect()
    }

    /// Checks the mapping is consistent (tests).
    pub fn check_consistency(&self) -> Result<(), String> {
        let mut valid = vec![0u32; self.geo.blocks as usize];
        for (slot, &stored) in self.p2l.iter().enumerate() {
            if stored == NO_LPN {
                continue;
            }
            let lpn = stored - 1;
            if self.l2p[lpn as usize] != slot as u32 + 1 {
                return Err(format!("slot {slot} claims lpn {lpn} but l2p says {}", self.l2p[lpn as usize]));
            }
            valid[self.geo.block_of_slot(slot as u32) as usize] += 1;
        }
        if valid != self.valid {
            return Err("per-block valid counts disagree with the reverse map".into());
        }
        let mapped = self.l2p.iter().filter(|&&v| v != UNMAPPED).count() as u64;
        if mapped != self.mapped {
            return Err(format!("mapped count {} but {} mapped pages", self.mapped, mapped));
        }
        Ok(())
    }
}

/// Hints the CPU to bring `table[index]` into cache (it is about to be read or written).
#[inline]
fn prefetch_entry(table: &[u32], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = table.get(index) {
        // SAFETY: prefetching is a hint without architectural effect; `p` points into
        // the table.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((p as *const u32).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, index);
}

/// A mapping table (l2p or p2l: hundreds of MB for a consumer drive, accessed at random).
/// Allocated zeroed (the OS maps pages lazily, so an unwritten drive costs no memory)
/// and, on Linux, backed by transparent huge pages where allowed, which cuts the TLB
/// misses of random mapping updates. A copy (a run starting from a cached drive state)
/// is backed the same way, which a plain `Vec` clone would not be.
struct MapTable(Vec<u32>);

impl MapTable {
    fn zeroed(len: usize) -> MapTable {
        let v = vec![0u32; len];
        #[cfg(target_os = "linux")]
        {
            const HUGE: usize = 2 << 20;
            let start = v.as_ptr() as usize;
            let aligned = start.div_ceil(HUGE) * HUGE;
            let end = start + len * std::mem::size_of::<u32>();
            if end > aligned + HUGE {
                // SAFETY: the range lies inside the allocation we own; MADV_HUGEPAGE only
                // changes how the kernel backs it, not its contents.
                unsafe {
                    libc::madvise(aligned as *mut libc::c_void, (end - aligned) / HUGE * HUGE, libc::MADV_HUGEPAGE);
                }
            }
        }
        MapTable(v)
    }
}

impl Clone for MapTable {
    fn clone(&self) -> MapTable {
        let mut copy = MapTable::zeroed(self.0.len());
        copy.0.copy_from_slice(&self.0);
        copy
    }
}

impl std::ops::Deref for MapTable {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.0
    }
}

impl std::ops::DerefMut for MapTable {
    fn deref_mut(&mut self) -> &mut [u32] {
        &mut self.0
    }
}

/// Valid fraction of the block cleaned in the LRW steady state: the root in (0, 1) of
/// u = exp(-(1 - u) / rho) (Desnoyers 2012). f(u) = u - exp(-(1-u)/rho) is concave with
/// f(0) < 0 and f(1) = 0, f'(1) < 0 for rho < 1, so bisection on (0, 1) finds it.
pub fn lrw_victim_utilization(rho: f64) -> f64 {
    let rho = rho.clamp(1e-6, 0.999_999);
    let f = |u: f64| u - (-(1.0 - u) / rho).exp();
    let (mut lo, mut hi) = (0.0f64, 1.0 - 1e-12);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Write amplification of uniform random writes under LRW/greedy cleaning: 1 / (1 - u).
pub fn lrw_write_amplification(rho: f64) -> f64 {
    1.0 / (1.0 - lrw_victim_utilization(rho))
}
