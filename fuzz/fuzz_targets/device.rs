//! Fuzzes a run on a real device: the io_uring engine on small new files in a scratch
//! directory. Any job that parses, under any shipped policy, must end in an error or a
//! report, never panic or hang, and its statistics must account for every request the
//! engine issued.
//!
//! The input runs as root on the machine itself, so it only chooses what cannot reach
//! outside the scratch directory: lines whose option is not on `ALLOWED` are dropped
//! before parsing (no file names, directories, logs, traces, hooks or cgroups), and the
//! parsed jobs are cut down to at most 3 clones of 3 files of 1 MiB each, depth 256, 5 ms of
//! runtime and pauses of 1 ms. The first input byte picks the policy; the rest is the
//! job file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched_core::Nanos;
use nvsched_fuzz::FixedEnv;
use nvsched_policy::POLICIES;
use nvsched_uring::UringOptions;
use nvsched_workload::SizeOrPercent;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MAX_RUNTIME: Nanos = Nanos::from_ms(5);
const MAX_PAUSE: Nanos = Nanos::from_ms(1);
const MAX_FILE_BYTES: u64 = 1 << 20;
const MAX_DEPTH: u32 = 256;

/// The options an input may set: what a job does to its own files, none of which names a
/// path or runs anything.
const ALLOWED: &[&str] = &[
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bsrange",
    "bssplit",
    "blockalign",
    "ba",
    "ioengine",
    "iodepth",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "iodepth_low",
    "direct",
    "sync",
    "fsync",
    "fdatasync",
    "end_fsync",
    "fsync_on_close",
    "sync_file_range",
    "size",
    "io_size",
    "offset",
    "offset_increment",
    "nrfiles",
    "file_service_type",
    "openfiles",
    "numjobs",
    "loops",
    "number_ios",
    "time_based",
    "runtime",
    "ramp_time",
    "startdelay",
    "thinktime",
    "thinktime_blocks",
    "thinktime_spin",
    "rate",
    "rate_iops",
    "rate_min",
    "prio",
    "prioclass",
    "nice",
    "norandommap",
    "randrepeat",
    "random_distribution",
    "percentage_random",
    "zonesize",
    "zoneskip",
    "zonerange",
    "verify",
    "do_verify",
    "verify_backlog",
    "verify_fatal",
    "serialize_overlap",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "group_reporting",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "max_latency",
    "continue_on_error",
    "ignore_error",
    "exitall",
    "exit_what",
    "flow",
    "flow_id",
    "rw_sequencer",
    "force_async",
    "nowait",
    "sqthread_poll",
    "iodepth_batch_complete_max",
    "thinktime_iotime",
    "rate_process",
    "rate_cycle",
    "rate_ignore_thinktime",
    "steadystate",
    "steadystate_duration",
    "steadystate_ramp_time",
    "create_only",
    "lockfile",
    "unlink",
    "cgroup",
    "cgroup_weight",
    "write_hint",
    "verify_pattern",
    "verify_interval",
    "verify_backlog_batch",
    "buffer_pattern",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "dedupe_percentage",
    "buffer_compress_percentage",
];

/// Keeps section headers and the allowed options, drops every other line. A job's name
/// makes its default file name (`NAME.0.0`), so names keep only letters, digits, `_` and
/// `-`: no path leaves the scratch directory.
fn allowed_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let safe: String =
                name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
            out.push_str(&format!("[{safe}]\n"));
            continue;
        }
        let key = t.split('=').next().unwrap_or("").trim().to_ascii_lowercase();
        if ALLOWED.contains(&key.as_str()) {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}

/// The scratch directory the jobs' files go in, emptied before each input.
fn scratch() -> &'static PathBuf {
    static SCRATCH: OnceLock<PathBuf> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = std::env::temp_dir().join("nvsched-fuzz-device");
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        std::env::set_current_dir(&dir).expect("into the scratch directory");
        nvsched_uring::available().expect("io_uring works here");
        dir
    })
}

fn empty(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("the scratch directory").flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
}

fn cap(size: &mut Option<SizeOrPercent>) {
    if !matches!(size, Some(SizeOrPercent::Bytes(b)) if *b <= MAX_FILE_BYTES) {
        *size = Some(SizeOrPercent::Bytes(MAX_FILE_BYTES));
    }
}

fuzz_target!(|data: &[u8]| {
    let [policy_pick, input @ ..] = data else { return };
    let dir = scratch();
    empty(dir);
    let text = allowed_lines(&String::from_utf8_lossy(input));
    let Ok(mut file) = parse_job_str(&text, Path::new("fuzz.fio"), &FixedEnv, ParseOptions::default()) else {
        return;
    };
    for spec in &mut file.jobs {
        cap(&mut spec.size);
        if spec.io_size.is_some() {
            cap(&mut spec.io_size);
        }
        if !matches!(spec.offset, SizeOrPercent::Bytes(b) if b <= MAX_FILE_BYTES) {
            spec.offset = SizeOrPercent::Bytes(0);
        }
        spec.offset_increment = SizeOrPercent::Bytes(0);
        spec.filesize = None;
        spec.nrfiles = spec.nrfiles.clamp(1, 3);
        spec.numjobs = spec.numjobs.clamp(1, 3);
        spec.loops = spec.loops.clamp(1, 3);
        // each request in flight holds a buffer of the largest block size, as in fio
        // (iodepth=32k of 64 KiB blocks: 2 GiB), which is past the fuzzer's memory
        spec.iodepth = spec.iodepth.clamp(1, MAX_DEPTH);
        spec.iodepth_batch_submit = spec.iodepth_batch_submit.clamp(1, spec.iodepth);
        spec.iodepth_batch_complete_min = spec.iodepth_batch_complete_min.min(spec.iodepth);
        spec.iodepth_low = spec.iodepth_low.min(spec.iodepth);
        if spec.runtime == Nanos::ZERO || spec.runtime > MAX_RUNTIME {
            spec.runtime = MAX_RUNTIME;
        }
        spec.ramp_time = spec.ramp_time.min(MAX_PAUSE);
        spec.startdelay = spec.startdelay.min(MAX_PAUSE);
        spec.thinktime = spec.thinktime.min(MAX_PAUSE);
    }
    let info = &POLICIES[usize::from(*policy_pick) % POLICIES.len()];
    let policy = nvsched_policy::build(info.example).expect("every policy's example builds");
    let opts = UringOptions { ring_entries: 64, ..UringOptions::default() };
    if let Ok(outcome) = nvsched_uring::run(&file.jobs, policy.scheduler, &opts) {
        let reported: u64 = outcome.clones.iter().map(|c| c.stats.recorded() + c.stats.discarded()).sum();
        assert_eq!(reported, outcome.requests, "{}: the statistics account for every request", info.id);
    }
    empty(dir);
});
