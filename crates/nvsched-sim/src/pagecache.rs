//! The page cache buffered jobs go through: which 4 KiB pages of the device are cached,
//! which are dirty, which are being written back, and which clean pages go first when
//! memory runs out. It only keeps the books; the engine decides when to write back and
//! what waits.

use crate::nodata::NoDataPages;
use nvsched_core::Nanos;
use nvsched_ssd::PageCacheConfig;
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, VecDeque};

pub const PAGE_BYTES: u64 = 4096;

/// Whether page `p` lies whole inside the byte range.
pub(crate) fn covers_whole_page(p: u64, offset_bytes: u64, len_bytes: u64) -> bool {
    p * PAGE_BYTES >= offset_bytes && (p + 1) * PAGE_BYTES <= offset_bytes + len_bytes
}

/// Pages `[first, end)` covering a byte range.
pub(crate) fn pages(offset_bytes: u64, len_bytes: u64) -> std::ops::Range<u64> {
    offset_bytes / PAGE_BYTES..(offset_bytes + len_bytes).div_ceil(PAGE_BYTES)
}

/// The read-ahead window a sequential miss of `request_bytes` reads (Linux's
/// `get_init_ra_size`): the request in pages, rounded up to a power of two, four times
/// over if small against the most, twice if middling, else the most.
pub fn first_readahead_window(request_bytes: u64, max_bytes: u64) -> u64 {
    let max = (max_bytes / PAGE_BYTES).max(1);
    let pages = request_bytes.div_ceil(PAGE_BYTES).max(1).next_power_of_two();
    let size = if pages <= max / 32 {
        pages * 4
    } else if pages <= max / 4 {
        pages * 2
    } else {
        max
    };
    size * PAGE_BYTES
}

/// The window after one of `current_bytes` (Linux's `get_next_ra_size`): four times as
/// large while under a sixteenth of the most, twice up to half of it, then the most.
pub fn next_readahead_window(current_bytes: u64, max_bytes: u64) -> u64 {
    let max = (max_bytes / PAGE_BYTES).max(1);
    let current = (current_bytes / PAGE_BYTES).max(1);
    let size = if current < max / 16 {
        current * 4
    } else if current <= max / 2 {
        current * 2
    } else {
        max
    };
    size * PAGE_BYTES
}

/// Who dirtied a page first since it was last clean: its writeback is charged to them
/// (as cgroup writeback charges the dirtying cgroup).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirtier {
    pub job: u32,
    pub since: Nanos,
}

/// A run of contiguous pages on its way to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub offset_bytes: u64,
    pub len_bytes: u32,
    /// Who dirtied its first page.
    pub dirtier: u32,
}

/// One cached page: being read from the device, clean (with its last-use stamp), dirty,
/// under writeback, or dirty again while under writeback.
#[derive(Clone, Copy, Default)]
struct Page {
    /// A read from the device will fill it.
    pending: bool,
    /// Last use of a clean page (0: not clean).
    clean_stamp: u64,
    /// Writebacks of it in flight (a page dirtied again during its writeback may be
    /// written back again before the first lands).
    writeback: u16,
    dirty: bool,
}

/// Clean pages by their last use, oldest first; a page used again moves to the back (the
/// stale entry is skipped, told by its stamp).
#[derive(Default)]
struct Lru {
    queue: VecDeque<(u64, u64)>,
    stamp: u64,
}

impl Lru {
    /// Clean page `p` was just used (read, filled or written back).
    fn used(&mut self, p: u64, pg: &mut Page) {
        self.stamp += 1;
        pg.clean_stamp = self.stamp;
        self.queue.push_back((p, self.stamp));
    }
}

pub struct PageCache {
    capacity_pages: u64,
    background_pages: u64,
    limit_pages: u64,
    /// Every cached page, whatever its state.
    pages: HashMap<u64, Page>,
    /// The dirty pages in offset order, for writeback.
    dirty: BTreeMap<u64, Dirtier>,
    clean_pages: u64,
    writeback_pages: u64,
    lru: Lru,
    /// Where the next sync writeback of a range starts looking.
    cursor: u64,
    files: FileQueue,
}

/// The files as background writeback takes them.
struct FileQueue {
    /// The files (page ranges, in offset order, covering every page), each with where its
    /// writeback goes on (the inode's writeback_index) and its dirty pages.
    files: Vec<FileTurn>,
    /// The files with dirty pages in the order background writeback takes them, as the
    /// flusher takes inodes: by when each became dirty, and after its turn to the back
    /// while it has dirty pages left (Linux's b_dirty, b_io and b_more_io). A file
    /// cleaned outside its turn (by a sync or a trim) leaves the queue, and joins its
    /// back when dirtied again; its old entry, which carries an older `queued` number, is
    /// skipped. The file whose turn it is stays in front while its turn lasts, as the
    /// kernel's scan of a file picks up pages dirtied ahead of it.
    queue: VecDeque<(usize, u64)>,
    /// The pages the file at the front may still write in its turn.
    turn_left_pages: u64,
}

