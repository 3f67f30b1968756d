//! Address, size and direction generators: what the next I/O of a job is. Engines ask
//! [`crate::driver::JobDriver`] *when*; this file decides *what*.

use crate::randmap::{self, RandomMap};
use crate::spec::{BlockSizes, Distribution, JobSpec, Pattern, ZoneSize, ZoneSpec};
use nvsched_core::{IoPrio, Op, Permutation, SimRng};

/// `sync_file_range`'s flags, numbered as Linux does; none for an fsync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncRange(pub u8);

impl SyncRange {
    /// An fsync (or fdatasync), not a range.
    pub const FSYNC: SyncRange = SyncRange(0);
    pub const WAIT_BEFORE: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const WAIT_AFTER: u8 = 4;

    pub fn is_fsync(self) -> bool {
        self.0 == 0
    }
    /// Starts writeback of the range's dirty pages.
    pub fn writes(self) -> bool {
        self.0 & Self::WRITE != 0
    }
    pub fn waits_before(self) -> bool {
        self.0 & Self::WAIT_BEFORE != 0
    }
    pub fn waits_after(self) -> bool {
        self.0 & Self::WAIT_AFTER != 0
    }
    /// All three flags: the kernel writes back with WB_SYNC_ALL (sync requests).
    pub fn is_data_sync(self) -> bool {
        self.0 == Self::WAIT_BEFORE | Self::WRITE | Self::WAIT_AFTER
    }
}

/// One I/O a job wants to do, in device byte offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoUnit {
    pub op: Op,
    /// A flush's range and `sync_file_range` flags: the writes since the job's last
    /// sync (`sync_file_range=`), or none (an fsync of the whole file).
    pub sync_range: SyncRange,
    pub offset_bytes: u64,
    pub len_bytes: u32,
    /// The priority it is issued with (the driver's choice: the job's, or `cmdprio`'s).
    pub prio: IoPrio,
    /// Which of the clone's files it goes to (0 unless the job has several).
    pub file: u16,
}

/// The byte range of the device a job clone works in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
    /// Where the region begins in its file, and the file's length (fio's `file_offset`
    /// and `real_file_size`): where holed sequential I/O (`rw=write:8k`) wraps or ends
    /// depends on them, not only on the region.
    pub offset_in_file: u64,
    pub file_bytes: u64,
    /// Where in the file the passes after the first start: fio's clear_io_state takes the
    /// start offset again, from the file as the clone's own setup left it (a percentage
    /// offset of a file the clone made longer moves; an appending job's goes to the end
    /// of what it appended, leaving no room). Mostly `offset_in_file`.
    pub later_offset_in_file: u64,
}

impl Region {
    /// A region that is a whole file of `len` bytes (placed at `start`).
    pub const fn new(start: u64, len: u64) -> Region {
        Region { start, len, offset_in_file: 0, file_bytes: len, later_offset_in_file: 0 }
    }
}

impl Region {
    /// The region of the passes after the first: from `later_offset_in_file`, at most
    /// `len` bytes and no further than the file's end (it may hold no block at all).
    pub fn for_later_passes(&self) -> Region {
        let later = self.later_offset_in_file;
        Region {
            start: self.start.saturating_sub(self.offset_in_file) + later,
            len: self.len.min(self.file_bytes.saturating_sub(later)),
            offset_in_file: later,
            ..*self
        }
    }
}

/// How the next offset is found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// `zonemode=strided`: inside the current zone.
    Zone,
    /// On from the direction's previous I/O.
    Sequential,
    /// The previous I/O's offset again (`rw_sequencer=identical`).
    Repeat,
    /// Drawn at random.
    Random,
}

/// Draws the next I/O of one job clone.
#[derive(Debug)]
pub struct IoGenerator {
    region: Region,
    pattern: Pattern,
    read_fraction: f64,
    sizes: [SizeChooser; 3],
    /// `bs_is_seq_rand`: sizes by sequential (read entry) or random (write entry).
    seq_rand_sizes: bool,
    /// `trimwrite`: the trim just drawn, whose blocks the next I/O writes.
    trimmed: Option<IoUnit>,
    offsets: OffsetChooser,
    /// Next sequential offset per direction (relative to the region).
    seq_pos: [u64; 3],
    /// `rw=read:N`: bytes added after each sequential I/O (negative: backwards).
    seq_skip: i64,
    /// `rw=randread:N`: I/Os per random offset, and how many of the current run are left.
    random_run: u32,
    run_left: [u32; 3],
    /// `rw_sequencer=identical`: a run repeats its first offset instead of going on
    /// from it; `last_start` is the previous I/O's offset per direction.
    identical: bool,
    last_start: [u64; 3],
    /// `percentage_random` per direction (100: every run starts at a random offset).
    percentage_random: [u8; 3],
    align: u64,
    rng_dir: SimRng,
    rng_size: SimRng,
    rng_offset: SimRng,
    /// Draws whether a run starts at a random offset (`percentage_random`).
    rng_random: SimRng,
    /// `zonemode=strided` (boxed: few jobs have it).
    strided: Option<Box<Strided>>,
    /// Sequential passes over the region completed: no room was left for the next block
    /// (fio's "file done"; the random map counts its own passes).
    sequential_passes: u64,
    /// Whether the offsets are one pass over the region at a time, so that passes mean
    /// something (see `passes_completed`).
    counts_passes: bool,
}

/// Where a strided job's zone is, and how much it has transferred there.
#[derive(Debug)]
struct Strided {
    zones: ZoneSpec,
    start: u64,
    done: u64,
}

