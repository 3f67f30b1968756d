//! How fio sets up new regular files before the jobs start: which hold data.
//!
//! fio sets the files up one job after another, in job order, before any job starts
//! (`create_serialize`). A job that needs more of a file than it has makes the file
//! anew: one that reads, or writes with `overwrite=1` (`JobSpec::lays_out_data`), writes
//! it out; any other only allocates it, without data, at the size it needs, or at none
//! with `fallocate=none` or `keep`, so that the next job on it makes it again. So a
//! reader after a writer of the same file finds the file the writer allocated and reads
//! what that one wrote in the run (fio 3.33: 64 MiB written to the disk for a 64 MiB
//! file), while a writer after a reader finds it written out (128 MiB).

use crate::{JobSpec, Region};
use std::collections::HashMap;

/// Whether a job's file name is a device (`/dev/...`), which fio does not set up.
pub fn is_device_path(name: &str) -> bool {
    name.starts_with("/dev/")
}

/// Each regular file the jobs name (first use first) and how many bytes from its start
/// hold data when the jobs start, if it is new (`None`: none). `needed` gives the bytes
/// a job's clone needs of one of its files (`clone`, `filenum`).
pub fn data_at_start(jobs: &[JobSpec], needed: impl Fn(&JobSpec, u32, u32) -> u64) -> Vec<(String, Option<u64>)> {
    // per file: its name, its size, and whether it holds data
    let mut made: Vec<(String, u64, bool)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for spec in jobs {
        for (clone, filenum) in spec.clone_files() {
            let name = spec.file_name_of(clone, filenum);
            if is_device_path(&name) {
                continue;
            }
            let k = *index.entry(name.clone()).or_insert_with(|| {
                made.push((name, 0, false));
                made.len() - 1
            });
            let need = needed(spec, clone, filenum);
            if need > made[k].1 {
                let sized = if spec.fallocate_sizes_file { need } else { 0 };
                (made[k].1, made[k].2) = if spec.lays_out_data() { (need, true) } else { (sized, false) };
            }
        }
    }
    made.into_iter().map(|(name, size, data)| (name, data.then_some(size))).collect()
}

/// A file as a clone's setup finds it: whether it is a regular file (a device is never
/// resized), its length before any clone's setup (0: new; a device's size), and its
/// length once every clone is set up.
#[derive(Clone, Copy, Debug)]
pub struct FileLens {
    pub regular: bool,
    pub at_start: u64,
    pub set_up: u64,
}

/// fio's setup_files going through the clones one after another, in job then clone
/// order, before any starts (`create_serialize`): a clone's turn finds each file as the
/// run found it or as an earlier clone laid it out, and a clone that sizes its files
/// (`JobSpec::sizes_its_files`; `file_append` needs `size` in bytes) leaves them that
/// long or longer.
#[derive(Debug, Default)]
struct SetupOrder {
    lens: HashMap<String, u64>,
}

impl SetupOrder {
    /// Clone `clone`'s region in its file `filenum` ([`JobSpec::region_in`]), its turn
    /// coming now; call it for every clone's files in setup order.
    fn region(&mut self, spec: &JobSpec, clone: u32, filenum: u32, file: FileLens) -> Result<Region, String> {
        let name = spec.file_name_of(clone, filenum);
        let before = self.lens.get(&name).copied().unwrap_or(file.at_start);
        let region = spec.region_in(clone, filenum, &name, file.regular, before, file.set_up)?;
        if file.regular && spec.sizes_its_files() {
            self.lens.insert(name, before.max(region.file_bytes));
        }
        Ok(region)
    }
}

/// Each clone's regions, one per file, by job and clone (`[job][clone][filenum]`), set up
/// one clone after another in fio's order (`SetupOrder`); `file` says what a file
/// holds, by name.
pub fn set_up_regions(jobs: &[JobSpec], file: impl Fn(&str) -> FileLens) -> Result<Vec<Vec<Vec<Region>>>, String> {
    let mut order = SetupOrder::default();
    let mut regions = Vec::with_capacity(jobs.len());
    for spec in jobs {
        let mut of_clones = vec![Vec::with_capacity(spec.files_per_clone() as usize); spec.numjobs as usize];
        for (clone, filenum) in spec.clone_files_in_fio_order() {
            let lens = file(&spec.file_name_of(clone, filenum));
            of_clones[clone as usize].push(order.region(spec, clone, filenum, lens)?);
        }
        regions.push(of_clones);
    }
    Ok(regions)
}

