//! Fuzzes a whole simulated run: any job file that parses, under any shipped policy, on
//! the simple model or a small flash drive, each with or without the page cache, must run to
//! an error other than a stall or to a report, never panic or hang, complete every
//! request it issued, account for each in the statistics and render its reports.
//!
//! The first input byte picks the policy (each shipped policy's example, or one of the
//! modes in `MORE_SPECS` that an example does not reach), the second the device and cache (its top bit
//! runs the input twice, to compare the JSON reports); the rest is the job file and,
//! after a line `%%`, a block trace it may replay (`read_iolog=fuzz.trace`). Runtimes are
//! capped at 20 ms of simulated time so one input runs in milliseconds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched::run::{run_sim, RunSpec};
use nvsched_core::Nanos;
use nvsched_fuzz::FixedEnv;
use nvsched_policy::POLICIES;
use nvsched_report::Format;
use nvsched_ssd::{load_profile, DeviceProfile};
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;
use std::sync::OnceLock;

const MAX_RUNTIME: Nanos = Nanos::from_ms(20);
const MAX_RAMP: Nanos = Nanos::from_ms(5);
/// Clones per job: thousands of clones each reading a whole (1 GiB) device through the
/// page cache is correct but takes minutes (`numjobs=3K`: 806 M requests).
const MAX_NUMJOBS: u32 = 16;
/// A small page cache (8 MiB), so that buffered jobs fill it, evict and write back.
const PAGE_CACHE_BYTES: &str = "8388608";

/// A 1 GiB 970 EVO Plus (48 blocks per die, a 16 MiB SLC cache), half written, so that
/// writes reach TLC and garbage collection within a short run; the one with the page
/// cache also schedules reads ahead of its dies' backlogs (`nand.read_priority`).
fn small_flash(page_cache: bool) -> DeviceProfile {
    let set = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut overrides = vec![
        set("capacity_bytes", "1073741824"),
        set("nand.blocks_per_die", "48"),
        set("nand.slc_static_bytes", "16777216"),
        set("nand.slc_dynamic_max_bytes", "0"),
        set("nand.bg_gc_free_blocks", "30"),
        set("nand.precondition", "partial:0.5"),
    ];
    if page_cache {
        overrides.push(set("host.page_cache.size_bytes", PAGE_CACHE_BYTES));
        overrides.push(set("nand.read_priority", "true"));
    }
    load_profile("970evoplus-250g", &overrides).expect("the small flash profile loads")
}

/// The simple model, with the page cache or without.
fn simple(page_cache: bool) -> DeviceProfile {
    let cache = ("host.page_cache.size_bytes".to_string(), if page_cache { PAGE_CACHE_BYTES } else { "0" }.to_string());
    load_profile("simple-nvme", &[cache]).expect("simple-nvme loads")
}

fn devices() -> &'static [DeviceProfile; 4] {
    static DEVICES: OnceLock<[DeviceProfile; 4]> = OnceLock::new();
    DEVICES.get_or_init(|| {
        // jobs may write logs (write_lat_log=...) into the working directory, and replay
        // the input's trace from it
        let scratch = std::env::temp_dir().join("nvsched-fuzz");
        std::fs::create_dir_all(&scratch).expect("a scratch directory");
        std::env::set_current_dir(&scratch).expect("into the scratch directory");
        [simple(false), simple(true), small_flash(false), small_flash(true)]
    })
}

/// Policy settings beyond the registry's examples: io.latency on the targets the job file
/// gives its cgroups (`cgroup_io_latency=`), and on one cgroup's target beside them.
const MORE_SPECS: &[&str] = &["iolatency", "iolatency:target=200us,tenant=1"];

const TRACE_FILE: &str = "fuzz.trace";

/// Where the job file ends and the trace begins.
const TRACE_SEPARATOR: &[u8] = b"\n%%\n";

fuzz_target!(|data: &[u8]| {
    let [policy_pick, device_pick, input @ ..] = data else { return };
    let devices = devices();
    // after a line `%%`, a block trace the job may replay (read_iolog=fuzz.trace)
    let (job, trace) = match input.windows(TRACE_SEPARATOR.len()).position(|w| w == TRACE_SEPARATOR) {
        Some(at) => (&input[..at], &input[at + TRACE_SEPARATOR.len()..]),
        None => (input, &[][..]),
    };
    std::fs::write(TRACE_FILE, trace).expect("the trace file");
    let text = String::from_utf8_lossy(job);
    let Ok(mut file) = parse_job_str(&text, Path::new("fuzz.fio"), &FixedEnv, ParseOptions::default()) else {
        return;
    };
    for job in &mut file.jobs {
        if job.runtime == Nanos::ZERO || job.runtime > MAX_RUNTIME {
            job.runtime = MAX_RUNTIME;
        }
        job.ramp_time = job.ramp_time.min(MAX_RAMP);
        job.numjobs = job.numjobs.min(MAX_NUMJOBS);
    }
    let spec = match usize::from(*policy_pick) % (POLICIES.len() + MORE_SPECS.len()) {
        i if i < POLICIES.len() => POLICIES[i].example,
        i => MORE_SPECS[i - POLICIES.len()],
    };
    let profile = &devices[usize::from(*device_pick & 0x7f) % devices.len()];
    let run = || {
        let policy = nvsched_policy::build(spec).expect("every policy's example, and MORE_SPECS, builds");
        let run_spec = RunSpec { jobs: &file, policy, profile, seed: u64::from(*device_pick), drive_states: None };
        run_sim(run_spec, &mut nvsched_sim::NoObserver, 0)
    };
    match run() {
        // a stall is the engine's or a policy's fault, never the job file's
        Err(e) => assert!(!e.contains("stalled"), "{spec}: {e}"),
        Ok((report, outcome)) => {
            // the reports render (the renderers derive counts from the statistics)
            let _ = (report.render(Format::Normal), report.render(Format::Terse));
            // one input in two also renders json+ and runs again: the same JSON, byte for byte
            if device_pick & 0x80 != 0 {
                let _ = report.render(Format::JsonPlus);
                let again = run().expect("a run that succeeded succeeds again").0;
                assert_eq!(report.render(Format::Json), again.render(Format::Json), "{spec}: deterministic");
            }
            let e = &outcome.engine;
            assert_eq!(e.completed, e.requests, "{spec}: every issued request completes");
            let reported: u64 = outcome.clones.iter().map(|c| c.stats.recorded() + c.stats.discarded()).sum();
            assert_eq!(reported, e.requests, "{spec}: the statistics account for every request");
        }
    }
});