impl FileQueue {
    fn new(files: Vec<FileTurn>) -> FileQueue {
        FileQueue { files, queue: VecDeque::new(), turn_left_pages: TURN_PAGES }
    }

    /// The file page `p` belongs to.
    fn file_of(&self, p: u64) -> usize {
        self.files.partition_point(|f| f.first_page <= p) - 1
    }

    /// Page `p` became dirty: its file joins the back of the queue unless it is in it.
    fn page_dirtied(&mut self, p: u64) {
        let i = self.file_of(p);
        let f = &mut self.files[i];
        f.dirty_pages += 1;
        if !f.in_queue {
            f.in_queue = true;
            f.queued += 1;
            self.queue.push_back((i, f.queued));
            // files cleaned by syncs leave stale entries, which only background writeback
            // walks past: without it (fsync after every write) they would pile up
            if self.queue.len() > 2 * self.files.len() + 16 {
                let front = self.queue.front().copied();
                let files = &self.files;
                self.queue.retain(|&(i, queued)| files[i].in_queue && files[i].queued == queued);
                if self.queue.front().copied() != front {
                    self.turn_left_pages = TURN_PAGES;
                }
            }
        }
    }

    /// Page `p` is no longer dirty, written back in its file's turn or not.
    fn page_cleaned(&mut self, p: u64, in_its_turn: bool) {
        let i = self.file_of(p);
        let f = &mut self.files[i];
        f.dirty_pages -= 1;
        if f.dirty_pages == 0 && !in_its_turn {
            f.in_queue = false;
        }
    }

    /// The file in front, whose turn it is. An entry left stale (its file cleaned
    /// outside its turn) goes, and the next file's turn starts whole.
    fn front(&mut self) -> Option<usize> {
        while let Some(&(i, queued)) = self.queue.front() {
            let f = &self.files[i];
            if f.in_queue && f.queued == queued {
                return Some(i);
            }
            self.queue.pop_front();
            self.turn_left_pages = TURN_PAGES;
        }
        None
    }

    /// The front file's turn is over: to the back if it has dirty pages left.
    fn end_turn(&mut self) {
        self.turn_left_pages = TURN_PAGES;
        let Some((i, queued)) = self.queue.pop_front() else { return };
        if self.files[i].dirty_pages > 0 {
            self.queue.push_back((i, queued));
        } else {
            self.files[i].in_queue = false;
        }
    }
}

/// One file as background writeback sees it.
#[derive(Clone, Copy, Debug)]
struct FileTurn {
    first_page: u64,
    end_page: u64,
    cursor: u64,
    dirty_pages: u64,
    in_queue: bool,
    /// Counts the times the file joined the queue; its live entry carries the latest.
    queued: u64,
}

impl FileTurn {
    fn new(first_page: u64, end_page: u64) -> FileTurn {
        FileTurn { first_page, end_page, cursor: first_page, dirty_pages: 0, in_queue: false, queued: 0 }
    }
}

/// The most background writeback writes of one file before the next file's turn
/// (Linux's MIN_WRITEBACK_PAGES, 4 MiB).
const TURN_PAGES: u64 = (4 << 20) / PAGE_BYTES;

impl PageCache {
    pub fn new(cfg: &PageCacheConfig) -> PageCache {
        let capacity_pages = (cfg.size_bytes / PAGE_BYTES).max(1);
        PageCache {
            capacity_pages,
            background_pages: capacity_pages * u64::from(cfg.dirty_background_percent) / 100,
            limit_pages: (capacity_pages * u64::from(cfg.dirty_percent) / 100).max(1),
            pages: HashMap::default(),
            dirty: BTreeMap::new(),
            clean_pages: 0,
            writeback_pages: 0,
            lru: Lru::default(),
            cursor: 0,
            files: FileQueue::new(vec![FileTurn::new(0, u64::MAX)]),
        }
    }