/// How long the clones that size their files leave each regular file, set up one after
/// another (`SetupOrder`): a later clone may lay a file out further than its own
/// `needed_file_bytes` says (a percentage offset of what an earlier clone laid out,
/// `file_append` after an earlier clone's data). `at_start` gives a file's length before
/// the run (0: new), or None for a device.
pub fn set_up_lens(jobs: &[JobSpec], at_start: impl Fn(&str) -> Option<u64>) -> HashMap<String, u64> {
    let mut order = SetupOrder::default();
    for spec in jobs.iter().filter(|spec| spec.sizes_its_files()) {
        for (clone, filenum) in spec.clone_files_in_fio_order() {
            if let Some(len) = at_start(&spec.file_name_of(clone, filenum)) {
                // a clone that cannot be set up says so when its region is taken
                let _ = order.region(spec, clone, filenum, FileLens { regular: true, at_start: len, set_up: u64::MAX });
            }
        }
    }
    order.lens
}

/// fio's `unlink=1`: a job's regular files are removed when it finishes. A clone that
/// starts later opens them again (fio opens a job's files when it starts, after every
/// file was set up): one whose job writes opens with `O_CREAT` and makes the file anew,
/// empty; any other finds nothing and fails with ENOENT before any I/O (fio 3.33: `err=2
/// ... func=open(FILE), error=No such file or directory`). A clone that has a file open
/// when another unlinks it keeps using it.
#[derive(Debug, Default)]
pub struct UnlinkedFiles {
    names: std::collections::HashSet<String>,
}

/// What opening a clone's files at its start found.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// Every file is there; `recreated` names those the clone made anew (they hold no data).
    Files { recreated: Vec<String> },
    /// This file was unlinked and the clone does not write: ENOENT.
    Missing(String),
}

impl UnlinkedFiles {
    /// Clone `clone` of `spec` finished: with `unlink`, its regular files are gone.
    /// Returns their names (none without `unlink`).
    pub fn finished(&mut self, spec: &JobSpec, clone: u32) -> Vec<String> {
        if !spec.unlink {
            return Vec::new();
        }
        let names: Vec<String> = regular_files_of(spec, clone).collect();
        self.names.extend(names.iter().cloned());
        names
    }

    /// Whether the file `name` is removed (and not made anew since).
    pub fn is_removed(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Clone `clone` of `spec` starts and opens its files.
    pub fn open(&mut self, spec: &JobSpec, clone: u32) -> Opened {
        if self.names.is_empty() {
            return Opened::Files { recreated: Vec::new() };
        }
        let creates = spec.active_ops().any(|op| op == nvsched_core::Op::Write);
        let gone: Vec<String> = regular_files_of(spec, clone).filter(|name| self.names.contains(name)).collect();
        match gone.first() {
            Some(name) if !creates => Opened::Missing(name.clone()),
            _ => {
                for name in &gone {
                    self.names.remove(name);
                }
                Opened::Files { recreated: gone }
            }
        }
    }
}

/// The names of clone `clone`'s files that are regular files (not devices).
pub fn regular_files_of(spec: &JobSpec, clone: u32) -> impl Iterator<Item = String> + '_ {
    (0..spec.files_per_clone()).map(move |f| spec.file_name_of(clone, f)).filter(|name| !is_device_path(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobfile::tests::env;
    use crate::spec::{parse_job_str, ParseOptions};
    use std::path::Path;

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs
    }

    #[test]
    fn an_unlinked_file_fails_a_job_that_only_reads_and_a_writer_makes_it_anew() {
        let js = jobs(
            "[global]\nsize=1m\n[w]\nrw=write\nfilename=a:b:/dev/sda\nunlink=1\n\
             [r]\nrw=read\nfilename=b\n[t]\nrw=trim\nfilename=a\n[rw]\nrw=randrw\nfilename=a\n[dev]\nrw=read\nfilename=/dev/sda\n",
        );
        let (w, r, t, rw, dev) = (&js[0], &js[1], &js[2], &js[3], &js[4]);
        let mut unlinked = UnlinkedFiles::default();
        assert_eq!(unlinked.open(r, 0), Opened::Files { recreated: vec![] }, "nothing unlinked yet");
        unlinked.finished(w, 0);
        assert_eq!(unlinked.open(r, 0), Opened::Missing("b".into()));
        assert_eq!(unlinked.open(t, 0), Opened::Missing("a".into()), "a trim opens without O_CREAT");
        assert_eq!(unlinked.open(dev, 0), Opened::Files { recreated: vec![] }, "devices are never unlinked");
        assert_eq!(unlinked.open(rw, 0), Opened::Files { recreated: vec!["a".into()] });
        assert_eq!(unlinked.open(t, 0), Opened::Files { recreated: vec![] }, "made anew, it is there again");
        assert_eq!(unlinked.open(r, 0), Opened::Missing("b".into()), "b is still gone");
        // a job without unlink removes nothing
        let mut kept = UnlinkedFiles::default();
        kept.finished(r, 0);
        assert_eq!(kept.open(r, 0), Opened::Files { recreated: vec![] });
    }
}
