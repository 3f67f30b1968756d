//! Every policy under random workloads: each request completes exactly once, runs are
//! deterministic, nothing stalls.

use nvsched::run::{run_sim, RunSpec};
use nvsched_core::Nanos;
use nvsched_policy::{Request, POLICIES};
use nvsched_sim::Observer;
use nvsched_ssd::load_profile;
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::Path;

/// Records every request id seen completing, and when the last one did.
#[derive(Default)]
struct Ledger {
    dispatched: u64,
    completed: HashSet<u64>,
    duplicates: u64,
    last_completion: Nanos,
}

impl Observer for Ledger {
    fn on_dispatch(&mut self, _: Nanos, _: &Request, _: u32) {
        self.dispatched += 1;
    }
    fn on_complete(&mut self, now: Nanos, rq: &Request, _: Nanos) {
        // ids carry a per-slot generation: unique over a run
        if !self.completed.insert(rq.id.0) {
            self.duplicates += 1;
        }
        self.last_completion = self.last_completion.max(now);
    }
}

fn job_section(i: usize, g: &JobGen) -> String {
    let rw = ["read", "write", "randread", "randwrite", "randrw", "rw"][g.rw % 6];
    let engine = if g.sync { "psync" } else { "io_uring" };
    let mut s = format!(
        "[j{i}]\nrw={rw}\nioengine={engine}\niodepth={}\nbs={}\noffset={}m\nsize=64m\ndirect={}\n",
        g.depth,
        // buffered I/O may write part of a page (which is read first)
        if g.buffered { [512, 6144, 4096, 16384][g.bs as usize % 4] } else { 4096 << (g.bs % 4) },
        i * 64,
        u8::from(!g.buffered)
    );
    if g.prio_class > 0 {
        s.push_str(&format!("prioclass={}\nprio={}\n", g.prio_class, g.level));
    }
    if g.nice != 0 {
        s.push_str(&format!("nice={}\n", g.nice));
    }
    if g.tenant > 0 {
        s.push_str(&format!("cgroup=t{}\ncgroup_weight={}\n", g.tenant, 100 * g.tenant));
    }
    if g.think_us > 0 {
        s.push_str(&format!("thinktime={}\n", g.think_us));
    }
    if g.fua {
        s.push_str("sync=dsync\n");
    }
    // every other syncing job uses sync_file_range, with one of its flag sets
    match (g.fsync, g.fsync % 4) {
        (0, _) => {}
        (n, 1) => s.push_str(&format!("sync_file_range=write:{n}\n")),
        (n, 3) => s.push_str(&format!("sync_file_range=wait_before,write,wait_after:{n}\n")),
        (n, _) => s.push_str(&format!("fsync={n}\n")),
    }
    if g.batch > 1 {
        s.push_str(&format!("iodepth_batch_submit={}\n", g.batch));
    }
    // fio's latency search: depth changes, drains, and a restart of the statistics
    if g.latency_target {
        s.push_str("latency_target=300us\nlatency_window=2ms\nlatency_percentile=99\n");
    }
    // what fio leaves out of the statistics: the end-of-pass flushes, and the
    // completions after a job fails (a latency limit that the slower requests pass)
    // a file of its own (a new one, which holds no data unless the job reads it), where
    // the others share the device
    if g.own_file {
        s.push_str(&format!("filename=file{i}\noffset=0\n"));
    }
    match g.ending {
        1 => s.push_str("end_fsync=1\n"),
        2 => s.push_str("fsync_on_close=1\n"),
        3 => s.push_str("max_latency=400us\n"),
        _ => {}
    }
    s
}

#[derive(Debug, Clone)]
struct JobGen {
    rw: usize,
    sync: bool,
    depth: u32,
    bs: u32,
    prio_class: u8,
    level: u8,
    nice: i8,
    tenant: u32,
    think_us: u32,
    fua: bool,
    fsync: u32,
    batch: u32,
    /// Through the page cache, where the host has one.
    buffered: bool,
    latency_target: bool,
    /// 0: nothing; 1: `end_fsync`; 2: `fsync_on_close`; 3: `max_latency`.
    ending: u8,
    own_file: bool,
}

