//! A clone's several files and fio's `file_service_type` choosing among them.

use super::*;

/// The files of a clone with several: a generator each (the current one lives in the
/// driver, the others are parked here), and fio's `file_service_type` choosing the next.
/// As in fio, a file is found done only when the next block is asked of it and its pass
/// is over (its generator wraps): it is closed, and another is chosen. The pass over the
/// job's files ends when every one is done; then all are closed and a new pass begins.
/// Round robin goes on from where it stopped, skipping done files and, with `openfiles`,
/// files that cannot be opened yet (fio's busy retry).
#[derive(Debug)]
pub(super) struct FileSet {
    pub(super) parked: Vec<Option<IoGenerator>>,
    current: usize,
    service: FileService,
    /// More I/Os the current file keeps before the next is chosen (round robin, random).
    left: u32,
    /// Where round robin looks next (fio's next_file).
    next_rr: usize,
    open: Vec<bool>,
    open_count: usize,
    /// `openfiles`: how many files may be open at once.
    open_limit: usize,
    /// This pass: the file's pass is over; how many are.
    done: Vec<bool>,
    done_count: usize,
    /// The first I/O of a file's next pass, drawn as its generator found this one over.
    next_pass_first: Vec<Option<IoUnit>>,
    /// Bytes issued to each file this pass, and each file's region length: where a
    /// generator does not go over its region a pass at a time (zipf, random runs), a
    /// file whose bytes cover its region is done.
    done_bytes: Vec<u64>,
    region_len: Vec<u64>,
    /// The job's smallest block: such a file with less than this left is done.
    min_block: u64,
    /// Passes over all the files: each was done (fio's files all done).
    pub(super) passes: u64,
    rng: SimRng,
    /// `file_service_type=zipf|pareto|normal`: the draw of the next file.
    skewed: Option<SkewedFiles>,
}

impl FileSet {
    pub(super) fn new(spec: &JobSpec, regions: &[Region], seed: u64) -> Result<FileSet, String> {
        let mut parked = vec![None];
        for (k, r) in regions.iter().enumerate().skip(1) {
            parked.push(Some(IoGenerator::new(spec, *r, mix64(seed ^ (k as u64).wrapping_mul(0x9e37_79b9)))?));
        }
        let n = regions.len();
        Ok(FileSet {
            parked,
            current: 0,
            service: spec.file_service.clone(),
            left: 0,
            next_rr: 0,
            open: vec![false; n],
            open_count: 0,
            open_limit: if spec.openfiles == 0 { n } else { spec.openfiles as usize },
            done: vec![false; n],
            done_count: 0,
            next_pass_first: vec![None; n],
            done_bytes: vec![0; n],
            region_len: regions.iter().map(|r| r.len).collect(),
            min_block: u64::from(spec.min_bs()).max(1),
            passes: 0,
            rng: SimRng::stream(seed, 9),
            skewed: match &spec.file_service {
                FileService::Skewed(distribution) => Some(SkewedFiles::new(distribution, n)),
                _ => None,
            },
        })
    }

