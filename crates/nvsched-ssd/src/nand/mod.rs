//! The flash-based SSD model: a controller with a serialising command stage, a host link,
//! a volatile DRAM write buffer, an SLC write cache, flash channels and dies with planes,
//! and the FTL of [`ftl`]. Every resource keeps a "free at" time; a command books the
//! resources it needs in arrival order, so the model answers each command's completion
//! time as it arrives. Background work (GC, SLC folding) is booked lazily into idle gaps
//! when the next command arrives; foreground GC is booked in front of the host program
//! that needs the space.
//!
//! Effects that come out of this mechanism: reads wait behind programs and erases on
//! their die; throughput saturates with queue depth at the number of planes and
//! channels; writes run at SLC speed until the cache is full, then at native speed; on a
//! full drive, GC steals die time in proportion to the victims' valid data, so bandwidth
//! collapses and write amplification rises with occupancy; FUA writes wait for their
//! program while plain writes complete in the buffer.

pub mod config;
pub mod ftl;
pub mod timeline;

use crate::{Command, Device, DeviceCounters, DeviceSeries};
use config::{Geometry, NandConfig, LPN_BYTES};
pub use ftl::Watch;
use ftl::{CellMode, Ftl, Lookup, StepWork, Stream};
use nvsched_core::{Nanos, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use timeline::GapTimeline;

/// The drive state at the start of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Precondition {
    /// Nothing written (trimmed).
    Clean,
    /// The first `fraction` of the logical space written sequentially.
    Partial(f64),
    /// Every logical page written and random overwrites until GC is in steady state,
    /// then idle time for background GC.
    Full,
}

impl Precondition {
    pub fn parse(s: &str) -> Result<Precondition, String> {
        match s {
            "clean" => Ok(Precondition::Clean),
            "full" => Ok(Precondition::Full),
            other => {
                let frac = other
                    .strip_prefix("partial:")
                    .and_then(|f| f.parse::<f64>().ok())
                    .filter(|f| (0.0..=1.0).contains(f))
                    .ok_or_else(|| {
                        format!("precondition '{other}': expected clean, full or partial:FRACTION (0..=1)")
                    })?;
                Ok(Precondition::Partial(frac))
            }
        }
    }
}

const NO_PAGE: (u32, u32) = (u32::MAX, u32::MAX);

struct Timing {
    read_native: Nanos,
    /// Native read time by page type within a word line (LSB, CSB, MSB, ...): the
    /// lower pages sense faster. The mean over the types is `read_native`.
    read_by_page_type: Vec<Nanos>,
    read_slc: Nanos,
    prog_native: Nanos,
    prog_slc: Nanos,
    erase: Nanos,
    idle: Nanos,
    channel: ByteRate,
    link: ByteRate,
}

/// A transfer rate, with the time of one logical page (most transfers) worked out once.
struct ByteRate {
    ns_per_byte: f64,
    lpn_time: Nanos,
}

impl ByteRate {
    fn from_mbps(mbps: f64) -> ByteRate {
        let ns_per_byte = 1e3 / mbps;
        ByteRate { ns_per_byte, lpn_time: Self::rounded(LPN_BYTES, ns_per_byte) }
    }

    fn rounded(bytes: u64, ns_per_byte: f64) -> Nanos {
        Nanos((bytes as f64 * ns_per_byte).round() as u64)
    }

    /// The time to move `bytes`, rounded to the nearest nanosecond.
    #[inline]
    fn time(&self, bytes: u64) -> Nanos {
        if bytes == LPN_BYTES {
            self.lpn_time
        } else {
            Self::rounded(bytes, self.ns_per_byte)
        }
    }
}

fn us(v: f64) -> Nanos {
    Nanos((v * 1000.0).round() as u64)
}

/// A device's FTL: shared with the drive-state cache until the device first changes it,
/// so a run that only reads never copies the mapping tables (hundreds of MB).
enum FtlState {
    Shared(Arc<Ftl>),
    Owned(Box<Ftl>),
}

impl FtlState {
    #[inline]
    fn get(&self) -> &Ftl {
        match self {
            FtlState::Shared(shared) => shared,
            FtlState::Owned(owned) => owned,
        }
    }

    #[inline]
    fn get_mut(&mut self) -> &mut Ftl {
        if let FtlState::Shared(shared) = self {
            *self = FtlState::Owned(Box::new((**shared).clone()));
        }
        match self {
            FtlState::Owned(owned) => owned,
            FtlState::Shared(_) => unreachable!("made owned above"),
        }
    }
}

