//! Where each job clone's I/O lands on the simulated device: every distinct file gets a
//! byte range of the device (files laid end to end, 1 MiB aligned); a `/dev/...` name
//! means the whole device. Each clone then works in `[offset, offset + size)` of its file.

pub(crate) use nvsched_workload::file_setup::is_device_path;
use nvsched_workload::file_setup::{set_up_lens, set_up_regions, FileLens};
use nvsched_workload::{JobSpec, Region};
use std::collections::HashMap;

const FILE_ALIGN: u64 = 1 << 20;

/// A file placed on the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedFile {
    pub name: String,
    pub start: u64,
    pub len: u64,
}

/// Each clone's regions, one per file it works on.
pub type CloneRegions = Vec<Region>;

/// Places every file and returns each clone's regions (one per file of the clone), in
/// job then clone order. A file no job sizes takes the space the sized files leave when
/// a `fill_device` job works on it (shared evenly among such files), as fio's fill
/// grows a file until the file system is full.
pub fn place(jobs: &[JobSpec], capacity: u64) -> Result<(Vec<PlacedFile>, Vec<Vec<CloneRegions>>), String> {
    let mut files: Vec<PlacedFile> = Vec::new();
    // per file: a fill_device job works on it; the first job that gives it no size
    let mut fills: Vec<bool> = Vec::new();
    let mut no_size_from: Vec<Option<&JobSpec>> = Vec::new();
    // each file's index in `files`, by name
    let mut index: HashMap<String, usize> = HashMap::new();
    for spec in jobs {
        for (clone, filenum) in spec.clone_files() {
            let name = spec.file_name_of(clone, filenum);
            let need = if is_device_path(&name) {
                Some(capacity)
            } else {
                spec.needed_file_bytes(clone, filenum, Some(capacity))
            };
            let k = *index.entry(name.clone()).or_insert_with(|| {
                files.push(PlacedFile { name, start: 0, len: 0 });
                fills.push(false);
                no_size_from.push(None);
                files.len() - 1
            });
            match need {
                Some(len) => files[k].len = files[k].len.max(len),
                None => {
                    fills[k] |= spec.fill_device;
                    no_size_from[k].get_or_insert(spec);
                }
            }
        }
    }
    // set up one clone after another, a later clone may lay a file out further
    let set_up = set_up_lens(jobs, |name| (!is_device_path(name)).then_some(0));
    for (name, len) in set_up {
        let f = &mut files[index[&name]];
        f.len = f.len.max(len);
    }
    if let Some(spec) = (0..files.len()).find(|&k| files[k].len == 0 && !fills[k]).and_then(|k| no_size_from[k]) {
        return Err(format!(
            "job '{}' ({}): set size or filesize for its file, or filename=/dev/... to use the whole device",
            spec.name, spec.at
        ));
    }
    // where the next file starts: the files so far may end past what a u64 addresses
    // (746 files of 256 PiB), which only the error below reports
    let mut needed = 0u128;
    // sized files first, in the order the jobs name them; the fill files share the rest
    let mut order: Vec<usize> = (0..files.len()).filter(|&k| !is_device_path(&files[k].name)).collect();
    order.sort_by_key(|&k| fills[k]);
    let fill_count = order.iter().filter(|&&k| fills[k]).count() as u64;
    let mut fill_share = None;
    for k in order {
        let f = &mut files[k];
        f.start = u64::try_from(needed).unwrap_or(u64::MAX);
        if fills[k] {
            let share = *fill_share
                .get_or_insert_with(|| capacity.saturating_sub(f.start) / fill_count / FILE_ALIGN * FILE_ALIGN);
            f.len = f.len.max(share);
        }
        needed = (needed + u128::from(f.len)).div_ceil(FILE_ALIGN.into()) * u128::from(FILE_ALIGN);
    }
    if needed > u128::from(capacity) {
        return Err(format!(
            "the job files need {needed} bytes but the device holds {capacity}; shrink size/filesize or use filename=/dev/..."
        ));
    }
    let mut regions = set_up_regions(jobs, |name| {
        // every simulated file is new
        let (regular, set_up) = (!is_device_path(name), files[index[name]].len);
        FileLens { regular, at_start: if regular { 0 } else { set_up }, set_up }
    })?;
    for (spec, of_clones) in jobs.iter().zip(&mut regions) {
        for (clone, clone_regions) in (0..).zip(of_clones.iter_mut()) {
            for (filenum, r) in (0..).zip(clone_regions.iter_mut()) {
                r.start += files[index[&spec.file_name_of(clone, filenum)]].start;
            }
        }
    }
    Ok((files, regions))
}