    /// The file for the next I/O or flush, which takes its turn (fio's get_next_file):
    /// the current one while its turn lasts, else the next by the service type. `gen`
    /// becomes the chosen file's generator. Some file is open and not done when called.
    pub(super) fn choose(&mut self, gen: &mut IoGenerator) -> usize {
        let current = self.current;
        if self.open[current] && !self.done[current] {
            if self.service == FileService::Sequential {
                return current;
            }
            if self.left > 0 {
                self.left -= 1;
                return current;
            }
        }
        let n = self.parked.len();
        // a closed file opens if a slot is free; otherwise fio is busy and tries the next
        let may_take = |set: &FileSet, k: usize| !set.done[k] && (set.open[k] || set.open_count < set.open_limit);
        let next = match self.service {
            FileService::Random(_) => {
                let count = (0..n).filter(|&k| may_take(self, k)).count() as u64;
                let pick = self.rng.below(count.max(1)) as usize;
                (0..n).filter(|&k| may_take(self, k)).nth(pick).unwrap_or(current)
            }
            FileService::Skewed(_) => {
                // fio draws again while the file drawn is done or cannot open; a few
                // tries, then the first that can be taken
                let mut skewed = self.skewed.take().expect("a skewed file service has its draw");
                let mut drawn = None;
                for _ in 0..64 {
                    let k = skewed.draw(&mut self.rng);
                    if k < n && may_take(self, k) {
                        drawn = Some(k);
                        break;
                    }
                }
                self.skewed = Some(skewed);
                drawn.or_else(|| (0..n).find(|&k| may_take(self, k))).unwrap_or(current)
            }
            _ => {
                let mut found = current;
                for _ in 0..n {
                    let k = self.next_rr;
                    self.next_rr = (k + 1) % n;
                    if may_take(self, k) {
                        found = k;
                        break;
                    }
                }
                found
            }
        };
        if !self.open[next] {
            self.open[next] = true;
            self.open_count += 1;
        }
        self.left = self.service.turn().saturating_sub(1);
        if next != current {
            let mut other = self.parked[next].take().expect("a parked generator");
            std::mem::swap(gen, &mut other);
            self.parked[current] = Some(other);
            self.current = next;
        }
        next
    }

    /// A new pass: every file starts over from its start and is closed, as fio's
    /// clear_io_state leaves them; round robin goes on from where it stopped, and a
    /// random choice of file starts from `seed` again (fio re-seeds it with the others).
    pub(super) fn restart(&mut self, spec: &JobSpec, regions: &[Region], seed: u64) {
        let fresh = match FileSet::new(spec, regions, seed) {
            Ok(fresh) => fresh,
            Err(_) => return,
        };
        *self = FileSet { next_rr: self.next_rr, passes: self.passes, ..fresh };
    }

    /// File `k`'s pass is over: it is closed until the next pass.
    pub(super) fn retire(&mut self, k: usize) {
        self.done_count += usize::from(!self.done[k]);
        self.done[k] = true;
        if std::mem::take(&mut self.open[k]) {
            self.open_count -= 1;
        }
    }

    /// The next I/O, its `file` set; None where the pass over the files has just ended
    /// (each was done), and the next draw begins a new pass.
    pub(super) fn next_unit(&mut self, gen: &mut IoGenerator, steer: impl Fn(Op) -> Op) -> Option<IoUnit> {
        loop {
            if self.done_count == self.done.len() {
                self.done.iter_mut().for_each(|d| *d = false);
                self.done_count = 0;
                self.open.iter_mut().for_each(|o| *o = false);
                self.open_count = 0;
                self.done_bytes.iter_mut().for_each(|b| *b = 0);
                self.passes += 1;
                return None;
            }
            let k = self.choose(gen);
            // fio's skewed file services start a file over when its pass is used up
            // (get_next_rand_block resets the file), so no file is ever done and the
            // job ends by its bytes
            let starts_over = matches!(self.service, FileService::Skewed(_));
            let mut unit = match self.next_pass_first[k].take() {
                Some(unit) => unit,
                None if !gen.counts_passes() => {
                    if self.region_len[k].saturating_sub(self.done_bytes[k]) < self.min_block {
                        if !starts_over {
                            self.retire(k);
                            continue;
                        }
                        self.done_bytes[k] = 0;
                    }
                    gen.next_unit_steered(&steer)
                }
                None => {
                    let passes = gen.passes_completed();
                    let unit = gen.next_unit_steered(&steer);
                    if gen.passes_completed() != passes && !starts_over {
                        self.next_pass_first[k] = Some(unit);
                        self.retire(k);
                        continue;
                    }
                    unit
                }
            };
            self.done_bytes[k] += u64::from(unit.len_bytes);
            unit.file = k as u16;
            return Some(unit);
        }
    }
}