pub struct NandDevice {
    cfg: NandConfig,
    geo: Geometry,
    ftl: FtlState,
    t: Timing,
    queue_depth: u32,
    capacity_bytes: u64,
    // resource timelines
    plane_free: Vec<Nanos>,
    die_free: Vec<Nanos>,
    channels: Vec<GapTimeline>,
    ctrl_free: Nanos,
    link_in: GapTimeline,
    link_out: GapTimeline,
    /// Arrival time of the command being served: no booking starts before it.
    arrival: Nanos,
    /// Page held in each plane's register after a read (block, page).
    plane_page: Vec<(u32, u32)>,
    // DRAM write buffer
    buffer_cap_slots: u64,
    buffer_used_slots: u64,
    releases: BinaryHeap<Reverse<(Nanos, u32)>>,
    admit_floor: Nanos,
    latest_release: Nanos,
    staged: Vec<u32>,
    /// Programs not yet known to be finished, per block: (write pointer after, done).
    pending: HashMap<u32, Vec<(u32, Nanos)>>,
    gc_debt: Vec<f64>,
    read_ahead: ReadAhead,
    programs_booked: u64,
    last_activity: Nanos,
    // accounting
    die_busy: Vec<Nanos>,
    /// When each die's sense circuitry is free (used without independent plane reads).
    die_sense_free: Vec<Nanos>,
    /// With `read_priority`: each die's booked operations (start, end, the length of one
    /// flash operation within it), oldest first, kept until they end; and when each plane
    /// is free of reads.
    die_ops: Vec<std::collections::VecDeque<(Nanos, Nanos, Nanos)>>,
    plane_read_free: Vec<Nanos>,
    counters: Extra,
    series: Series,
}

#[derive(Default)]
struct Extra {
    host_read_bytes: u64,
    host_write_bytes: u64,
    buffer_read_hits: u64,
    plane_cache_hits: u64,
    reads_behind_program: u64,
    flushes: u64,
    discards: u64,
    fua_writes: u64,
    buffer_full_waits: u64,
    fg_gc_steps: u64,
    bg_steps: u64,
    min_free_blocks: u32,
    unmapped_reads: u64,
    read_ahead_hits: u64,
}

/// Sequential-read detection and the controller buffer holding prefetched pages.
struct ReadAhead {
    /// Logical pages to fetch ahead of a sequential stream (0 = off).
    window: u32,
    /// Recently seen streams: (next expected page, fetched up to).
    streams: [(u32, u32); 8],
    next_stream: usize,
    /// Prefetched pages and when their data is in controller memory.
    buffer: HashMap<u32, Nanos>,
    order: std::collections::VecDeque<u32>,
}

impl ReadAhead {
    fn new(window: u32) -> ReadAhead {
        ReadAhead {
            window,
            streams: [(u32::MAX, 0); 8],
            next_stream: 0,
            buffer: HashMap::new(),
            order: std::collections::VecDeque::new(),
        }
    }

    /// Records a read of [first, last); for a read continuing a stream, returns the
    /// range to prefetch (up to `window` pages ahead, not fetched yet).
    fn advance(&mut self, first: u32, last: u32, limit: u32) -> Option<(u32, u32)> {
        if let Some(s) = self.streams.iter_mut().find(|s| s.0 == first) {
            s.0 = last;
            let from = s.1.max(last);
            let to = last.saturating_add(self.window).min(limit);
            s.1 = s.1.max(to);
            return (from < to).then_some((from, to));
        }
        self.streams[self.next_stream] = (last, last);
        self.next_stream = (self.next_stream + 1) % self.streams.len();
        None
    }

    fn get(&self, lpn: u32) -> Option<Nanos> {
        if self.buffer.is_empty() {
            return None;
        }
        self.buffer.get(&lpn).copied()
    }

    fn store(&mut self, lpn: u32, ready: Nanos) {
        if self.buffer.insert(lpn, ready).is_none() {
            self.order.push_back(lpn);
        }
        // bounded: a few windows per stream
        while self.order.len() > (self.window as usize * 16).max(64) {
            if let Some(old) = self.order.pop_front() {
                self.buffer.remove(&old);
            }
        }
    }

    /// Forgets a page whose data changed.
    fn invalidate(&mut self, lpn: u32) {
        if !self.buffer.is_empty() {
            self.buffer.remove(&lpn);
        }
    }
}

/// Per-second device activity.
#[derive(Default)]
struct Series {
    nand_slots: Vec<f64>,
    gc_slots: Vec<f64>,
    host_slots: Vec<f64>,
}

impl Series {
    fn add(v: &mut Vec<f64>, at: Nanos, amount: f64) {
        let s = (at.0 / 1_000_000_000) as usize;
        if v.len() <= s {
            v.resize(s + 1, 0.0);
        }
        v[s] += amount;
    }
}

/// A kept drive state, or why it could not be built (its building was stopped).
type KeptState = Result<Arc<Ftl>, String>;

/// Preconditioned drive states kept for the runs of one sweep: a full drive takes
/// seconds to build and is the same for every run with the same configuration and seed,
/// so it is built once (runs that need it meanwhile wait for it) and later runs start
/// from it, copying it only when they first change it. Holds one FTL (hundreds of MB for
/// a consumer drive) per distinct state; drop it when the sweep ends.
#[derive(Default)]
pub struct DriveStates {
    states: Mutex<HashMap<String, Arc<OnceLock<KeptState>>>>,
}