impl IoGenerator {
    /// `seed` should already be specific to the job clone.
    pub fn new(spec: &JobSpec, region: Region, seed: u64) -> Result<IoGenerator, String> {
        let align = u64::from(spec.random_align());
        let max_bs = u64::from(spec.max_bs());
        if region.len < max_bs.max(align) {
            return Err(format!(
                "job '{}': its region ({} bytes) is smaller than its largest block or its blockalign ({} bytes)",
                spec.name,
                region.len,
                max_bs.max(align)
            ));
        }
        let blocks = region.len / align;
        let offsets = if !spec.pattern.is_random() {
            OffsetChooser::Sequential
        } else {
            match spec.distribution {
                Distribution::Uniform if spec.norandommap => OffsetChooser::Uniform { blocks },
                // an I/O may span several blocks: a bit map, as fio's, cuts it at done ones
                Distribution::Uniform if max_bs > align && blocks <= randmap::MAX_BLOCKS => {
                    OffsetChooser::Map(Box::new(RandomMap::new(blocks)))
                }
                Distribution::Uniform => OffsetChooser::Permutation(Permutation::new(blocks, seed)),
                Distribution::Zoned(ref zones) => OffsetChooser::Zoned(zoned_layout(zones, blocks, align)),
                ref skewed => OffsetChooser::skewed(skewed, blocks),
            }
        };
        // with random runs, backward skips or sequential stretches the offsets are not one
        // pass (a forward skip, `rw=write:8k`, is: it ends past the end; strided zones end
        // a pass only where a block finds no room)
        let counts_passes = (spec.rw_modifier == 0 || (!spec.pattern.is_random() && spec.rw_modifier > 0))
            && spec.percentage_random == [100; 3]
            && matches!(offsets, OffsetChooser::Sequential | OffsetChooser::Permutation(_) | OffsetChooser::Map(_));
        Ok(IoGenerator {
            region,
            pattern: spec.pattern,
            read_fraction: f64::from(spec.rwmix_read_pct) / 100.0,
            sizes: std::array::from_fn(|d| SizeChooser::new(&spec.bs[d])),
            seq_rand_sizes: spec.bs_is_seq_rand,
            trimmed: None,
            offsets,
            seq_pos: [0; 3],
            // random runs (`randread:N`) continue without a skip
            seq_skip: if spec.pattern.is_random() { 0 } else { spec.rw_modifier },
            random_run: if spec.pattern.is_random() { spec.rw_modifier.max(1) as u32 } else { 1 },
            run_left: [0; 3],
            identical: spec.rw_identical && spec.pattern.is_random(),
            last_start: [0; 3],
            percentage_random: spec.percentage_random,
            align,
            rng_dir: SimRng::stream(seed, 1),
            rng_size: SimRng::stream(seed, 2),
            rng_offset: SimRng::stream(seed, 3),
            rng_random: SimRng::stream(seed, 6),
            strided: spec.zones.strided.then(|| Box::new(Strided { zones: spec.zones, start: 0, done: 0 })),
            sequential_passes: 0,
            counts_passes,
        })
    }

    /// Whether the offsets go over the region one pass at a time, so that
    /// [`passes_completed`](Self::passes_completed) says where each pass ends.
    pub fn counts_passes(&self) -> bool {
        self.counts_passes
    }

    /// Passes over the region this generator has completed, sequential or through the
    /// random map (0 where offsets are not one pass at a time): the I/O just drawn is the
    /// first of a new pass when this grew.
    #[inline]
    pub fn passes_completed(&self) -> u64 {
        if self.counts_passes {
            self.sequential_passes + self.offsets.passes()
        } else {
            0
        }
    }

    pub fn region(&self) -> Region {
        self.region
    }

    /// The next I/O.
    #[inline]
    pub fn next_unit(&mut self) -> IoUnit {
        self.next_unit_steered(|op| op)
    }

    /// The next I/O, where a mixed read/write pattern's drawn direction goes through
    /// `steer` before its offset and size are drawn (rate pacing may take the other
    /// direction, as fio's rate_ddir does).
    #[inline]
    pub fn next_unit_steered(&mut self, steer: impl Fn(Op) -> Op) -> IoUnit {
        if let Some(write) = self.trimmed.take() {
            // `trimwrite`: the blocks just trimmed are written
            return IoUnit { op: Op::Write, ..write };
        }
        let op = match self.pattern.single_op() {
            Some(op) => op,
            None if self.pattern.is_trimwrite() => Op::Discard,
            // fio keeps runs of one direction; a per-I/O draw has the same long-run mix.
            None => steer(if self.rng_dir.chance(self.read_fraction) { Op::Read } else { Op::Write }),
        };
        let d = op.index();
        let step = if self.strided.is_some() {
            Step::Zone
        } else if matches!(self.offsets, OffsetChooser::Sequential) {
            Step::Sequential
        } else if self.run_left[d] > 0 {
            // `randread:N`: sequential until the next random offset
            self.run_left[d] -= 1;
            if self.identical {
                Step::Repeat
            } else {
                Step::Sequential
            }
        } else if self.percentage_random[d] < 100 && !self.run_starts_random(d) {
            // fio's should_do_random said no: this run follows on from the last I/O
            self.run_left[d] = self.random_run - 1;
            Step::Sequential
        } else {
            Step::Random
        };
        let sizes = &self.sizes[if self.seq_rand_sizes { self.seq_rand_entry(step) } else { d }];
        // as fio, a size that would pass the end is drawn again among those that fit
        // (offset first, then size); with no room for the smallest, the pass is over
        let (rel, len64) = match step {
            Step::Zone => {
                let len = u64::from(sizes.draw(&mut self.rng_size));
                (self.next_in_zone(d, len), len)
            }
            Step::Sequential => {
                let room = self.region.len.saturating_sub(self.seq_pos[d]);
                let len = u64::from(sizes.draw_within(&mut self.rng_size, room));
                (self.next_sequential(d, len), len)
            }
            Step::Repeat => {
                let len = u64::from(sizes.draw(&mut self.rng_size));
                (self.last_start[d].min(self.region.len - len), len)
            }
            Step::Random => {
                let block = self.offsets.draw(&mut self.rng_offset);
                let pos = block * self.align;
                let mut len64 = u64::from(sizes.draw_within(&mut self.rng_size, self.region.len - pos));
                if let OffsetChooser::Map(map) = &mut self.offsets {
                    // cut at the first block this pass has done (fio's mark_random_map)
                    let covered = map.mark(block, len64.div_ceil(self.align)) * self.align;
                    len64 = len64.min(covered);
                }
                let pos = if pos + len64 > self.region.len {
                    (self.region.len - len64) / self.align * self.align
                } else {
                    pos
                };
                // a run (`randread:N`) or a sequential stretch (`percentage_random`) goes on from here
                self.run_left[d] = self.random_run - 1;
                self.seq_pos[d] = pos + len64;
                (pos, len64)
            }
        };
        if self.identical {
            self.last_start[d] = rel;
        }
        let unit = IoUnit {
            op,
            sync_range: SyncRange::FSYNC,
            offset_bytes: self.region.start + rel,
            len_bytes: len64 as u32,
            prio: IoPrio::default(),
            file: 0,
        };
        if self.pattern.is_trimwrite() {
            self.trimmed = Some(unit);
        }
        unit
    }

