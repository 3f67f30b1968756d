//! The pages that hold no data: those of the files fio only allocated before the run
//! (their extents are unwritten) that nothing has written since, or that a trim emptied
//! again. Linux reads such a page as zeros without I/O, buffered or direct, and a
//! buffered write of part of one fills the rest with zeros instead of reading it.

use crate::pagecache::{covers_whole_page, pages};

/// One file without data at the start, by pages.
struct File {
    first_page: u64,
    end_page: u64,
    /// A bit per page: written since the run began.
    written: Vec<u64>,
}

impl File {
    fn bit(&self, p: u64) -> (usize, u64) {
        let i = p - self.first_page;
        ((i / 64) as usize, 1 << (i % 64))
    }
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
        let mut files: Vec<File> = ranges
            .iter()
            .map(|&(start, len)| {
                let p = pages(start, len);
                File { first_page: p.start, end_page: p.end, written: vec![0; (p.end - p.start).div_ceil(64) as usize] }
            })
            .collect();
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
        let p = pages(start_bytes, len_bytes);
        let file =
            File { first_page: p.start, end_page: p.end, written: vec![0; (p.end - p.start).div_ceil(64) as usize] };
        match self.files.binary_search_by_key(&p.start, |f| f.first_page) {
            Ok(i) => self.files[i] = file,
            Err(i) => self.files.insert(i, file),
        }
    }

    /// A write of the byte range: its pages hold data.
    pub fn written(&mut self, offset_bytes: u64, len_bytes: u64) {
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