impl DriveStates {
    pub fn new() -> DriveStates {
        DriveStates::default()
    }
}

/// The FTL of a drive in its configured initial state; `watch` hears how far building
/// it got, and may stop it (an error).
fn preconditioned_ftl(
    cfg: &NandConfig,
    geo: &Geometry,
    precondition: Precondition,
    seed: u64,
    watch: &mut Watch<'_>,
) -> Result<Ftl, String> {
    let mut ftl = Ftl::new(geo.clone(), cfg.gc_policy);
    let built = match precondition {
        Precondition::Clean => Ok(()),
        Precondition::Partial(f) => ftl.precondition_sequential(f, watch),
        Precondition::Full => ftl.precondition_steady_state(seed, cfg.gc_soft_free_blocks, watch).and_then(|()| {
            ftl.collect_until_free(cfg.bg_gc_free_blocks);
            if watch(1.0) {
                Ok(())
            } else {
                Err(ftl::Stopped)
            }
        }),
    };
    built.map_err(|ftl::Stopped| format!("interrupted while preparing its {} state", cfg.precondition))?;
    ftl.counters = ftl::FtlCounters::default();
    Ok(ftl)
}

impl NandDevice {
    /// A drive in its configured state (`precondition`); `watch` hears how far building
    /// that state got, and may stop it (an error).
    pub fn new(
        cfg: NandConfig,
        queue_depth: u32,
        capacity_bytes: u64,
        seed: u64,
        watch: &mut Watch<'_>,
    ) -> Result<NandDevice, String> {
        let geo = Geometry::new(&cfg, capacity_bytes)?;
        let ftl = preconditioned_ftl(&cfg, &geo, Precondition::parse(&cfg.precondition)?, seed, watch)?;
        Ok(NandDevice::with_ftl(cfg, geo, FtlState::Owned(Box::new(ftl)), queue_depth, capacity_bytes))
    }

    /// As `new`, starting from the state in `states` built for the same configuration
    /// (building it there if none is), shared until the device first changes it. A state
    /// whose building was stopped stays unbuilt for every run of `states`.
    pub fn new_from(
        cfg: NandConfig,
        queue_depth: u32,
        capacity_bytes: u64,
        seed: u64,
        states: &DriveStates,
        watch: &mut Watch<'_>,
    ) -> Result<NandDevice, String> {
        let geo = Geometry::new(&cfg, capacity_bytes)?;
        let precondition = Precondition::parse(&cfg.precondition)?;
        // only the full drive's preconditioning is random
        let seed_part = if matches!(precondition, Precondition::Full) { seed } else { 0 };
        let key = format!("{cfg:?}|{capacity_bytes}|{seed_part}");
        let state = states.states.lock().expect("no panics while held").entry(key).or_default().clone();
        let ftl =
            state.get_or_init(|| preconditioned_ftl(&cfg, &geo, precondition, seed, watch).map(Arc::new)).clone()?;
        // copied on the run's first change to it
        Ok(NandDevice::with_ftl(cfg, geo, FtlState::Shared(ftl), queue_depth, capacity_bytes))
    }