fn job_gen() -> impl Strategy<Value = JobGen> {
    (
        (
            0usize..6,
            any::<bool>(),
            1u32..48,
            0u32..4,
            0u8..4,
            0u8..8,
            prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)],
            prop::bool::weighted(0.3),
        ),
        (
            -20i8..20,
            0u32..4,
            prop_oneof![Just(0u32), 50u32..3000],
            any::<bool>(),
            prop_oneof![Just(0u32), 1u32..16],
            1u32..8,
            any::<bool>(),
            prop::bool::weighted(0.2),
        ),
    )
        .prop_map(
            |(
                (rw, sync, depth, bs, prio_class, level, ending, own_file),
                (nice, tenant, think_us, fua, fsync, batch, buffered, latency_target),
            )| {
                JobGen {
                    rw,
                    sync,
                    depth,
                    bs,
                    prio_class,
                    level,
                    nice,
                    tenant,
                    think_us,
                    fua,
                    fsync,
                    batch,
                    buffered,
                    latency_target,
                    ending,
                    own_file,
                }
            },
        )
}

fn simulate(text: &str, sched: &str, device: &str, page_cache: bool) -> (Ledger, nvsched_sim::SimOutcome, String) {
    let jobs = parse_job_str(text, Path::new("random.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    // a small cache (8 MiB), so that writers reach the dirty limit and wait
    let cache = ("host.page_cache.size_bytes".to_string(), if page_cache { "8388608" } else { "0" }.to_string());
    let profile = load_profile(device, &[("nand.precondition".into(), "partial:0.05".into()), cache.clone()])
        .or_else(|_| load_profile(device, &[cache]))
        .unwrap();
    let policy = nvsched_policy::build(sched).unwrap();
    let mut ledger = Ledger::default();
    let (report, outcome) =
        run_sim(RunSpec { jobs: &jobs, policy, profile: &profile, seed: 9, drive_states: None }, &mut ledger, 0)
            .unwrap_or_else(|e| panic!("{sched}: {e}\n{text}"));
    let json = report.render(nvsched_report::Format::Json);
    (ledger, outcome, json)
}

proptest! {
    // 32 cases in the suite; PROPTEST_CASES=N for a longer soak
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(32),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_policy_completes_each_request_exactly_once(
        gens in prop::collection::vec(job_gen(), 1..5),
        runtime_ms in 20u32..120,
        device in prop::sample::select(vec!["simple-nvme", "970evoplus-250g"]),
        page_cache in any::<bool>(),
    ) {
        let mut text = format!("[global]\nfilename=/dev/nvme0n1\nruntime={runtime_ms}ms\ntime_based\n");
        for (i, g) in gens.iter().enumerate() {
            text.push_str(&job_section(i, g));
        }
        for info in POLICIES {
            let (ledger, out, json) = simulate(&text, info.example, device, page_cache);
            let e = &out.engine;
            prop_assert_eq!(e.completed, e.requests, "{}: every issued request completes", info.id);
            prop_assert_eq!(ledger.duplicates, 0, "{}: no request completes twice", info.id);
            let own_requests = e.writeback_requests + e.readahead_requests + e.partial_page_reads;
            prop_assert_eq!(ledger.completed.len() as u64, e.requests + own_requests);
            prop_assert!(page_cache || own_requests == 0);
            // nothing after the last completion or the runtime moves the clock (a stale
            // policy timer did)
            let runtime = Nanos::from_ms(u64::from(runtime_ms));
            prop_assert!(out.end <= ledger.last_completion.max(runtime), "{}: the run ends at {}, its last completion at {}", info.id, out.end, ledger.last_completion);
            let reported: u64 = out.clones.iter().map(|c| c.stats.recorded() + c.stats.discarded()).sum();
            prop_assert_eq!(reported, e.requests, "{}: statistics account for every request", info.id);
            let (_, again, json2) = simulate(&text, info.example, device, page_cache);
            prop_assert_eq!(again.engine.events, out.engine.events, "{}: deterministic", info.id);
            prop_assert_eq!(json, json2, "{}: byte-identical JSON", info.id);
        }
    }
}
