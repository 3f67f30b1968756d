//! Where each job clone's I/O lands on the simulated device: every distinct file gets a
//! byte range of the device (files laid end to end, 1 MiB aligned); a `/dev/...` name
//! means the whole device. Each clone then works in `[offset, offset + size)` of its file.

use nvsched_workload::{JobSpec, Region, SizeOrPercent};

const FILE_ALIGN: u64 = 1 << 20;

/// A file placed on the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedFile {
    pub name: String,
    pub start: u64,
    pub len: u64,
}

fn is_device_path(name: &str) -> bool {
    name.starts_with("/dev/")
}

/// Bytes a clone needs its file to hold.
fn needed_file_size(spec: &JobSpec, capacity: u64) -> Result<u64, String> {
    if let Some(fs) = spec.filesize {
        return Ok(fs);
    }
    let offset = match spec.offset {
        SizeOrPercent::Bytes(b) => b,
        SizeOrPercent::Percent(_) => 0,
    };
    let offset = offset + spec.offset_increment * u64::from(spec.numjobs.saturating_sub(1));
    if let Some(bytes) = spec.replay_bytes() {
        return Ok(offset + bytes);
    }
    match spec.size {
        Some(SizeOrPercent::Bytes(b)) => Ok(offset + b),
        Some(SizeOrPercent::Percent(p)) => Ok((capacity as f64 * p / 100.0) as u64),
        None => Err(format!(
            "job '{}' ({}): set size or filesize for its file, or filename=/dev/... to use the whole device",
            spec.name, spec.at
        )),
    }
}

/// Places every file and returns each clone's region, in job then clone order.
pub fn place(jobs: &[JobSpec], capacity: u64) -> Result<(Vec<PlacedFile>, Vec<Vec<Region>>), String> {
    let mut files: Vec<PlacedFile> = Vec::new();
    for spec in jobs {
        for clone in 0..spec.numjobs {
            let name = spec.file_name(clone);
            let len = if is_device_path(&name) { capacity } else { needed_file_size(spec, capacity)? };
            match files.iter_mut().find(|f| f.name == name) {
                Some(f) => f.len = f.len.max(len),
                None => files.push(PlacedFile { name, start: 0, len }),
            }
        }
    }
    let mut next = 0u64;
    for f in files.iter_mut().filter(|f| !is_device_path(&f.name)) {
        f.start = next;
        next = (f.start + f.len).div_ceil(FILE_ALIGN) * FILE_ALIGN;
    }
    if next > capacity {
        return Err(format!(
            "the job files need {} bytes but the device holds {capacity}; shrink size/filesize or use filename=/dev/...",
            next
        ));
    }
    let mut regions = Vec::with_capacity(jobs.len());
    for spec in jobs {
        let mut clone_regions = Vec::with_capacity(spec.numjobs as usize);
        for clone in 0..spec.numjobs {
            let name = spec.file_name(clone);
            let file = files.iter().find(|f| f.name == name).expect("placed above");
            let offset = spec.offset.resolve(file.len) + spec.offset_increment * u64::from(clone);
            if offset >= file.len {
                return Err(format!(
                    "job '{}' ({}): offset {offset} is beyond the end of '{}' ({} bytes)",
                    spec.name, spec.at, file.name, file.len
                ));
            }
            let len = spec.size.map_or(file.len - offset, |s| s.resolve(file.len)).min(file.len - offset);
            clone_regions.push(Region { start: file.start + offset, len });
        }
        regions.push(clone_regions);
    }
    Ok((files, regions))
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

    #[test]
    fn files_are_laid_end_to_end_and_shared_by_name() {
        let j =
            jobs("[a]\nsize=1m\nnumjobs=2\n[b]\nfilename=shared\nsize=3m\n[c]\nfilename=shared\nsize=1m\noffset=1m\n");
        let (files, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), vec!["a.0.0", "a.1.0", "shared"]);
        assert_eq!(regions[0][1], Region { start: 1 << 20, len: 1 << 20 });
        assert_eq!(regions[1][0], Region { start: 2 << 20, len: 3 << 20 });
        assert_eq!(regions[2][0], Region { start: 3 << 20, len: 1 << 20 });
    }

    #[test]
    fn device_paths_cover_the_device() {
        let j = jobs("[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme0n1\nsize=50%\noffset=50%\n");
        let (_, regions) = place(&j, 1 << 30).unwrap();
        assert_eq!(regions[0][0], Region { start: 0, len: 1 << 30 });
        assert_eq!(regions[1][0], Region { start: 1 << 29, len: 1 << 29 });
    }

    #[test]
    fn offset_increment_separates_clones() {
        let j = jobs("[a]\nfilename=/dev/x\nsize=1m\nnumjobs=3\noffset_increment=10m\n");
        let (_, regions) = place(&j, 1 << 30).unwrap();
        let starts: Vec<u64> = regions[0].iter().map(|r| r.start).collect();
        assert_eq!(starts, vec![0, 10 << 20, 20 << 20]);
    }

    #[test]
    fn errors_are_explained() {
        let e = place(&jobs("[a]\nrw=read\n"), 1 << 30).unwrap_err();
        assert!(e.contains("set size or filesize"), "{e}");
        let e = place(&jobs("[a]\nsize=2g\n"), 1 << 30).unwrap_err();
        assert!(e.contains("the device holds"), "{e}");
        let e = place(&jobs("[a]\nfilesize=1m\noffset=2m\n"), 1 << 30).unwrap_err();
        assert!(e.contains("beyond the end"), "{e}");
    }
}