    /// `bs_is_seq_rand`: the read entry sizes sequential I/O, the write entry random I/O.
    #[cold]
    #[inline(never)]
    fn seq_rand_entry(&self, step: Step) -> usize {
        if step == Step::Random || (step == Step::Zone && self.pattern.is_random()) {
            Op::Write.index()
        } else {
            Op::Read.index()
        }
    }

    /// Whether a run of direction `d` starts at a random offset: `percentage_random`% of
    /// them do (fio's should_do_random). Out of line: only such jobs come here.
    #[cold]
    #[inline(never)]
    fn run_starts_random(&mut self, d: usize) -> bool {
        self.rng_random.below(100) < u64::from(self.percentage_random[d])
    }

    /// `zonemode=strided`: the next offset inside the current zone, sequential (with
    /// `rw=...:N`'s skip) or uniformly random (fio's random map restarts with each zone;
    /// draws here may repeat), moving to the next zone once `zonesize` bytes went to this
    /// one: fio's setup_strided_zone_mode, then get_next_offset with the zone's start as
    /// the file offset. An offset fio finds no room for (past the region, counted from the
    /// zone, or a block past the end of the file) ends the pass, and the next starts again
    /// in the first zone, as fio's next loop does.
    #[cold]
    #[inline(never)]
    fn next_in_zone(&mut self, d: usize, len: u64) -> u64 {
        if let Some(pos) = self.try_in_zone(d, len) {
            return pos;
        }
        self.sequential_passes += 1;
        let z = self.strided.as_deref_mut().expect("strided");
        (z.start, z.done) = (0, 0);
        self.seq_pos = [0; 3];
        // a first block that does not fit either (a zone range past the file's end)
        // goes where it fits
        self.try_in_zone(d, len).unwrap_or(0).min(self.region.len.saturating_sub(len))
    }

    fn try_in_zone(&mut self, d: usize, len: u64) -> Option<u64> {
        let (in_file, file_bytes) = (self.region.offset_in_file, self.region.file_bytes);
        let z = self.strided.as_deref_mut().expect("strided");
        if z.done >= z.zones.size {
            z.done = 0;
            z.start += z.zones.range + z.zones.skip;
            // fio compares the zone's place in the file with the file's size
            if in_file + z.start >= file_bytes {
                z.start = 0;
            }
            self.seq_pos = [z.start; 3];
        }
        // a zone read for more than its range is gone over again
        if self.seq_pos[d] >= z.start + z.zones.range {
            self.seq_pos[d] = z.start;
        }
        // fio takes the zone's start as the file offset
        let (zone_start, base) = (z.start, in_file + z.start);
        let from_zone = if self.pattern.is_random() {
            let blocks = z.zones.range.saturating_sub(len) / self.align + 1;
            self.rng_offset.below(blocks) * self.align
        } else {
            self.fio_seq_offset(base, self.seq_pos[d].saturating_sub(zone_start))?
        };
        if !self.fio_fits(base, from_zone, len) {
            return None;
        }
        let pos = zone_start + from_zone;
        let z = self.strided.as_deref_mut().expect("strided");
        z.done += len;
        self.seq_pos[d] = pos + len;
        Some(pos)
    }

    /// fio's get_next_seq_offset from file offset `base` (the region's, or a zone's,
    /// place in the file), after a block that ended `last` bytes past it: the next
    /// position from `base`, `rw=...:N`'s skip on (none for the first block); one that
    /// lands at or past the file's size goes round to `base` itself, counted from
    /// `base`, as fio compares that position with the size of the whole file and takes
    /// the file offset for it. None where the last block ended at or past the file's end.
    fn fio_seq_offset(&self, base: u64, last: u64) -> Option<u64> {
        let file_bytes = self.region.file_bytes;
        if base + last >= file_bytes {
            return None;
        }
        let pos = if last > 0 { last + self.seq_skip.max(0) as u64 } else { 0 };
        Some(if pos >= file_bytes { base } else { pos })
    }

    /// fio's get_next_offset and fill_io_u: a block of `len` at `pos` from file offset
    /// `base` starts inside the region and ends inside the file (else the pass ends).
    fn fio_fits(&self, base: u64, pos: u64, len: u64) -> bool {
        pos < self.region.len && base + pos + len <= self.region.file_bytes
    }

    /// Direction `d`'s next sequential position (back to the start when a block of `len`
    /// would pass the end), then advanced by the block and `rw=...:N`'s skip. With a
    /// negative skip fio wraps from the start to the end of the region. Going back to the
    /// start ends a pass, unless a forward skip jumped past the end from a block that
    /// ended short of it: that wraps round within the pass (fio's holed I/O: `rw=read:4k`
    /// with bs=4k goes round again, `rw=read:8k` ends).
    #[inline]
    fn next_sequential(&mut self, d: usize, len: u64) -> u64 {
        if self.seq_skip > 0 {
            return self.next_holed(d, len);
        }
        let pos = if self.seq_pos[d] + len > self.region.len {
            // fio goes round within the pass only when the skip reached the end from a
            // block that ended short of it; a skip that stops short of the end, where the
            // next block does not fit, ends the pass (`rw=read:4k bs=8k` over 64 KiB: 5)
            let skip_from_short = self.seq_skip > 0
                && self.seq_pos[d] >= self.region.len
                && self.seq_pos[d].saturating_sub(self.seq_skip as u64) < self.region.len;
            self.sequential_passes += u64::from(!skip_from_short);
            0
        } else {
            self.seq_pos[d]
        };
        let next = (pos + len) as i64 + self.seq_skip;
        self.seq_pos[d] = if next < 0 { (self.region.len as i64 + self.seq_skip).max(0) as u64 } else { next as u64 };
        pos
    }