    fn with_ftl(cfg: NandConfig, geo: Geometry, ftl: FtlState, queue_depth: u32, capacity_bytes: u64) -> NandDevice {
        let bits = cfg.cell_bits.max(1);
        let read_by_page_type = (0..bits)
            .map(|i| {
                let pos = if bits == 1 { 0.0 } else { 2.0 * f64::from(i) / f64::from(bits - 1) - 1.0 };
                us(cfg.t_read_us * (1.0 + cfg.t_read_spread * pos))
            })
            .collect();
        let t = Timing {
            read_native: us(cfg.t_read_us),
            read_by_page_type,
            read_slc: us(cfg.t_read_slc_us),
            prog_native: us(cfg.t_prog_us),
            prog_slc: us(cfg.t_prog_slc_us),
            erase: us(cfg.t_erase_us),
            idle: us(cfg.idle_us),
            channel: ByteRate::from_mbps(cfg.channel_mbps),
            link: ByteRate::from_mbps(cfg.link_mbps),
        };
        let dies = geo.dies as usize;
        let min_free = (0..geo.dies).map(|d| ftl.get().free_blocks(d)).min().unwrap_or(0);
        NandDevice {
            buffer_cap_slots: (cfg.write_buffer_bytes / LPN_BYTES).max(u64::from(geo.unit_slots)),
            plane_free: vec![Nanos::ZERO; dies * geo.planes as usize],
            die_free: vec![Nanos::ZERO; dies],
            channels: vec![GapTimeline::default(); geo.channels as usize],
            plane_page: vec![NO_PAGE; dies * geo.planes as usize],
            gc_debt: vec![0.0; dies],
            read_ahead: ReadAhead::new((cfg.read_ahead_bytes / LPN_BYTES) as u32),
            programs_booked: 0,
            die_busy: vec![Nanos::ZERO; dies],
            die_sense_free: vec![Nanos::ZERO; dies],
            die_ops: vec![std::collections::VecDeque::new(); dies],
            plane_read_free: vec![Nanos::ZERO; dies * geo.planes as usize],
            counters: Extra { min_free_blocks: min_free, ..Extra::default() },
            cfg,
            geo,
            ftl,
            t,
            queue_depth,
            capacity_bytes,
            ctrl_free: Nanos::ZERO,
            link_in: GapTimeline::default(),
            link_out: GapTimeline::default(),
            arrival: Nanos::ZERO,
            buffer_used_slots: 0,
            releases: BinaryHeap::new(),
            admit_floor: Nanos::ZERO,
            latest_release: Nanos::ZERO,
            staged: Vec::new(),
            pending: HashMap::new(),
            last_activity: Nanos::ZERO,
            series: Series::default(),
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn ftl(&self) -> &Ftl {
        self.ftl.get()
    }

    // ---- resources --------------------------------------------------------------

    /// The controller's serialising stage, then its overlapping latency.
    fn controller(&mut self, now: Nanos, op: Op) -> Nanos {
        let (occupancy, latency) = match op {
            Op::Read => (self.cfg.ctrl_read_occupancy_ns, self.cfg.ctrl_read_latency_ns),
            _ => (self.cfg.ctrl_write_occupancy_ns, self.cfg.ctrl_write_latency_ns),
        };
        let start = self.ctrl_free.max(now);
        self.ctrl_free = start + Nanos(occupancy);
        self.ctrl_free + Nanos(latency)
    }

    fn link(&mut self, ready: Nanos, bytes: u64, inbound: bool) -> Nanos {
        let d = self.t.link.time(bytes);
        let line = if inbound || self.cfg.link_half_duplex { &mut self.link_in } else { &mut self.link_out };
        line.book(self.arrival, ready, d)
    }

    fn channel_xfer(&mut self, die: u32, ready: Nanos, bytes: u64) -> Nanos {
        let c = self.geo.channel_of_die(die) as usize;
        let d = self.t.channel.time(bytes);
        self.channels[c].book(self.arrival, ready, d)
    }

    fn planes(&self, die: u32) -> std::ops::Range<usize> {
        let p = self.geo.planes as usize;
        die as usize * p..(die as usize + 1) * p
    }

    /// Occupies a whole die (program, erase, relocation step) from `earliest`; a read
    /// with `read_priority` may go between its `flash_ops` operations.
    fn occupy_die(&mut self, die: u32, earliest: Nanos, duration: Nanos, flash_ops: u32) -> (Nanos, Nanos) {
        let planes = self.planes(die);
        let mut start = earliest.max(self.die_free[die as usize]);
        for p in planes.clone() {
            start = start.max(self.plane_free[p]);
        }
        let end = start + duration;
        self.die_free[die as usize] = end;
        for p in planes {
            self.plane_free[p] = end;
            self.plane_page[p] = NO_PAGE;
        }
        self.die_busy[die as usize] += duration;
        if self.cfg.read_priority {
            let granule = Nanos((duration.0 / u64::from(flash_ops.max(1))).max(1));
            let ops = &mut self.die_ops[die as usize];
            // no read comes before the command being served: what ended by then goes, so
            // the list holds the backlog only, also in a run without reads
            while ops.front().is_some_and(|&(_, end, _)| end <= self.arrival) {
                ops.pop_front();
            }
            ops.push_back((start, end, granule));
        }
        (start, end)
    }

    /// With `read_priority`: when the flash operation in progress on `die` at `t` ends
    /// (`t` itself between operations; a GC or folding step is one operation per page
    /// read or program); operations that ended by `t` are dropped.
    fn op_in_progress_ends(&mut self, die: u32, t: Nanos) -> Nanos {
        let ops = &mut self.die_ops[die as usize];
        while ops.front().is_some_and(|&(_, end, _)| end <= t) {
            ops.pop_front();
        }
        match ops.front() {
            Some(&(start, end, granule)) if start <= t => end.min(start + granule * ((t - start).0 / granule.0 + 1)),
            _ => t,
        }
    }

    // ---- background and foreground relocation ------------------------------------

    fn step_duration(&self, w: &StepWork) -> Nanos {
        let read = if w.slc_source { self.t.read_slc } else { self.t.read_native };
        let mut d = read * u64::from(w.page_reads) + self.t.prog_native * u64::from(w.programs);
        if !self.cfg.copyback {
            let bytes = 2 * u64::from(w.slots_moved) * LPN_BYTES;
            d += Nanos((bytes as f64 * self.t.channel.ns_per_byte) as u64);
        }
        if w.erased {
            d += self.t.erase;
        }
        d
    }

    fn book_step(&mut self, die: u32, work: StepWork, earliest: Nanos) -> Nanos {
        let ops = work.page_reads + work.programs + u32::from(work.erased);
        let (start, end) = self.occupy_die(die, earliest, self.step_duration(&work), ops);
        if !self.cfg.copyback && work.slots_moved > 0 {
            let bytes = 2 * u64::from(work.slots_moved) * LPN_BYTES;
            self.channel_xfer(die, start, bytes);
        }
        Series::add(&mut self.series.nand_slots, start, f64::from(work.slots_moved));
        Series::add(&mut self.series.gc_slots, start, f64::from(work.slots_moved));
        self.note_free_blocks(die);
        end
    }

    fn note_free_blocks(&mut self, die: u32) {
        self.counters.min_free_blocks = self.counters.min_free_blocks.min(self.ftl.get().free_blocks(die));
    }

    /// Idle-time folding and GC in the gap before `now`.
    fn background(&mut self, now: Nanos) {
        let window_start = self.last_activity + self.t.idle;
        if window_start >= now {
            return;
        }
        for die in 0..self.geo.dies {
            loop {
                let start = self.die_free[die as usize].max(window_start);
                if start >= now {
                    break;
                }
                let work = if self.ftl.get().slc_full_blocks(die) > 0 {
                    self.ftl.get_mut().fold_step(die)
                } else if self.ftl.get().free_blocks(die) < self.cfg.bg_gc_free_blocks {
                    self.ftl.get_mut().gc_step(die)
                } else {
                    None
                };
                let Some(work) = work else { break };
                self.counters.bg_steps += 1;
                self.book_step(die, work, window_start);
            }
        }
    }

    /// Frees space on `die` before a host program of `slots` slots: blocks until a free
    /// block exists at the hard threshold, and pays GC debt in proportion to the victim's
    /// valid data below the soft threshold.
    fn reclaim_for_host(&mut self, die: u32, slots: u32, now: Nanos) {
        let hard = self.cfg.gc_hard_free_blocks;
        while self.ftl.get().free_blocks(die) <= hard {
            // GC first; the SLC cache waits for idle time, as a static SLC buffer's data
            // does under sustained writes. But collecting a block full of valid data
            // frees nothing: then the cache is folded (a third of a block's data in each
            // SLC block), or a fill of the whole drive would never end
            let gc_frees = self.ftl.get_mut().has_gc_work(die)
                && self.ftl.get_mut().min_victim_valid(die).is_some_and(|valid| valid < self.geo.slots_per_block);
            let work = if gc_frees { self.ftl.get_mut().gc_step(die) } else { self.ftl.get_mut().fold_step(die) };
            let Some(work) = work else { break };
            self.counters.fg_gc_steps += 1;
            self.book_step(die, work, now);
        }
        if self.ftl.get().free_blocks(die) < self.cfg.gc_soft_free_blocks {
            let s = f64::from(self.geo.slots_per_block);
            let v = self.ftl.get_mut().min_victim_valid(die).map_or(s, f64::from);
            if v < s {
                self.gc_debt[die as usize] += f64::from(slots) * v / (s - v).max(1.0);
            }
            while self.gc_debt[die as usize] > 0.0 {
                let Some(work) = self.ftl.get_mut().gc_step(die) else {
                    self.gc_debt[die as usize] = 0.0;
                    break;
                };
                self.counters.fg_gc_steps += 1;
                self.gc_debt[die as usize] -= f64::from(work.slots_moved.max(1));
                self.book_step(die, work, now);
            }
        } else {
            self.gc_debt[die as usize] = 0.0;
        }
    }

    // ---- writes ------------------------------------------------------------------

    /// SLC blocks the cache may use per die now: the static part plus the dynamic part
    /// that shrinks as user data fills the drive.
    fn slc_budget_blocks_per_die(&self) -> u32 {
        let unwritten = (u64::from(self.geo.user_lpns)
            - self.ftl.get().mapped_lpns().min(u64::from(self.geo.user_lpns)))
            * LPN_BYTES;
        let dynamic = self.cfg.slc_dynamic_max_bytes.min(unwritten / u64::from(self.cfg.cell_bits));
        let bytes = self.cfg.slc_static_bytes + dynamic;
        let block_bytes = u64::from(self.geo.slc_slots_per_block) * LPN_BYTES;
        (bytes / block_bytes / u64::from(self.geo.dies)) as u32
    }

    fn use_slc(&self, die: u32) -> bool {
        self.cfg.slc_static_bytes + self.cfg.slc_dynamic_max_bytes > 0
            && self.ftl.get().free_blocks(die) > self.cfg.gc_soft_free_blocks
            && (self.ftl.get().slc_blocks(die) < self.slc_budget_blocks_per_die()
                || self.ftl.get().has_open(die, Stream::HostSlc))
    }

    /// Frees buffer space whose programs finished by `t`.
    fn drain_releases(&mut self, t: Nanos) {
        while let Some(&Reverse((at, slots))) = self.releases.peek() {
            if at > t {
                break;
            }
            self.releases.pop();
            self.buffer_used_slots -= u64::from(slots);
        }
    }

    /// Admits `slots` into the write buffer no earlier than `t`, in arrival order.
    fn admit(&mut self, t: Nanos, slots: u64) -> Nanos {
        let mut at = t.max(self.admit_floor);
        self.drain_releases(at);
        if self.buffer_used_slots + slots > self.buffer_cap_slots {
            self.counters.buffer_full_waits += 1;
        }
        while self.buffer_used_slots + slots > self.buffer_cap_slots {
            // Programs for staged data must be booked for space to come back.
            if self.releases.is_empty() {
                self.flush_staged(at, true);
            }
            let Some(Reverse((rel, n))) = self.releases.pop() else { break };
            at = at.max(rel);
            self.buffer_used_slots -= u64::from(n);
        }
        self.buffer_used_slots += slots;
        self.admit_floor = at;
        at
    }

    /// Programs staged data: full units only, or everything when `all`.
    /// Returns the latest program completion booked.
    fn flush_staged(&mut self, now: Nanos, all: bool) -> Nanos {
        let mut latest = Nanos::ZERO;
        loop {
            let die = self.ftl.get().peek_host_die();
            let slc = self.use_slc(die);
            let unit = if slc { self.geo.slc_unit_slots } else { self.geo.unit_slots } as usize;
            if self.staged.is_empty() || (!all && self.staged.len() < unit) {
                return latest;
            }
            let take = unit.min(self.staged.len());
            let batch: Vec<u32> = self.staged.drain(..take).collect();
            latest = latest.max(self.program_host_unit(&batch, slc, now));
        }
    }

    fn program_host_unit(&mut self, lpns: &[u32], slc: bool, now: Nanos) -> Nanos {
        let die = self.ftl.get_mut().next_host_die();
        let stream = if slc { Stream::HostSlc } else { Stream::Host };
        self.reclaim_for_host(die, lpns.len() as u32, now);
        let mut written = 0u32;
        let mut touched: Vec<(u32, u32)> = Vec::with_capacity(2);
        for &lpn in lpns {
            if !self.ftl.get().is_staged(lpn) {
                continue; // overwritten again in the buffer, or trimmed
            }
            let slot = self.ftl.get_mut().write(lpn, die, stream);
            written += 1;
            let block = self.geo.block_of_slot(slot);
            let wp_after = slot % self.geo.slots_per_block + 1;
            match touched.iter_mut().find(|(b, _)| *b == block) {
                Some(e) => e.1 = wp_after,
                None => touched.push((block, wp_after)),
            }
        }
        let mut done = now;
        if written > 0 {
            let bytes = u64::from(written) * LPN_BYTES;
            // firmware that schedules reads first moves a queued program's data over the
            // channel just before the die takes it, not while the program waits (where it
            // would hold the channel against reads)
            let ready = if self.cfg.read_priority {
                now.max(self.die_free[die as usize].saturating_sub(self.t.channel.time(bytes)))
            } else {
                now
            };
            let xfer_end = self.channel_xfer(die, ready, bytes);
            let prog = if slc { self.t.prog_slc } else { self.t.prog_native };
            let (start, end) = self.occupy_die(die, xfer_end, prog, 1);
            done = end;
            Series::add(&mut self.series.nand_slots, start, f64::from(written));
            Series::add(&mut self.series.host_slots, start, f64::from(written));
            for (block, wp_after) in touched {
                self.pending.entry(block).or_default().push((wp_after, end));
            }
            self.note_free_blocks(die);
        }
        self.releases.push(Reverse((done, lpns.len() as u32)));
        self.latest_release = self.latest_release.max(done);
        self.programs_booked += 1;
        if self.programs_booked.is_multiple_of(1024) {
            self.pending.retain(|_, v| v.last().is_some_and(|(_, d)| *d > now));
        }
        done
    }

    fn write(&mut self, cmd: &Command, now: Nanos) -> Nanos {
        let t = self.controller(now, Op::Write);
        let bytes = u64::from(cmd.len_bytes);
        self.counters.host_write_bytes += bytes;
        let t = self.link(t, bytes, true);
        let (first, last) = self.lpn_range(cmd);
        let slots = u64::from(last - first);
        let admitted = self.admit(t, slots);
        for lpn in first..last {
            self.ftl.get_mut().stage(lpn);
            self.staged.push(lpn);
            self.read_ahead.invalidate(lpn);
        }
        if cmd.fua && !self.cfg.power_loss_protection {
            self.counters.fua_writes += 1;
            return self.flush_staged(admitted, true).max(admitted);
        }
        self.flush_staged(admitted, false);
        admitted
    }

    fn flush(&mut self, now: Nanos) -> Nanos {
        self.counters.flushes += 1;
        let t = self.controller(now, Op::Flush);
        if self.cfg.power_loss_protection {
            return t;
        }
        let booked = self.flush_staged(t, true);
        t.max(booked).max(if self.latest_release > t { self.latest_release } else { t })
    }

    fn discard(&mut self, cmd: &Command, now: Nanos) -> Nanos {
        self.counters.discards += 1;
        let t = self.controller(now, Op::Discard);
        let (first, last) = self.lpn_range(cmd);
        for lpn in first..last {
            self.ftl.get_mut().trim(lpn);
            self.read_ahead.invalidate(lpn);
        }
        t
    }

    // ---- reads -------------------------------------------------------------------

    /// Completion time of a program covering `slot`, if it was not done by `t`.
    fn in_flight_program(&self, slot: u32, t: Nanos) -> bool {
        let block = self.geo.block_of_slot(slot);
        let Some(list) = self.pending.get(&block) else { return false };
        let offset = slot % self.geo.slots_per_block;
        list.iter().find(|(wp, _)| *wp > offset).is_some_and(|(_, done)| *done > t)
    }

    /// When the data of `lpn` is in controller memory, reading from flash if needed,
    /// for a read that reaches the flash stage at `t`.
    fn fetch(&mut self, lpn: u32, t: Nanos) -> Nanos {
        let slot = match self.ftl.get().lookup(lpn) {
            Lookup::Unmapped => {
                self.counters.unmapped_reads += 1;
                return t;
            }
            Lookup::Staged => {
                self.counters.buffer_read_hits += 1;
                return t;
            }
            Lookup::Slot(s) => s,
        };
        if self.in_flight_program(slot, t) {
            self.counters.buffer_read_hits += 1;
            return t;
        }
        let block = self.geo.block_of_slot(slot);
        let die = self.geo.die_of_block(block);
        let (plane, page) = self.geo.plane_page_of_slot(slot);
        let p = die as usize * self.geo.planes as usize + plane as usize;
        let sensed = if self.plane_page[p] == (block, page) {
            self.counters.plane_cache_hits += 1;
            // the register holds the page: no sense, only the plane's earlier reads (and,
            // without read priority, what is booked on it) come first
            let plane = if self.cfg.read_priority { self.plane_read_free[p] } else { self.plane_free[p] };
            plane.max(t)
        } else {
            let tr = match self.ftl.get().block_mode(block) {
                CellMode::Slc => self.t.read_slc,
                CellMode::Native => self.t.read_by_page_type[(page % self.cfg.cell_bits) as usize],
            };
            let die_busy = self.die_free[die as usize];
            let occupancy =
                if self.cfg.independent_plane_reads { Nanos(tr.0 / u64::from(self.geo.planes)) } else { tr };
            let mut start = if self.cfg.read_priority && die_busy > t {
                // ahead of the die's backlog: behind the operation in progress only, whose
                // successors start later by the read's share of the die
                let in_progress = self.op_in_progress_ends(die, t);
                if in_progress > t {
                    self.counters.reads_behind_program += 1;
                }
                self.die_free[die as usize] += occupancy;
                t.max(in_progress).max(self.plane_read_free[p])
            } else {
                if die_busy > t && die_busy >= self.plane_free[p] {
                    self.counters.reads_behind_program += 1;
                }
                t.max(self.plane_free[p]).max(die_busy)
            };
            if !self.cfg.independent_plane_reads {
                start = start.max(self.die_sense_free[die as usize]);
                self.die_sense_free[die as usize] = start + tr;
            }
            self.die_busy[die as usize] += occupancy;
            self.plane_page[p] = (block, page);
            start + tr
        };
        let out = self.channel_xfer(die, sensed, LPN_BYTES);
        self.plane_free[p] = self.plane_free[p].max(out);
        self.plane_read_free[p] = out;
        out
    }

    fn read(&mut self, cmd: &Command, now: Nanos) -> Nanos {
        let t = self.controller(now, Op::Read);
        self.counters.host_read_bytes += u64::from(cmd.len_bytes);
        let (first, last) = self.lpn_range(cmd);
        let mut ready = t;
        for lpn in first..last {
            let at = match self.read_ahead.get(lpn) {
                Some(prefetched) => {
                    self.counters.read_ahead_hits += 1;
                    prefetched.max(t)
                }
                None => self.fetch(lpn, t),
            };
            ready = ready.max(at);
        }
        if self.read_ahead.window > 0 {
            if let Some((from, to)) = self.read_ahead.advance(first, last, self.geo.user_lpns) {
                for lpn in from..to {
                    let at = self.fetch(lpn, t);
                    self.read_ahead.store(lpn, at);
                }
            }
        }
        self.link(ready, u64::from(cmd.len_bytes), false)
    }

    fn lpn_range(&self, cmd: &Command) -> (u32, u32) {
        let max = u64::from(self.geo.user_lpns);
        let first = (cmd.offset_bytes / LPN_BYTES).min(max);
        let last = (cmd.offset_bytes + u64::from(cmd.len_bytes)).div_ceil(LPN_BYTES).min(max);
        (first as u32, last as u32)
    }
}

impl Device for NandDevice {
    fn lay_out(&mut self, ranges_bytes: &[(u64, u64)]) {
        // a page the range covers any byte of holds data (the file system writes whole blocks)
        let lpns = || {
            ranges_bytes.iter().map(|&(start, len)| start / LPN_BYTES..start.saturating_add(len).div_ceil(LPN_BYTES))
        };
        // A drive state shared with other runs is copied only if the files need pages
        // written (jobs reading data the preconditioning wrote need none).
        if !self.ftl.get().holds_data(lpns()) {
            self.ftl.get_mut().fill_sequential(lpns());
            self.ftl.get_mut().counters = ftl::FtlCounters::default();
        }
        self.counters.min_free_blocks = (0..self.geo.dies).map(|d| self.ftl.get().free_blocks(d)).min().unwrap_or(0);
    }

    fn submit(&mut self, cmd: &Command, now: Nanos) -> Nanos {
        // no channel or link booking starts before this arrival
        self.arrival = now;
        self.background(now);
        let done = match cmd.op {
            Op::Read => self.read(cmd, now),
            Op::Write => self.write(cmd, now),
            Op::Flush => self.flush(now),
            Op::Discard => self.discard(cmd, now),
        };
        self.last_activity = self.last_activity.max(done);
        done
    }

    /// The mapping entry of a random page is a cache miss (the table is hundreds of MB);
    /// fetching it while the request waits in the host overlaps the miss with other work.
    #[inline]
    fn prefetch(&self, offset_bytes: u64) {
        self.ftl.get().prefetch_mapping(offset_bytes / LPN_BYTES);
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn counters(&self, now: Nanos) -> DeviceCounters {
        let f = &self.ftl.get().counters;
        let c = &self.counters;
        let span = now.as_secs_f64().max(1e-12);
        let erase = self.ftl.get().erase_counts();
        let mean_erase = erase.iter().map(|&e| f64::from(e)).sum::<f64>() / erase.len().max(1) as f64;
        let free_now: u32 = (0..self.geo.dies).map(|d| self.ftl.get().free_blocks(d)).sum();
        DeviceCounters {
            model: "nand".into(),
            host_read_bytes: c.host_read_bytes,
            host_write_bytes: c.host_write_bytes,
            host_pages_written: f.host_slots_written,
            nand_pages_written: f.nand_slots_written,
            write_amplification: if f.host_slots_written > 0 {
                f.nand_slots_written as f64 / f.host_slots_written as f64
            } else {
                0.0
            },
            gc_runs: f.gc_victims,
            gc_pages_moved: f.gc_slots_moved,
            erases: f.erases,
            slc_writes: f.slc_slots_written,
            slc_folds: f.fold_blocks,
            buffer_read_hits: c.buffer_read_hits,
            reads_behind_program: c.reads_behind_program,
            flushes: c.flushes,
            discards: c.discards,
            unit_utilization: self.die_busy.iter().map(|b| (b.as_secs_f64() / span).min(1.0)).collect(),
            extra: vec![
                ("over_provisioning".into(), self.geo.over_provisioning()),
                ("fold_pages_moved".into(), f.fold_slots_moved as f64),
                ("plane_cache_hits".into(), c.plane_cache_hits as f64),
                ("unmapped_reads".into(), c.unmapped_reads as f64),
                ("read_ahead_hits".into(), c.read_ahead_hits as f64),
                ("fua_writes".into(), c.fua_writes as f64),
                ("buffer_full_waits".into(), c.buffer_full_waits as f64),
                ("foreground_gc_steps".into(), c.fg_gc_steps as f64),
                ("background_steps".into(), c.bg_steps as f64),
                ("min_free_blocks_per_die".into(), f64::from(c.min_free_blocks)),
                ("free_blocks_end".into(), f64::from(free_now)),
                ("slc_blocks_end".into(), self.ftl.get().slc_blocks_total() as f64),
                ("mean_erase_count".into(), mean_erase),
                ("mapped_fraction".into(), self.ftl.get().mapped_lpns() as f64 / f64::from(self.geo.user_lpns)),
            ],
            // up to the run's end: a die's work is booked when it is decided, so background
            // folding and collection booked at the end would draw activity after the run
            series: [
                ("host_pages_programmed", &self.series.host_slots),
                ("nand_pages_programmed", &self.series.nand_slots),
                ("gc_and_fold_pages_moved", &self.series.gc_slots),
            ]
            .into_iter()
            .map(|(name, values)| {
                let seconds = (now.as_secs_f64().ceil() as usize).min(values.len());
                DeviceSeries::per_second(name, &values[..seconds])
            })
            .collect(),
        }
    }
}