    /// The files writeback takes in turn: device byte ranges (start, length), in any
    /// order, overlapping or not (one device file shared by several jobs). Dirty pages
    /// outside them are written in a turn of their own.
    pub fn set_files(&mut self, ranges: &[(u64, u64)]) {
        let mut page_ranges: Vec<(u64, u64)> = ranges
            .iter()
            .map(|&(start, len)| {
                let p = pages(start, len);
                (p.start, p.end)
            })
            .collect();
        page_ranges.sort_unstable();
        // overlapping ranges are one file (the same device or file named twice)
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (first, end) in page_ranges {
            match merged.last_mut() {
                Some(last) if first < last.1 => last.1 = last.1.max(end),
                _ => merged.push((first, end)),
            }
        }
        // and the gaps between them, so that no dirty page is left out of every turn
        let mut turns = Vec::new();
        let mut at = 0;
        for (first, end) in merged {
            if first > at {
                turns.push(FileTurn::new(at, first));
            }
            turns.push(FileTurn::new(first, end));
            at = end;
        }
        if at < u64::MAX {
            turns.push(FileTurn::new(at, u64::MAX));
        }
        // pages dirtied before: their files queue in offset order
        self.files = FileQueue::new(turns);
        for &p in self.dirty.keys() {
            self.files.page_dirtied(p);
        }
    }

    pub fn dirty_pages(&self) -> u64 {
        self.dirty.len() as u64
    }

    /// Dirty pages and pages under writeback: what `dirty_percent` limits.
    pub fn unwritten_pages(&self) -> u64 {
        self.dirty.len() as u64 + self.writeback_pages
    }

    pub fn resident_pages(&self) -> u64 {
        self.pages.len() as u64
    }

    pub fn over_background(&self) -> bool {
        self.dirty_pages() > self.background_pages
    }

    /// Whether dirtying this byte range now would take the cache over its dirty limit;
    /// a write larger than the limit alone may go once nothing else is unwritten.
    pub fn must_wait_to_dirty(&self, offset_bytes: u64, len_bytes: u64) -> bool {
        let unwritten = self.unwritten_pages();
        if unwritten == 0 {
            return false;
        }
        let new = pages(offset_bytes, len_bytes).filter(|p| !self.pages.get(p).is_some_and(|pg| pg.dirty)).count();
        unwritten + new as u64 > self.limit_pages
    }

    /// Whether every page of the range is in the cache (clean, dirty or being written).
    pub fn holds(&self, offset_bytes: u64, len_bytes: u64) -> bool {
        pages(offset_bytes, len_bytes).all(|p| self.pages.get(&p).is_some_and(|pg| !pg.pending))
    }

    /// Whether every page of the range is in the cache or on its way from the device.
    pub fn holds_or_reads(&self, offset_bytes: u64, len_bytes: u64) -> bool {
        pages(offset_bytes, len_bytes).all(|p| self.pages.contains_key(&p))
    }

    /// The pages (byte offsets) a write of the range covers only in part that are not
    /// cached and hold data (so must be read first): its first and its last, each if so.
    pub fn partial_pages_missing(&self, no_data: &NoDataPages, offset_bytes: u64, len_bytes: u64) -> [Option<u64>; 2] {
        if len_bytes == 0 {
            return [None, None];
        }
        let end = offset_bytes + len_bytes;
        let covered = pages(offset_bytes, len_bytes);
        let (first, last) = (covered.start * PAGE_BYTES, (covered.end - 1) * PAGE_BYTES);
        let missing = |page: u64, partial: bool| {
            (partial && !self.holds(page, PAGE_BYTES) && !no_data.holds_no_data(page / PAGE_BYTES)).then_some(page)
        };
        let head = missing(
            first,
            !offset_bytes.is_multiple_of(PAGE_BYTES) || (first == last && !end.is_multiple_of(PAGE_BYTES)),
        );
        let tail = missing(last, last != first && !end.is_multiple_of(PAGE_BYTES));
        [head, tail]
    }

    /// A read from the device starts: its pages not in the cache are on their way.
    pub fn start_read(&mut self, offset_bytes: u64, len_bytes: u64) {
        for p in pages(offset_bytes, len_bytes) {
            self.pages.entry(p).or_insert(Page { pending: true, ..Page::default() });
        }
    }

    /// A read served from the cache: its clean pages become the most recently used.
    pub fn touch(&mut self, offset_bytes: u64, len_bytes: u64) {
        for p in pages(offset_bytes, len_bytes) {
            if let Some(pg) = self.pages.get_mut(&p).filter(|pg| pg.clean_stamp > 0) {
                self.lru.used(p, pg);
            }
        }
    }