    /// `rw=...:N` with N > 0: fio's get_next_seq_offset and get_next_offset from the
    /// region's offset in its file; where they find no room the pass ends and the next
    /// starts at the region's start. `seq_pos` holds the next position with the skip
    /// added (0 at a pass's start), as the size drawn for it needs.
    fn next_holed(&mut self, d: usize, len: u64) -> u64 {
        let base = self.region.offset_in_file;
        let last = self.seq_pos[d].saturating_sub(self.seq_skip as u64);
        let pos = self.fio_seq_offset(base, last).filter(|&pos| self.fio_fits(base, pos, len)).unwrap_or_else(|| {
            self.sequential_passes += 1;
            0
        });
        self.seq_pos[d] = pos + len + self.seq_skip as u64;
        pos
    }
}

#[derive(Debug)]
enum SizeChooser {
    Fixed(u32),
    /// Multiples of `min` from `min` to `max`.
    Range {
        min: u32,
        steps: u64,
    },
    /// Cumulative weights in [0, 1], and the largest size.
    Split {
        cumulative: Vec<(u32, f64)>,
        max: u32,
    },
}

impl SizeChooser {
    fn new(bs: &BlockSizes) -> SizeChooser {
        match bs {
            BlockSizes::Fixed(b) => SizeChooser::Fixed(*b),
            BlockSizes::Range { min, max } => SizeChooser::Range { min: *min, steps: u64::from(max / min) },
            BlockSizes::Split(entries) => {
                let total: f64 = entries.iter().map(|(_, w)| w).sum();
                let mut acc = 0.0;
                let cumulative = entries
                    .iter()
                    .map(|(b, w)| {
                        acc += w / total;
                        (*b, acc)
                    })
                    .collect();
                let max = entries.iter().map(|(b, _)| *b).max().unwrap_or(0);
                SizeChooser::Split { cumulative, max }
            }
        }
    }

    #[inline]
    fn draw(&self, rng: &mut SimRng) -> u32 {
        match self {
            SizeChooser::Fixed(b) => *b,
            SizeChooser::Range { min, steps } => min * (1 + rng.below(*steps) as u32),
            SizeChooser::Split { cumulative, .. } => Self::split_size(cumulative, rng.unit_f64()),
        }
    }

    /// The split's size at cumulative share `u` in [0, 1).
    #[inline]
    fn split_size(cumulative: &[(u32, f64)], u: f64) -> u32 {
        cumulative.iter().find(|(_, c)| u < *c).map_or(cumulative[cumulative.len() - 1].0, |(b, _)| *b)
    }

    /// A size of at most `room` bytes, drawn as fio redraws until one fits: uniformly
    /// among the range's sizes that fit, or among the split's by their shares. Where even
    /// the smallest does not fit (or all do), the same draw as `draw`.
    #[inline]
    fn draw_within(&self, rng: &mut SimRng, room: u64) -> u32 {
        match self {
            SizeChooser::Fixed(b) => *b,
            SizeChooser::Range { min, steps } => {
                let fit = (room / u64::from(*min)).min(*steps);
                min * (1 + rng.below(if fit == 0 { *steps } else { fit }) as u32)
            }
            SizeChooser::Split { max, .. } if room >= u64::from(*max) => self.draw(rng),
            SizeChooser::Split { cumulative, .. } => Self::draw_split_within(cumulative, rng, room),
        }
    }

    /// The split's draw restricted to the sizes within `room` (out of line: only at the
    /// end of a region).
    #[cold]
    #[inline(never)]
    fn draw_split_within(cumulative: &[(u32, f64)], rng: &mut SimRng, room: u64) -> u32 {
        let shares = cumulative.iter().scan(0.0, |below, &(bs, c)| {
            let share = c - *below;
            *below = c;
            Some((bs, if u64::from(bs) <= room { share } else { 0.0 }))
        });
        let fitting: f64 = shares.clone().map(|(_, w)| w).sum();
        let u = rng.unit_f64();
        if fitting <= 0.0 {
            return Self::split_size(cumulative, u);
        }
        let mut target = u * fitting;
        let mut last_fitting = 0;
        for (bs, w) in shares {
            if w > 0.0 {
                last_fitting = bs;
                if target < w {
                    return bs;
                }
                target -= w;
            }
        }
        last_fitting
    }
}

#[derive(Debug)]
enum OffsetChooser {
    Sequential,
    /// Independent uniform draws (`norandommap`).
    Uniform {
        blocks: u64,
    },
    /// Every block once per pass, in a pseudo-random order (fio's random map, in O(1)
    /// memory).
    Permutation(Permutation),
    /// Every block once per pass, for I/Os that span blocks (fio's random map as a bit
    /// map; boxed: few jobs have it).
    Map(Box<RandomMap>),
    Zipf(Zipf),
    Pareto {
        blocks: u64,
        power: f64,
        offset: u64,
    },
    Normal {
        blocks: u64,
        stddev: u64,
        offset: u64,
    },
    /// fio's `zoned`: a zone by its share of accesses, then a uniform block in it.
    Zoned(Vec<Zone>),
}

#[derive(Debug)]
struct Zone {
    /// Accesses up to and including this zone, as a fraction of all.
    cumulative: f64,
    first_block: u64,
    blocks: u64,
}

