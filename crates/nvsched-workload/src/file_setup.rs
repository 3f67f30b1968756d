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

use crate::JobSpec;
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