/// How many bytes from its start each of `files` holds data when the jobs start, as fio
/// sets new files up (`nvsched_workload::file_setup`); `None`: none, and for a device,
/// which is not set up and holds what the drive's state gives it.
pub fn data_at_start(jobs: &[JobSpec], files: &[PlacedFile], capacity: u64) -> Vec<Option<u64>> {
    let placed: HashMap<&str, u64> = files.iter().map(|f| (f.name.as_str(), f.len)).collect();
    let placed_len = |name: &str| placed.get(name).copied().unwrap_or(0);
    let data = nvsched_workload::file_setup::data_at_start(jobs, |spec, clone, filenum| {
        let name = spec.file_name_of(clone, filenum);
        spec.needed_file_bytes(clone, filenum, Some(capacity)).unwrap_or_else(|| placed_len(&name))
    });
    let data: HashMap<String, Option<u64>> = data.into_iter().collect();
    files.iter().map(|f| data.get(&f.name).copied().flatten()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvsched_workload::jobfile::{Environment, HostEnvironment};
    use nvsched_workload::{parse_job_str, ParseOptions};
    use std::path::Path;

    fn jobs(text: &str) -> Vec<JobSpec> {
        let env: &dyn Environment = &HostEnvironment;
        parse_job_str(text, Path::new("t.fio"), env, ParseOptions::default()).unwrap().jobs
    }

    /// What `data_at_start` says of each file of `text`'s jobs on a 1 GiB device.
    fn data(text: &str) -> Vec<Option<u64>> {
        let jobs = jobs(text);
        let (files, _) = place(&jobs, 1 << 30).unwrap();
        data_at_start(&jobs, &files, 1 << 30)
    }

    #[test]
    fn files_hold_data_at_the_start_as_fio_sets_them_up_one_job_after_another() {
        const MIB: u64 = 1 << 20;
        let two = |first: &str, second: &str| {
            data(&format!("[global]\nfilename=f\nsize=64m\n[a]\n{first}\n[b]\nstonewall\n{second}\n"))[0]
        };
        // measured with fio 3.33 on this VM's ext4 (direct 1 MiB I/O, 64 MiB file): a
        // write job then a read job write 64 MiB to the disk, the reverse order 128 MiB
        // (the reader writes the file out first), and so does the first order with
        // fallocate=none (the writer leaves the file empty, so the reader makes it anew);
        // the other cases follow fio's extend_file
        assert_eq!(two("rw=write", "rw=read"), None, "the writer's data, written during the run");
        assert_eq!(two("rw=read", "rw=write"), Some(64 * MIB));
        assert_eq!(two("rw=write\nfallocate=none", "rw=read"), Some(64 * MIB));
        assert_eq!(two("rw=write\nfallocate=keep", "rw=read"), Some(64 * MIB));
        assert_eq!(two("rw=write\noverwrite=1", "rw=read"), Some(64 * MIB));
        assert_eq!(two("rw=randrw", "rw=write"), Some(64 * MIB));
        // trims are not writes: overwrite=1 does not make fio write the file out
        assert_eq!(two("rw=trim\noverwrite=1", "rw=trim"), None);
        // a job that needs more of the file makes it anew: a writer unlinks the data
        assert_eq!(two("rw=read", "rw=write\nsize=128m"), None);
        assert_eq!(two("rw=write", "rw=read\nsize=128m"), Some(128 * MIB));
        // a job's own files, and a device, which is not set up
        assert_eq!(data("[a]\nrw=randread\nsize=1m\nnumjobs=2\n"), [Some(MIB), Some(MIB)]);
        assert_eq!(data("[a]\nrw=randread\nfilename=/dev/nvme0n1\n"), [None]);
    }

    #[test]
    fn files_are_laid_end_to_end_and_shared_by_name() {
        let j =
            jobs("[a]\nsize=1m\nnumjobs=2\n[b]\nfilename=shared\nsize=3m\n[c]\nfilename=shared\nsize=1m\noffset=1m\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), vec!["a.0.0", "a.1.0", "shared"]);
        assert_eq!(regions[0][1], [Region::new(1 << 20, 1 << 20)]);
        assert_eq!(regions[1][0], [Region::new(2 << 20, 3 << 20)]);
        // c's region starts 1 MiB into the 3 MiB file
        let c = Region {
            start: 3 << 20,
            len: 1 << 20,
            offset_in_file: 1 << 20,
            file_bytes: 3 << 20,
            later_offset_in_file: 1 << 20,
        };
        assert_eq!(regions[2][0], [c]);
    }

    #[test]
    fn clones_set_up_one_after_another_see_a_shared_file_as_they_leave_it() {
        const K: u64 = 1 << 10;
        // fio 3.33 sets clones up in turn: the first lays the new file out to 128 KiB
        // (50% of filesize) and sees it so; the second, 32 KiB in, lays it out to 160 KiB
        // (and, with rw=write:8k loops=3 io_size=160k, issues 120 and 44 writes)
        let j = jobs("[a]\nfilename=f\nsize=50%\nfilesize=256k\nbs=4k\nnumjobs=2\noffset_increment=32k\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(files[0].len, 160 * K);
        let seen: Vec<(u64, u64, u64)> =
            regions[0].iter().map(|r| (r[0].start / K, r[0].len / K, r[0].file_bytes / K)).collect();
        assert_eq!(seen, [(0, 128, 128), (32, 128, 160)]);
        // a percentage offset is of what the file holds at the clone's turn, and the turns
        // go as fio's threads: clone 0 (a new file: at 0, laying 64 KiB out), clone 2 (at
        // 2 x 50% of 64 KiB, laying out 128 KiB), clone 1 (at 50% of 128 KiB)
        let j = jobs("[a]\nfilename=f\nsize=64k\noffset_increment=50%\nbs=4k\nnumjobs=3\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        let starts: Vec<u64> = regions[0].iter().map(|r| r[0].start / K).collect();
        assert_eq!((starts, files[0].len / K), (vec![0, 64, 64], 128));
        // appending clones append one after the other
        let j = jobs("[a]\nfilename=f\nsize=64k\nrw=write\nfile_append=1\nnumjobs=2\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        let spans: Vec<(u64, u64)> = regions[0].iter().map(|r| (r[0].start / K, r[0].len / K)).collect();
        assert_eq!((spans, files[0].len / K), (vec![(0, 64), (64, 64)], 128));
    }

    #[test]
    fn a_clone_past_the_end_of_a_file_already_laid_out_gets_an_empty_region() {
        const K: u64 = 1 << 10;
        // fio 3.33: clone 0 lays the 256 KiB file out; clones 3 and 2 (at 384 and 256 KiB)
        // find it in filesize's range and issue nothing, without an error; clone 1 works
        // from 128 KiB (the file from its offset; size only counts its bytes). The file
        // stays 256 KiB long.
        let j = jobs("[a]\nfilename=f\nrw=read\nsize=32k\nfilesize=256k\nbs=4k\nnumjobs=4\noffset_increment=50%\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(files[0].len, 256 * K);
        let spans: Vec<(u64, u64)> = regions[0].iter().map(|r| (r[0].start / K, r[0].len / K)).collect();
        assert_eq!(spans, [(0, 256), (128, 128), (256, 0), (384, 0)]);
        // at the very end without `size`, fio fails the job ("blocksize is larger than
        // data set range"); past a file it lays out anew too ("you need to specify valid
        // offset="): nvsched refuses both
        let j = jobs("[a]\nfilename=f\nrw=read\nfilesize=256k\nbs=4k\nnumjobs=3\noffset_increment=50%\n");
        assert!(place(&j, 1 << 30).unwrap_err().contains("offset 262144 is beyond the end"));
        let j = jobs("[a]\nfilename=f\nrw=read\nfilesize=256k\nbs=4k\noffset=300k\n");
        assert!(place(&j, 1 << 30).unwrap_err().contains("beyond the end"));
    }

    #[test]
    fn filesize_sizes_each_file_and_the_regions_span_them() {
        // fio 3.33: each file is filesize long and a clone works on all of it from its
        // offset; size no longer cuts the region (it only counts the job's bytes)
        let j = jobs("[a]\nsize=256k\nnrfiles=2\nfilesize=1m\n[b]\nfilesize=64k-256k\nnrfiles=4\nbs=4k\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!((files[0].len, files[1].len), (1 << 20, 1 << 20));
        assert_eq!(regions[0][0], [Region::new(0, 1 << 20), Region::new(1 << 20, 1 << 20)]);
        for (file, region) in files[2..].iter().zip(&regions[1][0]) {
            assert!((64 << 10..=256 << 10).contains(&file.len) && file.len % 4096 == 0, "{file:?}");
            assert_eq!(*region, Region::new(file.start, file.len));
        }
    }

    #[test]
    fn several_files_per_clone_share_the_size_and_are_laid_out_each() {
        // nrfiles: NAME.CLONE.FILENUM, size divided among them, as fio names and sizes them
        let j = jobs("[a]\nsize=3m\nnrfiles=3\nnumjobs=2\n[b]\nfilename=x:y\nsize=2m\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a.0.0", "a.0.1", "a.0.2", "a.1.0", "a.1.1", "a.1.2", "x", "y"]);
        assert!(files.iter().all(|f| f.len == 1 << 20));
        assert_eq!(regions[0][1].len(), 3);
        assert_eq!(regions[0][1][2], Region::new(5 << 20, 1 << 20));
        assert_eq!(regions[1][0], [Region::new(6 << 20, 1 << 20), Region::new(7 << 20, 1 << 20)]);
        // to the byte, as fio 3.33 lays them out (three files of 34133 bytes), each
        // starting on the next file boundary
        let (files, regions) = place(&jobs("[a]\nsize=100k\nnrfiles=3\nbs=4k\n"), 1 << 30).unwrap();
        assert!(files.iter().all(|f| f.len == 34_133), "{files:?}");
        assert_eq!(regions[0][0][1], Region::new(FILE_ALIGN, 34_133));
    }

    #[test]
    fn device_paths_cover_the_device() {
        let j = jobs("[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme0n1\nsize=50%\noffset=50%\n");
        let (_, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(regions[0][0], [Region::new(0, 1 << 30)]);
        assert_eq!(
            regions[1][0],
            [Region {
                start: 1 << 29,
                len: 1 << 29,
                offset_in_file: 1 << 29,
                file_bytes: 1 << 30,
                later_offset_in_file: 1 << 29
            }]
        );
    }

    #[test]
    fn offset_increment_separates_clones() {
        let j = jobs("[a]\nfilename=/dev/x\nsize=1m\nnumjobs=3\noffset_increment=10m\n");
        let (_, regions) = place(&j, 1 << 30).unwrap();
        let starts: Vec<u64> = regions[0].iter().map(|r| r[0].start).collect();
        assert_eq!(starts, vec![0, 10 << 20, 20 << 20]);
        // a percentage is of the device (fio's get_start_offset, aligned up to the
        // smallest block): four clones split it into quarters
        let j = jobs("[a]\nfilename=/dev/x\nsize=25%\nnumjobs=4\noffset_increment=25%\nbs=4k\n");
        let (_, regions) = place(&j, 10 << 20).unwrap();
        let spans: Vec<(u64, u64)> = regions[0].iter().map(|r| (r[0].start, r[0].len)).collect();
        // 25% of 10 MiB is 2621440 bytes, 640 blocks of 4 KiB
        assert_eq!(spans, [(0, 2_621_440), (2_621_440, 2_621_440), (5_242_880, 2_621_440), (7_864_320, 2_621_440)]);
        // on a file the job sizes, of that file (filesize), cut at its end
        let j = jobs("[a]\nfilesize=4m\nsize=1m\nnumjobs=2\nfilename=f\noffset_increment=50%\n");
        let (_, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!((regions[0][1][0].start, regions[0][1][0].len), (2 << 20, 2 << 20));
    }

    #[test]
    fn a_percentage_offset_is_aligned_up_as_fio_aligns_it() {
        // 33% of 10 MiB is 3460300.8 bytes; fio 3.33 starts at 3461120 (4 KiB blocks) and
        // at 3473408 with offset_align=64k
        let base = "[a]\nfilename=/dev/x\nsize=1m\noffset=33%\nbs=4k\n";
        let start = |extra: &str| place(&jobs(&format!("{base}{extra}")), 10 << 20).unwrap().1[0][0][0].start;
        assert_eq!(start(""), 3_461_120);
        assert_eq!(start("offset_align=64k\n"), 3_473_408);
        assert_eq!(start("bs=16k\n"), 3_473_408);
        // each clone of a job with generated file names gets a file as long as its region
        let j = jobs("[a]\nsize=1m\nnumjobs=2\noffset_increment=1m\n");
        let (files, _) = place(&j, 1 << 30).unwrap();
        let lens: Vec<u64> = files.iter().map(|f| f.len).collect();
        assert_eq!(lens, vec![1 << 20, 2 << 20]);
    }

    #[test]
    fn fill_device_files_share_what_the_sized_files_leave() {
        let j = jobs("[fill]\nrw=write\nfill_device=1\n[a]\nsize=3m\n[later]\nstonewall\nfilename=fill.0.0\nrw=read\n");
        let (files, regions) = place(&j, 64 << 20).unwrap();
        let fill = files.iter().find(|f| f.name == "fill.0.0").unwrap();
        assert_eq!((fill.start, fill.len), (3 << 20, 61 << 20));
        // a job that reads the filled file without a size reads all of it
        assert_eq!(regions[2][0], regions[0][0]);
        let j = jobs("[fill]\nrw=write\nfill_device=1\nnumjobs=2\n");
        let (files, _) = place(&j, 64 << 20).unwrap();
        assert_eq!(files.iter().map(|f| (f.start, f.len)).collect::<Vec<_>>(), [(0, 32 << 20), (32 << 20, 32 << 20)]);
        // a size still bounds a fill job's file
        let j = jobs("[fill]\nrw=write\nfill_device=1\nsize=5m\n");
        assert_eq!(place(&j, 64 << 20).unwrap().0[0].len, 5 << 20);
    }

    #[test]
    fn errors_are_explained() {
        let e = place(&jobs("[a]\nrw=read\n"), 1 << 30).unwrap_err();
        assert!(e.contains("set size or filesize"), "{e}");
        let e = place(&jobs("[a]\nsize=2g\n"), 1 << 30).unwrap_err();
        assert!(e.contains("the device holds"), "{e}");
        // more than a u64 addresses: 746 files of 256 PiB (the sum overflowed)
        let e = place(&jobs("[a]\nnumjobs=746\nsize=256p\n"), 1 << 30).unwrap_err();
        assert!(e.contains("need 215019860609176961024 bytes"), "{e}");
        let e = place(&jobs("[a]\nfilesize=1m\noffset=2m\n"), 1 << 30).unwrap_err();
        assert!(e.contains("beyond the end"), "{e}");
    }
}