    /// A write into the cache. Returns the pages it covers in part that it filled with
    /// zeros instead of reading (not cached, and holding no data).
    pub fn dirty(&mut self, no_data: &mut NoDataPages, offset_bytes: u64, len_bytes: u64, job: u32, now: Nanos) -> u32 {
        no_data.extend(offset_bytes, len_bytes);
        let mut zeroed = 0;
        for p in pages(offset_bytes, len_bytes) {
            if !no_data.is_empty()
                && no_data.set_written(p, true)
                && !covers_whole_page(p, offset_bytes, len_bytes)
                && !self.pages.contains_key(&p)
            {
                zeroed += 1;
            }
            let pg = self.pages.entry(p).or_default();
            // newer than what a read in flight brings
            pg.pending = false;
            if pg.clean_stamp > 0 {
                pg.clean_stamp = 0;
                self.clean_pages -= 1;
            }
            if !pg.dirty {
                pg.dirty = true;
                self.dirty.insert(p, Dirtier { job, since: now });
                self.files.page_dirtied(p);
            }
        }
        self.evict();
        zeroed
    }

    /// A read from the device landed: its pages are cached, clean where not dirtied
    /// meanwhile.
    pub fn fill(&mut self, offset_bytes: u64, len_bytes: u64) {
        for p in pages(offset_bytes, len_bytes) {
            let pg = self.pages.entry(p).or_default();
            pg.pending = false;
            if !pg.dirty && pg.writeback == 0 {
                if pg.clean_stamp == 0 {
                    self.clean_pages += 1;
                }
                self.lru.used(p, pg);
            }
        }
        self.evict();
    }

    /// A trim: its pages leave the cache, dirty or not (their data is gone); one under
    /// writeback or being read stays until that lands.
    pub fn discard(&mut self, no_data: &mut NoDataPages, offset_bytes: u64, len_bytes: u64) {
        no_data.trimmed(offset_bytes, len_bytes);
        for p in pages(offset_bytes, len_bytes) {
            let Some(pg) = self.pages.get_mut(&p).filter(|pg| !pg.pending) else { continue };
            if pg.dirty {
                pg.dirty = false;
                self.dirty.remove(&p);
                self.files.page_cleaned(p, false);
            }
            if pg.clean_stamp > 0 {
                pg.clean_stamp = 0;
                self.clean_pages -= 1;
            }
            if pg.writeback == 0 {
                self.pages.remove(&p);
            }
        }
    }

    /// The next run of dirty pages to write back, of at most `max_bytes`, dirtied no
    /// later than `dirtied_by`; its pages move to writeback. In `range` (a sync's), from
    /// where the last such run ended; otherwise (background writeback) from the file
    /// whose turn it is, which may write 4 MiB before the next file's turn, each file
    /// from where its writeback last ended. The files take their turns in the order they
    /// became dirty, a file with dirty pages left after its turn going to the back.
    pub fn next_chunk(&mut self, range: Option<(u64, u64)>, dirtied_by: Nanos, max_bytes: u32) -> Option<Chunk> {
        let max_pages = (u64::from(max_bytes) / PAGE_BYTES).max(1);
        if let Some((start, len)) = range {
            let range = pages(start, len);
            let first = self.first_dirty(range.start, range.end, self.cursor, dirtied_by)?;
            let (chunk, end) = self.take_run(first, range.end, max_pages, false);
            self.cursor = end;
            return Some(chunk);
        }
        // every queued file may be passed over once (nothing old enough) before giving up,
        // and the file whose turn ran out comes round again
        let mut passes_left = self.files.queue.len() + 1;
        while let Some(turn) = self.files.front() {
            let f = self.files.files[turn];
            let found = if self.files.turn_left_pages > 0 {
                self.first_dirty(f.first_page, f.end_page, f.cursor, dirtied_by)
            } else {
                None
            };
            let Some(first) = found else {
                if passes_left == 0 {
                    return None;
                }
                passes_left -= 1;
                self.files.end_turn();
                continue;
            };
            let (chunk, end) = self.take_run(first, f.end_page, max_pages.min(self.files.turn_left_pages), true);
            self.files.files[turn].cursor = end;
            self.files.turn_left_pages -= end - first;
            return Some(chunk);
        }
        None
    }

    /// The first dirty page in pages `[lo, hi)` from `from` on (wrapping) dirtied no
    /// later than `dirtied_by`.
    fn first_dirty(&self, lo: u64, hi: u64, from: u64, dirtied_by: Nanos) -> Option<u64> {
        let from = from.clamp(lo, hi);
        let eligible = |(p, d): (&u64, &Dirtier)| (d.since <= dirtied_by).then_some(*p);
        self.dirty.range(from..hi).find_map(eligible).or_else(|| self.dirty.range(lo..from).find_map(eligible))
    }