/// The zones of a `zoned`/`zoned_abs` distribution over `blocks` blocks of `align`
/// bytes, one after another from the start; a zone that would pass the end is cut there.
fn zoned_layout(zones: &[(f64, ZoneSize)], blocks: u64, align: u64) -> Vec<Zone> {
    let total: f64 = zones.iter().map(|(a, _)| a).sum();
    let (mut first, mut cumulative) = (0u64, 0.0);
    let mut layout = Vec::with_capacity(zones.len());
    for &(access, size) in zones {
        let wanted = match size {
            ZoneSize::Percent(p) => (blocks as f64 * p / 100.0) as u64,
            ZoneSize::Bytes(b) => b / align,
            ZoneSize::Rest => blocks.saturating_sub(first),
        };
        let first_block = first.min(blocks - 1);
        let len = wanted.max(1).min(blocks - first_block);
        cumulative += access / total;
        layout.push(Zone { cumulative, first_block, blocks: len });
        first = first_block + len;
    }
    layout
}

/// fio scatters the ranks of skewed distributions over the region with this hash, so hot
/// blocks are not adjacent.
#[inline]
fn scatter(rank: u64) -> u64 {
    rank.wrapping_mul(0x61c8_8646_80b5_83eb)
}

impl OffsetChooser {
    /// A zipf, pareto or normal draw below `n` (uniform for any other distribution).
    fn skewed(distribution: &Distribution, n: u64) -> OffsetChooser {
        match *distribution {
            Distribution::Zipf { theta, center } => OffsetChooser::Zipf(Zipf::new(n, theta, center)),
            Distribution::Pareto { h, center } => {
                OffsetChooser::Pareto { blocks: n, power: h.ln() / (1.0 - h).ln(), offset: (n as f64 * center) as u64 }
            }
            Distribution::Normal { dev_pct, center } => OffsetChooser::Normal {
                blocks: n,
                stddev: (n as f64 * dev_pct / 100.0) as u64,
                offset: (n as f64 * center) as u64,
            },
            _ => OffsetChooser::Uniform { blocks: n },
        }
    }

    /// Passes the random map has started after its first (0 without a map).
    #[inline]
    fn passes(&self) -> u64 {
        match self {
            OffsetChooser::Permutation(p) => p.pass(),
            OffsetChooser::Map(m) => m.pass(),
            _ => 0,
        }
    }

    #[inline]
    fn draw(&mut self, rng: &mut SimRng) -> u64 {
        match self {
            OffsetChooser::Sequential => unreachable!("sequential offsets are positional"),
            OffsetChooser::Uniform { blocks } => rng.below(*blocks),
            OffsetChooser::Permutation(p) => p.next_index(),
            OffsetChooser::Map(m) => m.draw(rng),
            OffsetChooser::Zipf(z) => z.next(rng),
            OffsetChooser::Pareto { blocks, power, offset } => {
                scatter(pareto_rank(*blocks, *power, rng)).wrapping_add(*offset) % *blocks
            }
            OffsetChooser::Normal { blocks, stddev, offset } => {
                scatter(normal_rank(*blocks, *stddev, rng)).wrapping_add(*offset) % *blocks
            }
            OffsetChooser::Zoned(zones) => {
                let u = rng.unit_f64();
                let zone = zones.iter().find(|z| u < z.cumulative).unwrap_or(&zones[zones.len() - 1]);
                zone.first_block + rng.below(zone.blocks)
            }
        }
    }
}

/// A pareto rank below `n` (0 the most likely).
#[inline]
fn pareto_rank(n: u64, power: f64, rng: &mut SimRng) -> u64 {
    ((n - 1) as f64 * rng.unit_f64().powf(power)) as u64
}

/// fio's gauss.c: the mean of 12 uniform draws over [0, n], plus a uniform jitter of
/// +-stddev/2 (around n/2, before any scatter).
#[inline]
fn normal_rank(n: u64, stddev: u64, rng: &mut SimRng) -> u64 {
    let mut sum = 0u64;
    for _ in 0..12 {
        sum += rng.below(n + 1);
    }
    let mean = sum.div_ceil(12);
    let jitter = if stddev > 0 { rng.below(stddev) as i64 - (stddev / 2) as i64 } else { 0 };
    (mean as i64 + jitter).max(0) as u64
}

/// `file_service_type=zipf|pareto|normal`: which file the next I/O goes to, drawn as fio
/// draws it: over the files scaled up by 2^10 (its FIO_FSERVICE_SHIFT), with its hash
/// turned off, so neighbouring ranks share a file and the hottest ranks all land in one.
#[derive(Debug)]
pub struct SkewedFiles {
    chooser: OffsetChooser,
}

impl SkewedFiles {
    const SHIFT: u32 = 10;

    pub fn new(distribution: &Distribution, files: usize) -> SkewedFiles {
        SkewedFiles { chooser: OffsetChooser::skewed(distribution, (files as u64).max(1) << Self::SHIFT) }
    }

    /// The next file's index.
    pub fn draw(&mut self, rng: &mut SimRng) -> usize {
        let rank = match &mut self.chooser {
            OffsetChooser::Zipf(z) => z.rank(rng).wrapping_add(z.offset) % z.blocks,
            OffsetChooser::Pareto { blocks, power, offset } => {
                pareto_rank(*blocks, *power, rng).wrapping_add(*offset) % *blocks
            }
            OffsetChooser::Normal { blocks, stddev, offset } => {
                normal_rank(*blocks, *stddev, rng).wrapping_add(*offset) % *blocks
            }
            other => other.draw(rng),
        };
        (rank >> Self::SHIFT) as usize
    }
}

/// fio's zipf (Gray et al., as in YCSB): ranks drawn by inverting an approximation of
/// the zipf CDF, zeta summed over at most 10^7 terms.
#[derive(Debug)]
struct Zipf {
    blocks: u64,
    theta: f64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    offset: u64,
}

impl Zipf {
    fn new(blocks: u64, theta: f64, center: f64) -> Zipf {
        let terms = blocks.min(10_000_000);
        let zetan: f64 = (1..=terms).map(|i| (i as f64).powf(-theta)).sum();
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let n = blocks as f64;
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf { blocks, theta, zetan, alpha, eta, offset: (n * center) as u64 }
    }

    fn next(&mut self, rng: &mut SimRng) -> u64 {
        scatter(self.rank(rng)).wrapping_add(self.offset) % self.blocks
    }

