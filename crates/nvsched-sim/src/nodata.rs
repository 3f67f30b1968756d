//! The pages that hold no data: those of the files fio only allocated before the run
//! (their extents are unwritten) that nothing has written since, or that a trim emptied
//! again. Linux reads such a page as zeros without I/O, buffered or direct, and a
//! buffered write of part of one fills the rest with zeros instead of reading it.

use crate::pagecache::{covers_whole_page, pages, PAGE_BYTES};

/// One file without data at the start, by pages.
struct File {
    first_page: u64,
    end_page: u64,
    /// A bit per page: written since the run began.
    written: Vec<u64>,
    /// For a file made anew during the run (fio's `unlink=1`), the device offset past
    /// the last byte written since: its end of file.
    end_bytes: Option<u64>,
}

impl File {
    /// The file over the byte range, with no page written.
    fn new(start_bytes: u64, len_bytes: u64, end_bytes: Option<u64>) -> File {
        let p = pages(start_bytes, len_bytes);
        File {
            first_page: p.start,
            end_page: p.end,
            written: vec![0; (p.end - p.start).div_ceil(64) as usize],
            end_bytes,
        }
    }

    fn bit(&self, p: u64) -> (usize, u64) {
        let i = p - self.first_page;
        ((i / 64) as usize, 1 << (i % 64))
    }
}

/// A read that reaches past the end of a file made anew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PastEnd {
    /// It begins before the end.
    pub straddles: bool,
}

/// The pages without data, over every file that held none at the start.
#[derive(Default)]
pub struct NoDataPages {
    /// In offset order.
    files: Vec<File>,
}

impl NoDataPages {
    /// The files (device byte ranges, not overlapping) that hold no data when the run
    /// begins.
    pub fn new(ranges: &[(u64, u64)]) -> NoDataPages {
        let mut files: Vec<File> = ranges.iter().map(|&(start, len)| File::new(start, len, None)).collect();
        files.sort_unstable_by_key(|f| f.first_page);
        NoDataPages { files }
    }

    /// No file is tracked: every page holds data.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn file_of(&self, p: u64) -> Option<usize> {
        let i = self.files.partition_point(|f| f.first_page <= p).checked_sub(1)?;
        (p < self.files[i].end_page).then_some(i)
    }

    /// Whether page `p` holds no data.
    pub fn holds_no_data(&self, p: u64) -> bool {
        self.file_of(p).is_some_and(|i| {
            let f = &self.files[i];
            let (word, bit) = f.bit(p);
            f.written[word] & bit == 0
        })
    }

    /// Whether no page of the byte range holds data.
    pub fn holds_no_data_in(&self, offset_bytes: u64, len_bytes: u64) -> bool {
        !self.is_empty() && pages(offset_bytes, len_bytes).all(|p| self.holds_no_data(p))
    }

    /// Page `p` has data (`true`) or none again (`false`, a trim), where that is tracked;
    /// returns whether it held no data before.
    pub fn set_written(&mut self, p: u64, written: bool) -> bool {
        let Some(i) = self.file_of(p) else { return false };
        let f = &mut self.files[i];
        let (word, bit) = f.bit(p);
        let had_none = f.written[word] & bit == 0;
        if written {
            f.written[word] |= bit;
        } else {
            f.written[word] &= !bit;
        }
        had_none
    }

    /// A file made anew (fio's `unlink=1`, then a job that writes it): none of its pages
    /// hold data, whether or not it held any at the start.
    pub fn emptied(&mut self, start_bytes: u64, len_bytes: u64) {
        let file = File::new(start_bytes, len_bytes, Some(start_bytes));
        match self.files.binary_search_by_key(&file.first_page, |f| f.first_page) {
            Ok(i) => self.files[i] = file,
            Err(i) => self.files.insert(i, file),
        }
    }

    /// A write of the byte range moves the end of a file made anew past it.
    pub fn extend(&mut self, offset_bytes: u64, len_bytes: u64) {
        let Some(i) = self.file_of(offset_bytes / PAGE_BYTES) else { return };
        if let Some(end) = &mut self.files[i].end_bytes {
            *end = (*end).max(offset_bytes + len_bytes);
        }
    }

    /// Whether a read of the byte range reaches past the end of a file made anew: `None`
    /// if not, else whether it begins before the end (see
    /// `JobRecorder::complete_past_end`).
    pub fn read_past_end(&self, offset_bytes: u64, len_bytes: u64) -> Option<PastEnd> {
        let end = self.file_of(offset_bytes / PAGE_BYTES).and_then(|i| self.files[i].end_bytes)?;
        (offset_bytes + len_bytes > end).then_some(PastEnd { straddles: offset_bytes < end })
    }

    /// A write of the byte range: its pages hold data.
    pub fn written(&mut self, offset_bytes: u64, len_bytes: u64) {
        self.extend(offset_bytes, len_bytes);
        if !self.is_empty() {
            for p in pages(offset_bytes, len_bytes) {
                self.set_written(p, true);
            }
        }
    }

    /// A trim of the byte range: the pages it covers whole hold no data again (a hole
    /// punched over part of a page leaves the page's data).
    pub fn trimmed(&mut self, offset_bytes: u64, len_bytes: u64) {
        if !self.is_empty() {
            for p in pages(offset_bytes, len_bytes).filter(|&p| covers_whole_page(p, offset_bytes, len_bytes)) {
                self.set_written(p, false);
            }
        }
    }
}