    /// Moves the run of dirty pages from `first` (before `hi`, at most `max_pages`) to
    /// writeback, in their file's turn or not; returns it and the page after it.
    fn take_run(&mut self, first: u64, hi: u64, max_pages: u64, in_turn: bool) -> (Chunk, u64) {
        let dirtier = self.dirty[&first].job;
        let mut end = first;
        while end - first < max_pages && end < hi && self.dirty.remove(&end).is_some() {
            self.files.page_cleaned(end, in_turn);
            let pg = self.pages.get_mut(&end).expect("a dirty page is cached");
            pg.dirty = false;
            if pg.writeback == 0 {
                self.writeback_pages += 1;
            }
            pg.writeback += 1;
            end += 1;
        }
        (Chunk { offset_bytes: first * PAGE_BYTES, len_bytes: ((end - first) * PAGE_BYTES) as u32, dirtier }, end)
    }

    /// A writeback landed: its pages are clean unless dirtied again meanwhile.
    pub fn written_back(&mut self, chunk: &Chunk) {
        for p in pages(chunk.offset_bytes, u64::from(chunk.len_bytes)) {
            let Some(pg) = self.pages.get_mut(&p).filter(|pg| pg.writeback > 0) else { continue };
            pg.writeback -= 1;
            if pg.writeback == 0 {
                self.writeback_pages -= 1;
                if !pg.dirty {
                    self.clean_pages += 1;
                    self.lru.used(p, pg);
                }
            }
        }
        self.evict();
    }