    /// A rank below `blocks`, 0 the most likely (before any scatter).
    #[inline]
    fn rank(&self, rng: &mut SimRng) -> u64 {
        let u = rng.unit_f64();
        let uz = u * self.zetan;
        let rank = if uz < 1.0 {
            1
        } else if uz < 1.0 + 0.5f64.powf(self.theta) {
            2
        } else {
            let v = 1.0 + self.blocks as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
            (v as u64).clamp(1, self.blocks)
        };
        rank - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobfile::tests::env;
    use crate::spec::{parse_job_str, ParseOptions};
    use std::path::Path;

    fn spec(text: &str) -> JobSpec {
        parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0)
    }

    #[test]
    fn trimwrite_writes_each_block_right_after_trimming_it() {
        for (rw, random) in [("trimwrite", false), ("randtrimwrite", true)] {
            let s = spec(&format!("[a]\nrw={rw}\nbs=4k\nsize=64k\n"));
            let mut g = IoGenerator::new(&s, Region::new(0, 64 << 10), 5).unwrap();
            let units: Vec<IoUnit> = (0..32).map(|_| g.next_unit()).collect();
            let mut trimmed = Vec::new();
            for pair in units.chunks(2) {
                assert_eq!((pair[0].op, pair[1].op), (Op::Discard, Op::Write), "{rw}");
                assert_eq!(pair[0].offset_bytes, pair[1].offset_bytes, "{rw}: the same blocks");
                trimmed.push(pair[0].offset_bytes / 4096);
            }
            let in_order = trimmed.windows(2).all(|w| w[1] == w[0] + 1);
            assert_eq!(in_order, !random, "{rw}: {trimmed:?}");
            trimmed.sort_unstable();
            assert_eq!(trimmed, (0..16).collect::<Vec<u64>>(), "{rw}: every block once per pass");
        }
        let s = spec("[a]\nrw=trimwrite\nsize=1m\n");
        assert_eq!(s.active_ops().collect::<Vec<_>>(), vec![Op::Write, Op::Discard]);
    }

    #[test]
    fn bs_is_seq_rand_sizes_by_sequential_or_random() {
        let sizes = |text: &str| {
            let s = spec(text);
            let mut g = IoGenerator::new(&s, Region::new(0, 64 << 20), 3).unwrap();
            let mut seen: Vec<u32> = (0..2000).map(|_| g.next_unit().len_bytes).collect();
            seen.sort_unstable();
            seen.dedup();
            seen
        };
        // norandommap: the random map would cut I/Os short once the region fills up
        let base = "[a]\nbs=4k,64k\nbs_is_seq_rand=1\nsize=64m\nnorandommap\n";
        assert_eq!(sizes(&format!("{base}rw=randread\n")), vec![65536], "random reads take the write entry");
        assert_eq!(sizes(&format!("{base}rw=write\n")), vec![4096], "sequential writes take the read entry");
        assert_eq!(sizes(&format!("{base}rw=randread\npercentage_random=50\n")), vec![4096, 65536]);
        assert_eq!(
            sizes("[a]\nbs=4k,64k\nsize=64m\nrw=randread\n"),
            vec![4096],
            "without it, reads take the read entry"
        );
        assert_eq!(spec(&format!("{base}rw=randread\n")).max_bs(), 65536, "buffers are sized for both");
    }

    #[test]
    fn sequential_wraps_and_random_stays_aligned_in_region() {
        let s = spec("[a]\nrw=read\nbs=4k\nsize=16k\n");
        let mut g = IoGenerator::new(&s, Region::new(1 << 20, 16384), 1).unwrap();
        let offs: Vec<u64> = (0..6).map(|_| g.next_unit().offset_bytes - (1 << 20)).collect();
        assert_eq!(offs, vec![0, 4096, 8192, 12288, 0, 4096]);

        let s = spec("[a]\nrw=randread\nbsrange=4k-16k\nsize=1m\n");
        let mut g = IoGenerator::new(&s, Region::new(0, 1 << 20), 9).unwrap();
        for _ in 0..10_000 {
            let u = g.next_unit();
            assert_eq!(u.offset_bytes % 4096, 0);
            assert!(u.offset_bytes + u64::from(u.len_bytes) <= 1 << 20);
            assert!(u.len_bytes.is_multiple_of(4096) && (4096..=16384).contains(&u.len_bytes));
        }
    }

    #[test]
    fn rwmix_and_bssplit_proportions() {
        let s = spec("[a]\nrw=randrw\nrwmixread=70\nbssplit=4k/25:64k/75\nsize=64m\nnorandommap\n");
        let mut g = IoGenerator::new(&s, Region::new(0, 64 << 20), 3).unwrap();
        let n = 100_000;
        let units: Vec<IoUnit> = (0..n).map(|_| g.next_unit()).collect();
        let reads = units.iter().filter(|u| u.op == Op::Read).count() as f64 / n as f64;
        let small = units.iter().filter(|u| u.len_bytes == 4096).count() as f64 / n as f64;
        assert!((reads - 0.70).abs() < 0.01, "{reads}");
        assert!((small - 0.25).abs() < 0.01, "{small}");
    }

    /// Share of I/Os of direction `op` that do not follow on from that direction's
    /// previous I/O.
    fn jump_share(units: &[IoUnit], op: Op) -> f64 {
        let mine: Vec<&IoUnit> = units.iter().filter(|u| u.op == op).collect();
        let jumps =
            mine.windows(2).filter(|w| w[1].offset_bytes != w[0].offset_bytes + u64::from(w[0].len_bytes)).count();
        jumps as f64 / (mine.len() - 1) as f64
    }

    #[test]
    fn percentage_random_mixes_sequential_and_random_runs() {
        let region = Region::new(0, 1 << 30);
        let draw = |text: &str, n: usize| -> Vec<IoUnit> {
            let mut g = IoGenerator::new(&spec(text), region, 5).unwrap();
            (0..n).map(|_| g.next_unit()).collect()
        };
        // a random draw lands next to the last block one time in 2^18
        let quarter = draw("[a]\nrw=randread\npercentage_random=25\nsize=1g\n", 40_000);
        let share = jump_share(&quarter, Op::Read);
        assert!((share - 0.25).abs() < 0.01, "{share}");
        assert_eq!(jump_share(&draw("[a]\nrw=randread\npercentage_random=0\nsize=1g\n", 1000), Op::Read), 0.0);
        assert!(jump_share(&draw("[a]\nrw=randread\nsize=1g\n", 1000), Op::Read) > 0.99);
        // per direction: random reads, sequential writes (each from its own last I/O)
        let mixed = draw("[a]\nrw=randrw\npercentage_random=100,0\nsize=1g\n", 20_000);
        assert!(jump_share(&mixed, Op::Read) > 0.99);
        assert_eq!(jump_share(&mixed, Op::Write), 0.0);
        // with `randread:4` a run of 4 starts at a random offset a quarter of the time
        let runs = draw("[a]\nrw=randread:4\npercentage_random=25\nsize=1g\n", 40_000);
        let share = jump_share(&runs, Op::Read);
        assert!((share - 0.25 / 4.0).abs() < 0.005, "{share}");
    }

    #[test]
    fn percentage_random_is_checked() {
        let err = |text: &str| {
            parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap_err().to_string()
        };
        assert!(err("[a]\nrw=randread\npercentage_random=101\n").contains("percentage_random"));
        assert_eq!(spec("[a]\nrw=randrw\npercentage_random=10,20\n").percentage_random, [10, 20, 20]);
    }

    #[test]
    fn zipf_is_skewed() {
        let s = spec("[a]\nrw=randread\nrandom_distribution=zipf:1.2\nsize=4m\n");
        let mut g = IoGenerator::new(&s, Region::new(0, 4 << 20), 3).unwrap();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..50_000 {
            *counts.entry(g.next_unit().offset_bytes).or_insert(0u32) += 1;
        }
        let mut v: Vec<u32> = counts.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = v.iter().take(10).sum();
        assert!(top10 > 50_000 / 4, "zipf 1.2: the 10 hottest of 1024 blocks take > 25%: {top10}");
    }

    #[test]
    fn zoned_sends_each_zone_its_share_of_accesses() {
        // JESD219's layout: half the accesses to the first 5%, 30% to the next 15%
        let s = spec("[a]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\nsize=100m\n");
        let len = 100u64 << 20;
        let mut g = IoGenerator::new(&s, Region::new(1 << 20, len), 7).unwrap();
        let mut zone_hits = [0u32; 3];
        let n = 100_000;
        for _ in 0..n {
            let rel = g.next_unit().offset_bytes - (1 << 20);
            assert!(rel + 4096 <= len);
            zone_hits[if rel < len / 20 {
                0
            } else if rel < len / 5 {
                1
            } else {
                2
            }] += 1;
        }
        let share = |i: usize| f64::from(zone_hits[i]) / f64::from(n);
        assert!((share(0) - 0.5).abs() < 0.01 && (share(1) - 0.3).abs() < 0.01, "{zone_hits:?}");
        // zoned_abs: sizes in bytes; a zone past the end is cut there
        let s = spec("[a]\nrw=randread\nrandom_distribution=zoned_abs:90/64k:10/1g\nsize=1m\n");
        let mut g = IoGenerator::new(&s, Region::new(0, 1 << 20), 7).unwrap();
        let hot = (0..10_000).filter(|_| g.next_unit().offset_bytes < 64 << 10).count();
        assert!((8_800..9_200).contains(&hot), "{hot}");
    }

    #[test]
    fn rw_offset_modifier_skips_goes_backwards_or_runs_sequentially() {
        let offsets = |rw: &str, n: usize| {
            let s = spec(&format!("[a]\nrw={rw}\nbs=4k\nsize=128k\n"));
            let mut g = IoGenerator::new(&s, Region::new(0, 128 << 10), 4).unwrap();
            (0..n).map(|_| g.next_unit().offset_bytes >> 10).collect::<Vec<u64>>()
        };
        // fio's backwards-read example: the first read at 0, then from the end down
        assert_eq!(offsets("read:-8k", 5), [0, 120, 116, 112, 108]);
        assert_eq!(offsets("write:4k", 4), [0, 8, 16, 24], "holes");
        assert_eq!(offsets("write:4k", 17)[16], 0, "wraps to the start");
        // a new random offset every 4 I/Os, sequential in between
        let runs = offsets("randread:4", 40);
        for run in runs.chunks(4) {
            assert!(run.windows(2).all(|w| w[1] == w[0] + 4) || run.contains(&0), "{runs:?}");
        }
        assert_ne!(runs[0] + 16, runs[4], "{runs:?}");
    }

    #[test]
    fn rw_sequencer_identical_repeats_each_random_offset() {
        let offsets = |extra: &str| {
            let s = spec(&format!("[a]\nrw=randread:4\nbs=4k\nsize=1m\n{extra}"));
            let mut g = IoGenerator::new(&s, Region::new(0, 1 << 20), 9).unwrap();
            (0..400).map(|_| g.next_unit().offset_bytes).collect::<Vec<u64>>()
        };
        let identical = offsets("rw_sequencer=identical\n");
        for run in identical.chunks(4) {
            assert!(run.iter().all(|&o| o == run[0]), "{run:?}");
        }
        let starts: std::collections::HashSet<u64> = identical.chunks(4).map(|r| r[0]).collect();
        assert_eq!(starts.len(), 100, "each run starts at a new offset (random map)");
        // the default, sequential: the same starting offsets, each followed by the next blocks
        let sequential = offsets("rw_sequencer=sequential\n");
        assert_eq!(sequential, offsets(""));
        for (seq, ident) in sequential.chunks(4).zip(identical.chunks(4)) {
            assert_eq!(seq[0], ident[0]);
            assert!(seq.windows(2).all(|w| w[1] == w[0] + 4096 || w[1] == 0), "{seq:?}");
        }
    }