    /// Drops the least recently used clean pages while the cache holds more than fits.
    fn evict(&mut self) {
        while self.resident_pages() > self.capacity_pages {
            let Some((p, stamp)) = self.lru.queue.pop_front() else { return };
            if self.pages.get(&p).is_some_and(|pg| pg.clean_stamp == stamp) {
                self.pages.remove(&p);
                self.clean_pages -= 1;
            }
        }
        // stale entries of pages used again or dirtied pile up otherwise
        if self.lru.queue.len() as u64 > 2 * self.clean_pages + 1024 {
            let pages = &self.pages;
            self.lru.queue.retain(|(p, s)| pages.get(p).is_some_and(|pg| pg.clean_stamp == *s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size_bytes: u64) -> PageCache {
        PageCache::new(&PageCacheConfig { size_bytes, ..PageCacheConfig::default() })
    }

    const KIB: u64 = 1024;

    /// Who dirtied the chunks background writeback takes, and how many bytes in a row.
    fn writeback_order(c: &mut PageCache) -> Vec<(u32, u64)> {
        let mut order: Vec<(u32, u64)> = Vec::new();
        while let Some(chunk) = c.next_chunk(None, Nanos::MAX, 512 * 1024) {
            assert!(chunk.len_bytes <= 512 * 1024);
            if order.last().is_none_or(|&(dirtier, _)| dirtier != chunk.dirtier) {
                order.push((chunk.dirtier, 0));
            }
            order.last_mut().unwrap().1 += u64::from(chunk.len_bytes);
        }
        order
    }

    #[test]
    fn background_writeback_takes_files_in_turn_4_mib_each_in_the_order_they_became_dirty() {
        const MIB: u64 = 1 << 20;
        let mut c = cache(1 << 30);
        let mut no = NoDataPages::default();
        // files at 0 and 100 MiB (the second named twice, overlapping), 8 MiB dirty
        // each, the second first
        c.set_files(&[(100 * MIB, 16 * MIB), (0, 16 * MIB), (100 * MIB, 8 * MIB)]);
        c.dirty(&mut no, 100 * MIB, 8 * MIB, 1, Nanos(1));
        c.dirty(&mut no, 0, 8 * MIB, 0, Nanos(2));
        // and a page outside both, dirtied last: it has a turn too
        c.dirty(&mut no, 50 * MIB, 4 * KIB, 2, Nanos(3));
        assert_eq!(writeback_order(&mut c), [(1, 4 * MIB), (0, 4 * MIB), (2, 4 * KIB), (1, 4 * MIB), (0, 4 * MIB)]);
        assert_eq!(c.dirty_pages(), 0);
        assert_eq!(c.files.front(), None, "clean files leave the queue");
        // a sync's range is written whole, whoever's turn it is
        c.dirty(&mut no, 0, MIB, 0, Nanos::ZERO);
        c.dirty(&mut no, 100 * MIB, MIB, 1, Nanos::ZERO);
        let chunk = c.next_chunk(Some((100 * MIB, MIB)), Nanos::MAX, 2 * MIB as u32).unwrap();
        assert_eq!((chunk.offset_bytes, chunk.len_bytes, chunk.dirtier), (100 * MIB, MIB as u32, 1));
    }

    #[test]
    fn a_file_whose_turn_a_sync_ends_leaves_the_next_one_a_whole_turn() {
        const MIB: u64 = 1 << 20;
        let mut c = cache(1 << 30);
        let mut no = NoDataPages::default();
        c.set_files(&[(0, 16 * MIB), (16 * MIB, 16 * MIB), (32 * MIB, 16 * MIB)]);
        c.dirty(&mut no, 0, 8 * MIB, 0, Nanos(1));
        c.dirty(&mut no, 16 * MIB, 8 * MIB, 1, Nanos(2));
        c.dirty(&mut no, 32 * MIB, 8 * MIB, 2, Nanos(3));
        // the first file writes 3 MiB of its turn, then a sync writes the rest
        for _ in 0..3 {
            assert_eq!(c.next_chunk(None, Nanos::MAX, MIB as u32).unwrap().dirtier, 0);
        }
        while c.next_chunk(Some((0, 16 * MIB)), Nanos::MAX, MIB as u32).is_some() {}
        assert_eq!(writeback_order(&mut c), [(1, 4 * MIB), (2, 4 * MIB), (1, 4 * MIB), (2, 4 * MIB)]);
    }

    #[test]
    fn a_file_cleaned_and_dirtied_again_waits_behind_the_files_dirty_meanwhile() {
        const MIB: u64 = 1 << 20;
        let mut c = cache(1 << 30);
        let mut no = NoDataPages::default();
        c.set_files(&[(0, 16 * MIB), (16 * MIB, 16 * MIB), (32 * MIB, 16 * MIB)]);
        c.dirty(&mut no, 0, MIB, 0, Nanos(1));
        c.dirty(&mut no, 16 * MIB, 6 * MIB, 1, Nanos(2));
        // a sync writes the first file out: it is clean and leaves the queue
        while c.next_chunk(Some((0, MIB)), Nanos::MAX, 512 * 1024).is_some() {}
        c.dirty(&mut no, 32 * MIB, MIB, 2, Nanos(3));
        c.dirty(&mut no, 0, MIB, 0, Nanos(4));
        // the second file has its turn (4 MiB), the third, the first (dirtied again
        // last), and the second's rest
        assert_eq!(writeback_order(&mut c), [(1, 4 * MIB), (2, MIB), (0, MIB), (1, 2 * MIB)]);
        // pages that are not old enough are passed over, not lost
        c.dirty(&mut no, 16 * MIB, MIB, 1, Nanos(10));
        c.dirty(&mut no, 32 * MIB, MIB, 2, Nanos(20));
        let chunk = c.next_chunk(None, Nanos(15), 2 * MIB as u32).unwrap();
        assert_eq!(chunk.dirtier, 1);
        assert_eq!(c.next_chunk(None, Nanos(15), 2 * MIB as u32), None);
        assert_eq!(c.next_chunk(None, Nanos(20), 2 * MIB as u32).map(|ch| ch.dirtier), Some(2));
        // a file synced after every write, with no background writeback in between,
        // leaves no pile of stale entries
        for k in 0..1000 {
            c.dirty(&mut no, 0, 4 * KIB, 0, Nanos(30 + k));
            while c.next_chunk(Some((0, 4 * KIB)), Nanos::MAX, 4096).is_some() {}
        }
        assert!(c.files.queue.len() <= 2 * c.files.files.len() + 16, "{} entries", c.files.queue.len());
    }

    #[test]
    fn read_ahead_windows_grow_from_a_few_pages_to_the_most() {
        let (max, page) = (128 * KIB, 4 * KIB);
        // 4 KiB reads: 16, 32, 64, 128, 128 KiB (Linux's ramp for read_ahead_kb=128)
        let mut w = first_readahead_window(page, max);
        let mut ramp = vec![w];
        for _ in 0..4 {
            w = next_readahead_window(w, max);
            ramp.push(w);
        }
        assert_eq!(ramp, [16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 128 * KIB]);
        assert_eq!(first_readahead_window(16 * KIB, max), 32 * KIB, "4 pages: twice");
        assert_eq!(first_readahead_window(12 * KIB, max), 32 * KIB, "3 pages round up to 4");
        assert_eq!(first_readahead_window(64 * KIB, max), 128 * KIB, "large: the most");
        assert_eq!(first_readahead_window(1024 * KIB, max), 128 * KIB);
        // a bigger limit ramps from 4x to 2x steps
        let big = 2048 * KIB;
        assert_eq!(first_readahead_window(page, big), 16 * KIB);
        assert_eq!(next_readahead_window(16 * KIB, big), 64 * KIB, "under 1/16: four times");
        assert_eq!(next_readahead_window(256 * KIB, big), 512 * KIB, "up to half: twice");
        assert_eq!(next_readahead_window(1024 * KIB, big), 2048 * KIB);
        assert_eq!(next_readahead_window(2048 * KIB, big), 2048 * KIB);
    }

    #[test]
    fn a_write_misses_the_pages_it_covers_in_part_until_they_are_cached() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        assert_eq!(c.partial_pages_missing(&no, 0, 4 * KIB), [None, None], "whole pages");
        assert_eq!(c.partial_pages_missing(&no, 0, 0), [None, None], "nothing");
        assert_eq!(c.partial_pages_missing(&no, 0, 8 * KIB), [None, None]);
        assert_eq!(c.partial_pages_missing(&no, 512, 512), [Some(0), None], "inside one page");
        assert_eq!(c.partial_pages_missing(&no, 0, 512), [Some(0), None]);
        assert_eq!(c.partial_pages_missing(&no, 2 * KIB, 4 * KIB), [Some(0), Some(4 * KIB)], "across two");
        assert_eq!(c.partial_pages_missing(&no, 2 * KIB, 6 * KIB), [Some(0), None], "ends on a boundary");
        assert_eq!(c.partial_pages_missing(&no, 4 * KIB, 6 * KIB), [None, Some(8 * KIB)], "starts on one");
        c.start_read(0, 4 * KIB);
        assert_eq!(c.partial_pages_missing(&no, 512, 512), [Some(0), None], "on its way is not cached");
        c.fill(0, 4 * KIB);
        c.dirty(&mut no, 4 * KIB, 4 * KIB, 0, Nanos::ZERO);
        assert_eq!(c.partial_pages_missing(&no, 2 * KIB, 4 * KIB), [None, None], "one clean, one dirty");
    }

    #[test]
    fn a_page_of_a_file_without_data_is_zeroed_not_read_until_written() {
        let mut c = cache(1 << 20); // 256 pages
                                    // a file of 64 KiB at 1 MiB holds no data; the rest of the device does
        let mut no = NoDataPages::new(&[(1 << 20, 64 * KIB)]);
        assert_eq!(c.partial_pages_missing(&no, 512, 512), [Some(0), None], "outside it: read");
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 512, 512), [None, None], "inside: zeros");
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 58 * KIB, 4 * KIB), [None, None], "up to its last page");
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 63 * KIB, 2 * KIB), [None, Some((1 << 20) + 64 * KIB)]);
        // a write of part of a page zeroes it (counted once: then it is cached), of a
        // whole page does not count
        assert_eq!(c.dirty(&mut no, (1 << 20) + 512, 512, 0, Nanos::ZERO), 1);
        assert_eq!(c.dirty(&mut no, (1 << 20) + 1024, 512, 0, Nanos::ZERO), 0, "cached now");
        assert_eq!(c.dirty(&mut no, (1 << 20) + 4 * KIB, 4 * KIB, 0, Nanos::ZERO), 0, "a whole page");
        assert_eq!(c.dirty(&mut no, (1 << 20) + 9 * KIB, 2 * KIB, 0, Nanos::ZERO), 1);
        // written back and evicted, the page holds data: a write of part of it reads it
        while let Some(chunk) = c.next_chunk(None, Nanos::MAX, 1 << 20) {
            c.written_back(&chunk);
        }
        for k in 0..256 {
            c.fill((512 + k) * 4 * KIB, 4 * KIB);
        }
        assert!(!c.holds(1 << 20, 4 * KIB), "evicted");
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 512, 512), [Some(1 << 20), None]);
        // a hole punched over the whole page: zeros again; over part of one: data stays
        c.discard(&mut no, 1 << 20, 4 * KIB);
        c.discard(&mut no, (1 << 20) + 8 * KIB, 2 * KIB);
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 512, 512), [None, None]);
        assert_eq!(c.partial_pages_missing(&no, (1 << 20) + 8 * KIB + 512, 512), [Some((1 << 20) + 8 * KIB), None]);
    }

    #[test]
    fn a_written_page_is_read_from_the_cache_until_trimmed() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        assert!(!c.holds(0, 4096));
        c.dirty(&mut no, 0, 8192, 1, Nanos(5));
        assert!(c.holds(0, 8192) && c.holds(4096, 100));
        assert!(!c.holds(0, 12 * KIB), "the third page was never written");
        c.discard(&mut no, 4096, 4096);
        assert!(c.holds(0, 4096) && !c.holds(4096, 4096));
    }

    #[test]
    fn writeback_takes_contiguous_runs_in_offset_order_and_cleans_them() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        c.dirty(&mut no, 64 * KIB, 8 * KIB, 2, Nanos(1));
        c.dirty(&mut no, 0, 16 * KIB, 1, Nanos(2));
        let a = c.next_chunk(None, Nanos::MAX, 128 * KIB as u32).unwrap();
        assert_eq!(a, Chunk { offset_bytes: 0, len_bytes: 16 * KIB as u32, dirtier: 1 });
        let b = c.next_chunk(None, Nanos::MAX, 4 * KIB as u32).unwrap();
        assert_eq!((b.offset_bytes, b.len_bytes, b.dirtier), (64 * KIB, 4 * KIB as u32, 2), "cut at max_bytes");
        assert_eq!((c.dirty_pages(), c.unwritten_pages()), (1, 6));
        c.written_back(&a);
        assert_eq!(c.unwritten_pages(), 2);
        assert!(c.holds(0, 16 * KIB), "written back pages stay cached, clean");
    }

    #[test]
    fn a_page_dirtied_during_its_writeback_stays_dirty() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        c.dirty(&mut no, 0, 4096, 1, Nanos(1));
        let a = c.next_chunk(None, Nanos::MAX, 4096).unwrap();
        c.dirty(&mut no, 0, 4096, 1, Nanos(2));
        c.written_back(&a);
        assert_eq!(c.dirty_pages(), 1);
        let b = c.next_chunk(None, Nanos::MAX, 4096).unwrap();
        c.written_back(&b);
        assert_eq!(c.unwritten_pages(), 0);
    }

    #[test]
    fn chunks_keep_to_a_range_and_an_age() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        c.dirty(&mut no, 0, 4096, 1, Nanos(10));
        c.dirty(&mut no, 1 << 16, 4096, 1, Nanos(1));
        assert_eq!(c.next_chunk(Some((0, 8192)), Nanos(5), 1 << 20), None, "the page in range is too young");
        assert_eq!(c.next_chunk(None, Nanos(5), 1 << 20).unwrap().offset_bytes, 1 << 16);
    }

    #[test]
    fn the_dirty_limit_holds_writers_but_lets_one_oversized_write_through() {
        let mut c = cache(1 << 20); // 256 pages: limit 51, background 25
        let mut no = NoDataPages::default();
        assert!(!c.must_wait_to_dirty(0, 1 << 20), "nothing unwritten: even a huge write goes");
        c.dirty(&mut no, 0, 50 * 4096, 1, Nanos(1));
        assert!(c.over_background());
        assert!(!c.must_wait_to_dirty(50 * 4096, 4096));
        assert!(c.must_wait_to_dirty(50 * 4096, 8192));
        assert!(!c.must_wait_to_dirty(0, 8192), "pages already dirty cost nothing");
    }

    #[test]
    fn pages_on_their_way_are_not_held_until_filled_and_a_write_overtakes_them() {
        let mut c = cache(1 << 20);
        let mut no = NoDataPages::default();
        c.start_read(0, 16 * KIB);
        assert!(!c.holds(0, 4096) && c.holds_or_reads(0, 16 * KIB) && !c.holds_or_reads(0, 20 * KIB));
        c.dirty(&mut no, 4096, 4096, 1, Nanos(1));
        assert!(c.holds(4096, 4096), "the written page is newer than the read");
        c.discard(&mut no, 0, 4096);
        assert!(c.holds_or_reads(0, 4096), "a trim leaves a page being read to its read");
        c.fill(0, 16 * KIB);
        assert!(c.holds(0, 16 * KIB));
        assert_eq!((c.dirty_pages(), c.clean_pages), (1, 3));
    }

    #[test]
    fn memory_is_bounded_and_the_least_recently_used_clean_pages_go_first() {
        let mut c = cache(1 << 20); // 256 pages
        c.fill(0, 128 * 4096);
        c.fill(128 * 4096, 128 * 4096);
        c.touch(0, 4096);
        c.fill(256 * 4096, 4096);
        assert_eq!(c.resident_pages(), 256);
        assert!(c.holds(0, 4096), "used again, so kept");
        assert!(!c.holds(4096, 4096), "the oldest unused page went");
        for k in 0..10_000u64 {
            c.fill((300 + k % 600) * 4096, 4096);
            c.touch(((k * 7) % 900) * 4096, 4096);
        }
        assert!(c.resident_pages() <= 256);
        assert!(c.lru.queue.len() as u64 <= 2 * c.clean_pages + 1024, "stale entries are dropped");
        assert_eq!(c.clean_pages, c.pages.values().filter(|pg| pg.clean_stamp > 0).count() as u64);
    }
}