    #[test]
    fn blockalign_aligns_random_offsets_of_smaller_blocks() {
        let offsets = |extra: &str| {
            let s = spec(&format!("[a]\nrw=randwrite\nbssplit=512/50:4k/50\nsize=1m\nnorandommap\n{extra}"));
            let mut g = IoGenerator::new(&s, Region::new(0, 1 << 20), 2).unwrap();
            (0..2_000).map(|_| g.next_unit().offset_bytes).collect::<Vec<u64>>()
        };
        assert!(offsets("blockalign=4k\n").iter().all(|o| o % 4096 == 0));
        let default = offsets("");
        assert!(default.iter().all(|o| o % 512 == 0), "fio's default: the smallest block");
        assert!(default.iter().any(|o| o % 4096 != 0));
    }

    #[test]
    fn pareto_and_normal_stay_in_range() {
        for dist in ["pareto:0.9", "normal:10", "normal:0", "zipf:0.8:0.5"] {
            let s = spec(&format!("[a]\nrw=randread\nrandom_distribution={dist}\nsize=1m\n"));
            let mut g = IoGenerator::new(&s, Region::new(4096, 1 << 20), 5).unwrap();
            for _ in 0..5_000 {
                let u = g.next_unit();
                assert!(u.offset_bytes >= 4096 && u.offset_bytes + 4096 <= 4096 + (1 << 20), "{dist}");
            }
        }
    }

    #[test]
    fn region_smaller_than_block_is_an_error() {
        let s = spec("[a]\nrw=randread\nbs=64k\nsize=1m\n");
        let e = IoGenerator::new(&s, Region::new(0, 4096), 1).unwrap_err();
        assert!(e.contains("smaller than its largest block"), "{e}");
    }

    /// The offsets (KiB) fio 3.33 issued for these jobs (`write_iolog`, null engine).
    #[test]
    fn strided_zones_visit_what_fio_visits() {
        let kib = |text: &str, n: usize| -> Vec<u64> {
            let mut g = IoGenerator::new(&spec(text), Region::new(0, 64 << 10), 1).unwrap();
            (0..n).map(|_| g.next_unit().offset_bytes >> 10).collect()
        };
        let base = "[a]\nbs=4k\nrw=read\nzonemode=strided\n";
        assert_eq!(kib(&format!("{base}zonesize=8k\nzoneskip=8k\n"), 10), [0, 4, 16, 20, 32, 36, 48, 52, 0, 4]);
        assert_eq!(kib(&format!("{base}zonesize=8k\nzonerange=16k\nzoneskip=16k\n"), 6), [0, 4, 32, 36, 0, 4]);
        // a zone of 8 KiB read for 16 KiB: each zone twice over
        assert_eq!(kib(&format!("{base}zonesize=16k\nzonerange=8k\n"), 6), [0, 4, 0, 4, 8, 12]);
        let refused = |text: &str| {
            parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap_err().to_string()
        };
        let e = refused("[a]\nrw=read\nzonesize=8k\n");
        assert!(e.starts_with("t.fio:3: option 'zonesize'") && e.contains("needs zonemode=strided"), "{e}");
        assert!(refused("[a]\nrw=read\nzonemode=strided\n").contains("needs a zonesize"));
        assert!(refused("[a]\nrw=read\nzonemode=zbd\n").contains("not modelled"));
        // random: two 4 KiB reads in each 16 KiB zone, then the next zone
        let random = kib("[a]\nbs=4k\nrw=randread\nzonemode=strided\nzonesize=8k\nzonerange=16k\n", 16);
        for (i, off) in random.iter().enumerate() {
            let zone = (i as u64 / 2 % 4) * 16;
            assert!((zone..zone + 16).contains(off), "I/O {i} at {off} KiB is outside zone {zone}: {random:?}");
        }
    }

    /// Holed sequential I/O in a region that starts inside its file: offsets (KiB, in the
    /// file) until the pass ends, as fio 3.33 issued them (`write_iolog`, psync), where
    /// nvsched went round to the region's start and on for `size` bytes.
    #[test]
    fn holed_io_wraps_and_ends_by_the_files_size_as_fio_does() {
        let pass = |text: &str, offset_k: u64, file_k: u64| -> Vec<u64> {
            let region = Region {
                start: offset_k << 10,
                len: (file_k - offset_k) << 10,
                offset_in_file: offset_k << 10,
                file_bytes: file_k << 10,
                later_offset_in_file: offset_k << 10,
            };
            let mut g = IoGenerator::new(&spec(text), region, 1).unwrap();
            assert!(g.counts_passes());
            let mut offsets = Vec::new();
            loop {
                let unit = g.next_unit();
                if g.passes_completed() > 0 {
                    // the next pass starts at the region's start again
                    assert_eq!(unit.offset_bytes, offset_k << 10);
                    return offsets;
                }
                offsets.push(unit.offset_bytes >> 10);
            }
        };
        // the third write lands at 32 KiB: fio goes round to the region's offset (16 KiB)
        // counted from the region's start
        assert_eq!(pass("[a]\nrw=write:32k\nbs=4k\n", 16, 64), [16, 52, 32]);
        // a clone at 80 KiB of a 256 KiB file: the 16th block would start past the file
        let clone: Vec<u64> = (0..15).map(|i| 80 + 12 * i).collect();
        assert_eq!(pass("[a]\nrw=write:8k\nbs=4k\n", 80, 256), clone);
        // strided zones of 32 KiB with an 8 KiB skip, from 32 KiB in a 128 KiB file
        let zones = "[a]\nrw=write:8k\nbs=4k\nzonemode=strided\nzonesize=32k\n";
        let fio = [32, 44, 56, 68, 32, 44, 56, 68, 64, 76, 88, 100, 64, 76, 88, 100, 96, 108, 120];
        assert_eq!(pass(zones, 32, 128), fio);
        // 8 KiB reads with a 4 KiB skip in zones 16 KiB apart (32 KiB skipped), from 64 KiB:
        // the second zone's second read would end past the file
        let zones = "[a]\nrw=read:4k\nbs=8k\nzonemode=strided\nzonesize=16k\nzoneskip=32k\n";
        assert_eq!(pass(zones, 64, 128), [64, 76, 112]);
    }
}
