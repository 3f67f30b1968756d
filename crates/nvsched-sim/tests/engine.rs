//! End-to-end properties of the simulation engine on the simple device model.

mod common;

use common::{profile, run, run_with};
use nvsched_core::Nanos;
use nvsched_policy::Request;
use nvsched_sim::{NoObserver, Observer, SimOutcome};
use nvsched_ssd::ModelConfig;
use std::collections::VecDeque;

#[test]
fn qd1_sync_latency_is_service_plus_host_path_exactly() {
    let out = run("[a]\nrw=randread\nbs=4k\nsize=64m\nruntime=1\ntime_based\n", "none");
    let p = profile(&[]);
    let ModelConfig::Simple(cfg) = &p.model else { unreachable!() };
    let expected = cfg.read_ns + p.host.submit_ns + p.host.complete_ns;
    let read = &out.clones[0].stats.dirs[0];
    assert!(read.total_ios > 1000);
    assert_eq!(read.lat.min, expected);
    assert_eq!(read.lat.max, expected);
    assert_eq!(read.lat.mean(), expected as f64);
}

#[test]
fn policy_host_cost_is_charged() {
    let out = run(
        "[a]\nrw=randread\nbs=4k\nsize=64m\nruntime=100ms\ntime_based\n",
        "none:dispatch_cost=1us,complete_cost=2us",
    );
    let p = profile(&[]);
    let ModelConfig::Simple(cfg) = &p.model else { unreachable!() };
    let expected = cfg.read_ns + p.host.submit_ns + p.host.complete_ns + 3_000;
    assert_eq!(out.clones[0].stats.dirs[0].lat.mean(), expected as f64);
}

#[test]
fn littles_law_holds() {
    // open-loop Poisson arrivals plus a closed-loop QD32 job, mixed reads and writes
    let text = "[global]\nfilename=/dev/nvme0n1\nruntime=20\ntime_based\n\
                [poisson]\nioengine=io_uring\niodepth=256\nrw=randrw\nrate_iops=20000\nrate_process=poisson\n\
                [closed]\nioengine=libaio\niodepth=32\nrw=randread\nbssplit=4k/50:16k/50\n";
    let out = run(text, "none");
    let end = out.end.as_secs_f64();
    let completed: u64 = out.clones.iter().map(|c| c.stats.total_ios()).sum();
    let mean_latency: f64 =
        out.clones.iter().map(|c| c.stats.dirs.iter().map(|d| d.lat.mean() * d.lat.n as f64).sum::<f64>()).sum::<f64>()
            / completed as f64;
    let throughput = completed as f64 / end;
    let mean_in_system = out.engine.in_system_integral / out.end.0 as f64;
    let little = throughput * mean_latency / 1e9;
    let err = (mean_in_system - little).abs() / mean_in_system;
    assert!(err < 0.02, "L = {mean_in_system:.3}, lambda*W = {little:.3} ({:.2}% off)", err * 100.0);
    assert!(mean_in_system > 10.0, "the test must exercise queueing: L = {mean_in_system}");
}

#[test]
fn same_seed_same_result_different_seed_different() {
    let text = "[a]\nioengine=io_uring\niodepth=8\nrw=randrw\nsize=256m\nruntime=200ms\ntime_based\n";
    let p = profile(&[]);
    let a = run_with(text, "none", &p, 1, &mut NoObserver);
    let b = run_with(text, "none", &p, 1, &mut NoObserver);
    let c = run_with(text, "none", &p, 2, &mut NoObserver);
    let key = |o: &SimOutcome| {
        (o.end, o.engine.events, o.clones[0].stats.dirs[0].total_ios, o.clones[0].stats.dirs[0].clat.max)
    };
    assert_eq!(key(&a), key(&b));
    assert_ne!(key(&a), key(&c));
}

#[test]
fn plugged_batches_back_merge() {
    let out = run("[a]\nioengine=io_uring\niodepth=8\niodepth_batch_submit=8\nrw=read\nbs=4k\nsize=16m\n", "none");
    assert!(out.engine.plug_merges > 0);
    let read = &out.clones[0].stats.dirs[0];
    assert_eq!(read.io_bytes, 16 << 20, "every issued byte completes once");
    assert_eq!(read.total_ios, 4096);
    assert!(out.engine.device_commands[0] < 4096, "merged requests reach the device as fewer commands");
}

#[test]
fn nr_requests_limits_allocated_requests() {
    struct MaxInflight(u32);
    impl Observer for MaxInflight {
        fn on_dispatch(&mut self, _: Nanos, _: &Request, inflight: u32) {
            self.0 = self.0.max(inflight);
        }
    }
    let p = profile(&[("host.nr_requests", "8")]);
    let mut obs = MaxInflight(0);
    let out = run_with(
        "[a]\nioengine=io_uring\niodepth=64\nrw=randread\nsize=64m\nruntime=50ms\ntime_based\n",
        "none",
        &p,
        0,
        &mut obs,
    );
    assert_eq!(obs.0, 8);
    let levels = out.clones[0].stats.depth_levels;
    assert!(levels[3] > 0 && levels[6] == 0, "a job waiting for tags cannot go deeper: {levels:?}");
}

#[test]
fn tags_go_to_waiting_jobs_first_come_first_served() {
    // 8 jobs at depth 8 share 16 tags: without a FIFO hand-off the first two jobs would
    // re-take their own freed tags for good and the others would starve
    let p = profile(&[("host.nr_requests", "16")]);
    let out = run_with(
        "[a]\nioengine=io_uring\niodepth=8\nrw=randread\nsize=64m\nruntime=50ms\ntime_based\nnumjobs=8\n",
        "none",
        &p,
        0,
        &mut NoObserver,
    );
    let ios: Vec<u64> = out.clones.iter().map(|c| c.stats.dirs[0].total_ios).collect();
    let (lo, hi) = (*ios.iter().min().unwrap(), *ios.iter().max().unwrap());
    assert!(lo > 0 && hi as f64 / lo as f64 <= 1.02, "equal share of the tags: {ios:?}");
}

#[test]
fn stonewall_runs_groups_in_sequence() {
    let out =
        run("[a]\nrw=read\nsize=4m\n[b]\nstonewall\nrw=write\nsize=4m\n[c]\nnew_group\nrw=randread\nsize=4m\n", "none");
    let (a, b, c) = (&out.clones[0], &out.clones[1], &out.clones[2]);
    assert!(b.started_at >= a.finished_at);
    assert_eq!(c.started_at, b.started_at, "new_group does not wait");
    assert_eq!((a.reporting_group, b.reporting_group, c.reporting_group), (0, 1, 2));
}

#[test]
fn ramp_time_excludes_warmup() {
    let out = run("[a]\nrw=randread\nsize=64m\nruntime=100ms\nramp_time=100ms\ntime_based\n", "none");
    let s = &out.clones[0].stats;
    assert!(s.ramp_dropped > 100);
    let per_ms = s.dirs[0].total_ios as f64 / 100.0;
    assert!((s.ramp_dropped as f64 / 100.0 - per_ms).abs() / per_ms < 0.05);
    assert!((s.runtime.as_ms_f64() - 100.0).abs() < 1.0, "{}", s.runtime);
}

#[test]
fn thinktime_paces_a_sync_job() {
    let out = run("[a]\nrw=randread\nsize=64m\nthinktime=2000\nruntime=1\ntime_based\n", "none");
    let n = out.clones[0].stats.dirs[0].total_ios;
    // each cycle: 85 us of I/O + 2 ms think
    let expected = 1e9 / (85_000.0 + 2_000_000.0);
    assert!((n as f64 - expected).abs() <= 2.0, "{n} vs {expected}");
}

#[test]
fn fsync_issues_flushes_recorded_as_sync() {
    // a flush after every 4th write but the last, which ends the job (fio 3.33: 63)
    let out = run("[a]\nioengine=libaio\niodepth=4\nrw=write\nfsync=4\nsize=1m\n", "none");
    let s = &out.clones[0].stats;
    assert_eq!((s.sync.n, s.sync_total_ios()), (63, 63));
    assert_eq!(out.engine.device_commands[3], 63);
    // fio reports fdatasyncs in the sync latencies but not in total_ios
    let out = run("[a]\nrw=write\nfdatasync=10\nsize=1m\n", "none");
    let s = &out.clones[0].stats;
    assert_eq!((s.sync.n, s.sync_total_ios()), (25, 0));
}

#[test]
fn end_fsync_flushes_inside_the_runtime_but_outside_the_stats() {
    let p = profile(&[]);
    let text = "[a]\nrw=write\nsize=1m\n";
    let plain = run_with(text, "none", &p, 0, &mut NoObserver);
    let synced = run_with(&format!("{text}end_fsync=1\n"), "none", &p, 0, &mut NoObserver);
    let (a, b) = (&plain.clones[0], &synced.clones[0]);
    assert_eq!(b.stats.sync.n, 0, "fio does not count end_fsync's flush");
    assert_eq!(b.stats.dirs[1].total_ios, a.stats.dirs[1].total_ios);
    assert_eq!(synced.engine.device_commands[3], 1, "one flush reached the device");
    assert_eq!(plain.engine.device_commands[3], 0);
    // the simple device flushes at once: the job ends one host round trip later
    let flush_path = Nanos(p.host.submit_ns + p.host.complete_ns);
    assert_eq!(b.finished_at, a.finished_at + flush_path, "the runtime includes the flush");
}

#[test]
fn exitall_stops_the_rest_of_the_group_when_its_job_finishes() {
    let text = "[global]\nfilename=/dev/nvme0n1\n[short]\nrw=randread\nsize=1m\nexitall=EXIT\n\
                [long]\nrw=randwrite\nioengine=io_uring\niodepth=8\ntime_based\nruntime=2\n\
                [next]\nstonewall\nrw=read\nsize=1m\n";
    let run = |exitall: &str| run_with(&text.replace("EXIT", exitall), "none", &profile(&[]), 0, &mut NoObserver);
    let out = run("1");
    let (short, long, next) = (&out.clones[0], &out.clones[1], &out.clones[2]);
    assert!(long.finished_at >= short.finished_at, "the rest stops after it");
    // what was in flight still completes: at most one write's service time later
    assert!(
        long.finished_at - short.finished_at < Nanos::from_ms(1),
        "{:?} vs {:?}",
        long.finished_at,
        short.finished_at
    );
    assert!(long.stats.dirs[1].total_ios > 0);
    assert_eq!(next.stats.dirs[0].io_bytes, 1 << 20, "a later group is not affected");
    let without = run("0");
    assert!(without.clones[1].finished_at >= Nanos::from_secs(2), "without exitall it runs its 2 s");
    // a stopped job's pending timer (here its think time) does not move the run's end
    let thinking = run_with(
        "[global]\nfilename=/dev/nvme0n1\n[short]\nrw=randread\nsize=64k\nexitall\n\
         [paced]\nrw=randread\nthinktime=1s\ntime_based\nruntime=10\n",
        "none",
        &profile(&[]),
        0,
        &mut NoObserver,
    );
    assert!(thinking.end < Nanos::from_ms(10), "the run ends with its jobs: {:?}", thinking.end);
}

#[test]
fn exit_what_chooses_which_jobs_exitall_stops() {
    // fio's exitwhat example, shortened: a job in its own reporting group (new_group) of
    // the same stonewall phase, and a later phase
    let text = "[global]\nfilename=/dev/nvme0n1\n[short]\nrw=randread\nsize=1m\nexitall\nexit_what=WHAT\n\
                [other-group]\nnew_group\nrw=randwrite\nioengine=io_uring\niodepth=8\ntime_based\nruntime=2\n\
                [later]\nstonewall\nrw=read\nsize=1m\n";
    let run = |what: &str| run_with(&text.replace("WHAT", what), "none", &profile(&[]), 0, &mut NoObserver);
    let ends = |out: &SimOutcome| (out.clones[0].finished_at, out.clones[1].finished_at);
    let later_bytes = |out: &SimOutcome| out.clones[2].stats.dirs[0].io_bytes;
    let group = run("group");
    assert!(ends(&group).1 >= Nanos::from_secs(2), "another reporting group runs on");
    let stonewall = run("stonewall");
    let (short, other) = ends(&stonewall);
    assert!(other - short < Nanos::from_ms(1), "every running job stops");
    assert_eq!(later_bytes(&stonewall), 1 << 20, "the next phase still runs");
    let all = run("all");
    assert!(ends(&all).1 - ends(&all).0 < Nanos::from_ms(1));
    assert_eq!(later_bytes(&all), 0, "later phases never run (fio reports them with no I/O)");
    assert_eq!(all.clones[2].stats.dirs[0].total_ios, 0);
}

#[test]
fn a_shared_host_cpu_caps_iops_and_queues_completions() {
    let p = profile(&[("host.cpus", "1"), ("host.submit_cpu_ns", "4000"), ("host.complete_cpu_ns", "6000")]);
    let text = "[a]\nfilename=/dev/nvme0n1\nioengine=io_uring\niodepth=64\nrw=randread\nruntime=200ms\ntime_based\n";
    let out = run_with(text, "none", &p, 0, &mut NoObserver);
    let iops = out.clones[0].stats.dirs[0].total_ios as f64 / out.clones[0].stats.runtime.as_secs_f64();
    // 16 units x 80 us could do 200 K IOPS; one CPU at 10 us per request does 100 K
    assert!((iops / 100_000.0 - 1.0).abs() < 0.02, "{iops}");
    assert!(out.engine.cpu_busy.as_secs_f64() / out.end.as_secs_f64() > 0.97);
    // without the CPU model the same costs would not limit throughput
    let free = run_with(text, "none", &profile(&[]), 0, &mut NoObserver);
    let iops_free = free.clones[0].stats.dirs[0].total_ios as f64 / free.clones[0].stats.runtime.as_secs_f64();
    assert!(iops_free > 150_000.0, "{iops_free}");
}

/// fio's `cmdprio_percentage`: the share of I/Os at the other priority is reported per
/// priority (fio's `prios` blocks), and a priority-aware policy serves them first.
#[test]
fn cmdprio_ios_are_reported_per_priority_and_served_first_by_mq_deadline() {
    let text = "[a]\nioengine=io_uring\niodepth=32\nrw=randread\nbs=4k\nsize=64m\nruntime=1\ntime_based\n\
                cmdprio_percentage=20\ncmdprio_class=1\n";
    let mean_clat_us = |sched: &str| {
        let out = run(text, sched);
        let read = &out.clones[0].stats.dirs[0];
        let mut prios: Vec<_> = read.prios.iter().map(|p| (p.prio, p.latency.n, p.latency.mean() / 1e3)).collect();
        prios.sort_by_key(|p| p.0.class as u8);
        assert_eq!(prios.len(), 2, "{sched}: {prios:?}");
        let rt_share = prios[1].1 as f64 / read.clat.n as f64;
        assert!((0.18..0.22).contains(&rt_share), "{sched}: {rt_share}");
        assert_eq!(prios[0].1 + prios[1].1, read.clat.n);
        (prios[0].2, prios[1].2)
    };
    let (be, rt) = mean_clat_us("mq-deadline");
    assert!(rt < 0.5 * be, "mq-deadline: RT {rt:.1} us vs the rest {be:.1} us");
    let (be, rt) = mean_clat_us("none");
    assert!((rt / be - 1.0).abs() < 0.1, "none ignores priorities: RT {rt:.1} us vs {be:.1} us");
}

/// `flow`: jobs of one flow group issue in proportion to their weights, whichever of them
/// is faster; a member that finishes releases the others; `flow_sleep` keeps the
/// proportion while it sleeps between looks.
#[test]
fn flow_keeps_a_groups_jobs_in_proportion_to_their_weights() {
    let ios = |out: &SimOutcome| -> Vec<u64> { out.clones.iter().map(|c| c.stats.dirs[0].total_ios).collect() };
    let base = "[global]\nfilename=/dev/nvme0n1\nbs=4k\nruntime=200ms\ntime_based\n";
    // alone, the QD8 job reads several times as much as the QD1 job
    let free =
        ios(&run(&format!("{base}[fast]\nioengine=libaio\niodepth=8\nrw=randread\n[slow]\nrw=randread\n"), "none"));
    assert!(free[0] > 4 * free[1], "{free:?}");
    for (weights, ratio) in [((1, 1), 1.0), ((1, 3), 1.0 / 3.0), ((2, 1), 2.0)] {
        let text = format!(
            "{base}[fast]\nioengine=libaio\niodepth=8\nrw=randread\nflow={}\n[slow]\nrw=randread\nflow={}\n",
            weights.0, weights.1
        );
        let got = ios(&run(&text, "none"));
        let r = got[0] as f64 / got[1] as f64;
        assert!((r - ratio).abs() < 0.01 * ratio, "weights {weights:?}: {got:?}");
    }
    // another flow_id is another group: the jobs run free
    let apart = ios(&run(
        &format!(
            "{base}[fast]\nioengine=libaio\niodepth=8\nrw=randread\nflow=1\n[slow]\nrw=randread\nflow=1\nflow_id=1\n"
        ),
        "none",
    ));
    assert_eq!(apart, free);
    // a member that finishes leaves: the other runs free for the rest of its runtime
    let text = format!(
        "{base}[fast]\nioengine=libaio\niodepth=8\nrw=randread\nflow=1\n[short]\nrw=randread\nflow=1\ntime_based=0\nsize=4m\n"
    );
    let out = run(&text, "none");
    let got = ios(&out);
    assert_eq!(got[1], 1024);
    assert!(got[0] > 1024 + (free[0] as f64 * 0.5) as u64, "{got:?}");
    // flow_sleep: held back, a job lets its I/Os complete and sleeps before it looks
    // again, so the group does less than when it goes on as soon as it may
    let text = format!("{base}[fast]\nioengine=libaio\niodepth=8\nrw=randread\nflow=3\n[slow]\nrw=randread\nflow=1\n");
    let spinning = ios(&run(&text, "none"));
    let sleeping = ios(&run(&text.replace("[fast]", "flow_sleep=100\n[fast]"), "none"));
    let r = sleeping[0] as f64 / sleeping[1] as f64;
    assert!((r - 3.0).abs() < 0.05 && sleeping[0] < spinning[0], "{sleeping:?} vs {spinning:?}");
}

/// Counts the requests between dispatch and completion, by direction, and the most at
/// once; notes a write that shared the device with any other request.
#[derive(Default)]
struct InFlight {
    reads: u32,
    others: u32,
    most: u32,
    write_overlapped: bool,
    read_beside_write: bool,
}

impl Observer for InFlight {
    fn on_dispatch(&mut self, _now: Nanos, rq: &Request, _device_inflight: u32) {
        if rq.op == nvsched_core::Op::Read {
            self.read_beside_write |= self.others > 0;
            self.reads += 1;
        } else {
            self.write_overlapped |= self.reads + self.others > 0;
            self.others += 1;
        }
        self.most = self.most.max(self.reads + self.others);
    }
    fn on_complete(&mut self, _now: Nanos, rq: &Request, _latency: Nanos) {
        match rq.op {
            nvsched_core::Op::Read => self.reads -= 1,
            _ => self.others -= 1,
        }
    }
}

/// `lockfile`: synchronous clones sharing a file take turns on it. `exclusive`: one I/O
/// at a time, the clones in turn (as fio 3.33's three psync jobs on one file each did a
/// third); `readwrite`: reads share the file, a write has it alone, and reads that never
/// pause keep writes out (fio 3.33: 9 writes in 3 s beside two readers). An asynchronous
/// engine gives the lock back as it queues, so there locking changes nothing.
#[test]
fn lockfile_makes_synchronous_clones_take_turns_on_a_file() {
    let base = "[global]\nfilename=shared\nsize=16m\nbs=4k\nruntime=20ms\ntime_based\n\
                [r1]\nrw=randread\n[r2]\nrw=randread\n[w1]\nrw=randwrite\n";
    let observe = |text: &str| {
        let mut seen = InFlight::default();
        let out = run_with(text, "none", &profile(&[]), 0, &mut seen);
        let ios: Vec<u64> = out.clones.iter().map(|c| c.stats.dirs[0].total_ios + c.stats.dirs[1].total_ios).collect();
        (seen, ios)
    };
    let (free, free_ios) = observe(&base.replace("[global]", "[global]\nlockfile=none"));
    assert!(free.most > 1 && free.write_overlapped, "without locks, I/Os overlap");
    let (exclusive, ios) = observe(&base.replace("[global]", "[global]\nlockfile=exclusive"));
    assert_eq!(exclusive.most, 1, "one I/O at a time");
    let (least, most) = (*ios.iter().min().unwrap(), *ios.iter().max().unwrap());
    assert!(least > 100 && most - least <= 1, "in turn: {ios:?}");
    assert!(ios.iter().sum::<u64>() < free_ios.iter().sum::<u64>(), "{ios:?} vs {free_ios:?}");
    let (readwrite, ios) = observe(&base.replace("[global]", "[global]\nlockfile=readwrite"));
    assert!(readwrite.most > 1, "reads share the file");
    assert!(!readwrite.write_overlapped && !readwrite.read_beside_write, "a write has the file alone");
    assert!(ios[2] <= 1 && ios[0] > 100 && ios[1] > 100, "the readers keep the writer out: {ios:?}");
    // the writer writes once the readers are done
    let (_, ios) =
        observe(&base.replace("[global]", "[global]\nlockfile=readwrite").replace("[w1]", "[w1]\nruntime=40ms"));
    assert!(ios[2] > 100, "{ios:?}");
    // libaio queues and gives the lock back at once: nothing changes
    let aio = base.replace("[global]", "[global]\nioengine=libaio\niodepth=4");
    let (_, unlocked) = observe(&aio);
    let (locked_seen, locked) = observe(&aio.replace("[global]", "[global]\nlockfile=exclusive"));
    assert_eq!(locked, unlocked);
    assert!(locked_seen.most > 1);
}

/// `wait_for`: a job starts once every clone of the job it names has finished, while
/// the rest of its stonewall group runs from the start.
#[test]
fn wait_for_starts_a_job_when_the_one_it_waits_for_finishes() {
    let text = "[global]\nfilename=/dev/nvme0n1\nbs=4k\nrw=randread\n\
                [fill]\nsize=4m\nnumjobs=2\noffset_increment=4m\n\
                [after]\nsize=4m\nwait_for=fill\n\
                [alongside]\nruntime=20ms\ntime_based\n";
    let out = run(text, "none");
    let (fill, after, alongside) = (&out.clones[..2], &out.clones[2], &out.clones[3]);
    let fill_end = fill.iter().map(|c| c.finished_at).max().unwrap();
    assert!(fill.iter().all(|c| c.started_at == Nanos::ZERO) && alongside.started_at == Nanos::ZERO);
    assert_eq!(after.started_at, fill_end, "starts as the last clone of 'fill' finishes");
    assert_eq!(after.stats.dirs[0].total_ios, 1024);
    assert!(after.finished_at > fill_end && fill_end > Nanos::ZERO);
}

/// With `filesize`, `size` is the job's bytes but no more than its files hold, as fio 3.33
/// caps it (`size=1m filesize=256k` reads 256 KiB; `io_size` still asks for more).
#[test]
fn size_is_capped_at_what_the_files_hold() {
    let bytes = |job: &str| {
        let out = run(&format!("[a]\nrw=read\nbs=4k\nsize=1m\n{job}\n"), "none");
        out.clones[0].stats.dirs[0].io_bytes
    };
    assert_eq!(bytes("filesize=256k"), 256 << 10);
    assert_eq!(bytes("filesize=256k\nnrfiles=2"), 512 << 10);
    assert_eq!(bytes("filesize=256k\nio_size=1m"), 1 << 20);
    assert_eq!(bytes("filesize=4m\nnrfiles=2"), 1 << 20);
}

#[test]
fn a_full_device_queue_does_not_spin_a_policy_timer_whose_deadline_has_passed() {
    // veloces lets writes expire; with the device's 4 slots taken by 32 writers, expired
    // writes wait for a completion, and a timer re-armed every nanosecond until then cost
    // thousands of events per request (45 s of wall time for 5 simulated seconds)
    let p = profile(&[("queue_depth", "4"), ("simple.write_ns", "2000000")]);
    let text = "[w]\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=4k\nsize=64m\nnumjobs=32\nruntime=100ms\ntime_based\n";
    let out = run_with(text, "veloces:write_expire=1ms", &p, 0, &mut NoObserver);
    assert!(out.engine.requests > 100);
    assert!(
        out.engine.events < 10 * out.engine.requests,
        "{} events for {} requests",
        out.engine.events,
        out.engine.requests
    );
}

/// Holds every request until `opens_at`, reporting `reported_wakeup` as its next wakeup
/// (correct when it is `opens_at`; a misreport when it is already past).
struct Gate {
    queue: VecDeque<Request>,
    opens_at: Nanos,
    reported_wakeup: Nanos,
}

impl nvsched_policy::Scheduler for Gate {
    fn id(&self) -> &'static str {
        "gate"
    }
    fn insert(&mut self, rq: Request, _now: Nanos) -> nvsched_policy::Inserted {
        self.queue.push_back(rq);
        nvsched_policy::Inserted::Queued
    }
    fn dispatch(&mut self, now: Nanos, _device: nvsched_policy::DeviceView) -> Option<Request> {
        if now < self.opens_at {
            return None;
        }
        self.queue.pop_front()
    }
    fn complete(&mut self, _done: &nvsched_policy::Completion<'_>) {}
    fn next_wakeup(&self) -> Option<Nanos> {
        (!self.queue.is_empty()).then_some(self.reported_wakeup)
    }
    fn queued(&self) -> usize {
        self.queue.len()
    }
}

fn run_gate(opens_at: Nanos, reported_wakeup: Nanos) -> Result<SimOutcome, nvsched_sim::SimError> {
    let p = profile(&[]);
    let specs = common::jobs("[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nsize=1m\nnumjobs=2\n");
    nvsched_sim::simulate(
        nvsched_sim::SimInput {
            jobs: &specs,
            device: p.build(0).unwrap(),
            host: p.host.clone(),
            scheduler: Box::new(Gate { queue: VecDeque::new(), opens_at, reported_wakeup }),
            host_cost: Default::default(),
            seed: 0,
            clock_ms: 0,
        },
        &mut NoObserver,
    )
}

#[test]
fn a_policy_waiting_for_the_time_it_reports_is_woken_then() {
    let out = run_gate(Nanos(5_000_000), Nanos(5_000_000)).unwrap();
    assert_eq!(out.engine.completed, 512);
    assert!(out.end > Nanos(5_000_000));
    assert!(out.engine.events < 10 * out.engine.requests, "{} events", out.engine.events);
}

#[test]
fn a_policy_reporting_a_past_wakeup_gets_one_retry_a_nanosecond_later() {
    // strict comparisons (`now > t`) refuse at t itself: the retry lets them through
    let out = run_gate(Nanos(1), Nanos(0)).unwrap();
    assert_eq!(out.engine.completed, 512);
    assert!(out.engine.events < 10 * out.engine.requests, "{} events", out.engine.events);
}

#[test]
fn a_policy_misreporting_its_wakeup_stalls_with_an_error_instead_of_spinning() {
    // before the guard: 5 million timer events, one per nanosecond, until the gate opened
    let err = run_gate(Nanos(5_000_000), Nanos(0)).err().expect("a stall");
    assert!(err.0.contains("policy 'gate' holds 2 request(s)"), "{err}");
    assert!(err.0.contains("next wakeup (0ns) is already past, yet it dispatches nothing"), "{err}");
}

#[test]
fn a_front_merged_request_completes_at_the_offset_its_job_issued() {
    // descending 4 KiB reads, held by k2's bound of 1: each front-merges into the one
    // queued before it, whose request then starts lower than what its job asked for
    struct Offsets(Vec<(u64, u32)>);
    impl Observer for Offsets {
        fn on_complete(&mut self, _now: Nanos, rq: &Request, _latency: Nanos) {
            self.0.push((rq.offset_bytes, rq.len_bytes));
        }
    }
    let dir = std::env::temp_dir().join(format!("nvsched-front-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("descending.log");
    let mut log = String::from("fio version 2 iolog\n/dev/nvme0n1 add\n/dev/nvme0n1 open\n");
    for k in (0..16u64).rev() {
        log += &format!("/dev/nvme0n1 read {} 4096\n", k * 4096);
    }
    std::fs::write(&trace, log + "/dev/nvme0n1 close\n").unwrap();
    let text = format!("[r]\nread_iolog={}\nioengine=libaio\niodepth=16\n", trace.display());
    let mut seen = Offsets(Vec::new());
    let out = run_with(&text, "k2:bound=1,merge=1", &profile(&[]), 0, &mut seen);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.engine.sched_merges > 0);
    seen.0.sort_unstable();
    let issued: Vec<(u64, u32)> = (0..16u64).map(|k| (k * 4096, 4096)).collect();
    assert_eq!(seen.0, issued);
}

#[test]
fn the_statistics_account_for_every_request_fio_leaves_uncounted_too() {
    // end_fsync's flush is not in fio's statistics; after a max_latency failure, what
    // was in flight lands uncounted
    let cases = [
        ("[j]\nrw=write\nbs=1m\nsize=5m\nend_fsync=1\n", 1),
        ("[j]\nrw=randread\nioengine=io_uring\niodepth=16\nbs=4k\nsize=64m\nmax_latency=30us\n", 15),
    ];
    for (text, uncounted) in cases {
        let out = run(text, "none");
        let s = &out.clones[0].stats;
        assert_eq!(s.uncounted, uncounted, "{text}");
        assert_eq!(s.recorded() + s.discarded(), out.engine.requests, "{text}");
    }
}

#[test]
fn end_fsync_waits_between_passes_and_stays_out_of_the_depths_as_in_fio() {
    // fio 3.33, libaio on a file: "IO depths : 1=20.0%, 2=80.0%": each pass starts at
    // depth 1 once the end flush before it has completed, and the flushes are not counted
    let out = run("[j]\nrw=write\nbs=1m\nsize=5m\nioengine=libaio\niodepth=2\nloops=3\nend_fsync=1\n", "none");
    let s = &out.clones[0].stats;
    assert_eq!(s.depth_levels, [3, 12, 0, 0, 0, 0, 0]);
    assert_eq!(s.uncounted, 3, "one flush per pass");
}

#[test]
fn fio_lays_out_the_files_of_jobs_that_read_so_their_reads_sense_the_flash() {
    // a clean 970 EVO Plus: fio writes a new file out before a job that reads it starts,
    // so its reads find data; a write-only job's file is only allocated, and a read of
    // the bare device finds nothing written
    let p = nvsched_ssd::load_profile("970evoplus-250g", &[]).unwrap();
    let run_on = |job: &str| {
        let text = format!("[a]\ndirect=1\nbs=4k\nsize=64m\nnumber_ios=200\n{job}\n");
        run_with(&text, "none", &p, 1, &mut NoObserver)
    };
    let unmapped = |out: &SimOutcome| out.device.extra("unmapped_reads").unwrap();
    let mapped_bytes = |out: &SimOutcome| {
        (out.device.extra("mapped_fraction").unwrap() * p.capacity_bytes as f64 / 4096.0).round() as u64 * 4096
    };
    let file = run_on("rw=randread");
    assert_eq!(unmapped(&file), 0.0);
    assert_eq!(mapped_bytes(&file), 64 << 20, "the whole file holds data");
    let mean_us = file.clones[0].stats.dirs[0].clat.mean() / 1e3;
    assert!(mean_us > 40.0, "a read senses the flash: {mean_us} us");
    assert_eq!(file.device.host_pages_written, 0, "laying out is not part of the run");
    let overwrite = run_on("rw=randwrite\noverwrite=1");
    assert_eq!(mapped_bytes(&overwrite), 64 << 20);
    let allocated = run_on("rw=randwrite");
    assert_eq!(mapped_bytes(&allocated), allocated.device.host_pages_written * 4096, "only what the job wrote");
    let device = run_on("rw=randread\nfilename=/dev/nvme0n1");
    assert_eq!(unmapped(&device), 200.0);
    assert_eq!(mapped_bytes(&device), 0);
}

#[test]
fn a_direct_read_of_pages_that_hold_no_data_returns_zeros_without_io() {
    // the writer comes first, so its file is only allocated; it writes 64 KiB of it
    // (direct), and the reader then reads the whole 1 MiB: only what was written goes to
    // the device, the rest comes back as zeros, as Linux reads unwritten extents
    let text =
        "[global]\nfilename=f\ndirect=1\nbs=4k\nsize=1m\n[w]\nrw=write\nnumber_ios=16\n[r]\nstonewall\nrw=read\n";
    let out = run(text, "none");
    assert_eq!((out.engine.device_commands[0], out.engine.read_pages_zeroed), (16, 240));
    assert_eq!(out.clones[1].stats.dirs[0].total_ios, 256);
    // a trim over a written page empties it again
    let trimmed =
        text.replace("rw=write\nnumber_ios=16\n", "rw=write\nnumber_ios=16\n[t]\nstonewall\nrw=trim\nnumber_ios=4\n");
    let out = run(&trimmed, "none");
    assert_eq!((out.engine.device_commands[0], out.engine.read_pages_zeroed), (12, 244));
}

#[test]
fn a_file_an_earlier_job_unlinked_fails_a_reader_and_is_made_anew_by_a_writer() {
    // fio 3.33 on ext4, 64 MiB file, 1 MiB direct I/O: after `w` (unlink=1) the reader
    // fails at open with ENOENT and does nothing; a writer in between makes the file anew
    // and writes its second half, so the reader reads 64 MiB of which only 32 MiB reach
    // the disk (the first half is a hole, read as zeros); past the end of the file made
    // anew a read fails
    let head = "[global]\nfilename=f\nsize=64m\nbs=1m\ndirect=1\n[w]\nrw=write\nunlink=1\n";
    let out = run(&format!("{head}[r]\nstonewall\nrw=read\n"), "none");
    let reader = &out.clones[1].stats;
    assert_eq!(reader.error.as_ref().map(|e| e.errno), Some(2));
    assert_eq!((reader.dirs[0].total_ios, out.engine.device_commands[0]), (0, 0));
    assert_eq!(out.clones[0].stats.dirs[1].io_bytes, 64 << 20, "the writer is not affected");

    let out = run(&format!("{head}[w2]\nstonewall\nrw=write\noffset=32m\nsize=32m\n[r]\nstonewall\nrw=read\n"), "none");
    let reader = &out.clones[2].stats;
    assert!(reader.error.is_none());
    assert_eq!(reader.dirs[0].io_bytes, 64 << 20);
    assert_eq!((out.engine.device_commands[0], out.engine.read_pages_zeroed), (32, 8192));

    // a file made anew ends where its writer stopped. fio 3.33 (psync): the reader gets
    // 16 MiB, then a read past the end fails the job with EIO, "full resid" (17 reads
    // counted, 16 MiB moved); with libaio or io_uring the reads past the end complete
    // with nothing (64 reads, 64 latencies, 16 MiB, no error)
    let past_end = |engine: &str, w2_size: &str| {
        let text = format!(
            "{head}ioengine={engine}\n[w2]\nstonewall\nrw=write\nbs=512k\nsize={w2_size}\n\
             [r]\nstonewall\nioengine={engine}\nrw=read\n"
        );
        let out = run(&text, "none");
        let r = out.clones[2].stats.clone();
        assert_eq!(out.engine.device_commands[0], 16, "reads past the end reach no device");
        let accounted: u64 = out.clones.iter().map(|c| c.stats.recorded() + c.stats.discarded()).sum();
        assert_eq!(accounted, out.engine.requests, "a short read is one request");
        let d = &r.dirs[0];
        (r.error.as_ref().map(|e| (e.errno, e.func)), d.io_bytes, d.total_ios, r.short_ios(0), d.clat.n)
    };
    assert_eq!(past_end("psync", "16m"), (Some((5, "full resid")), 16 << 20, 17, 0, 16));
    assert_eq!(past_end("libaio", "16m"), (None, 16 << 20, 64, 0, 64));
    assert_eq!(past_end("io_uring", "16m"), (None, 16 << 20, 64, 0, 64));
    // ... and a read that begins before the end (the writer stopped at 16.5 MiB) is
    // first a short read: one more read counted, and what it got is not (fio 3.33)
    assert_eq!(past_end("psync", "16896k"), (Some((5, "full resid")), 16 << 20, 18, 1, 16));
    assert_eq!(past_end("libaio", "16896k"), (None, 16 << 20, 65, 1, 64));

    // without unlink the reader reads what `w` wrote, all of it from the device
    let out = run(&format!("{}[r]\nstonewall\nrw=read\n", head.replace("unlink=1\n", "")), "none");
    assert!(out.clones[1].stats.error.is_none());
    assert_eq!((out.engine.device_commands[0], out.engine.read_pages_zeroed), (64, 0));
}

#[test]
fn a_stop_request_ends_the_run_as_fios_sigint_does() {
    // the observer asks to stop once 300 ms have passed: the running job stops issuing
    // and completes what it has in flight; the next phase's job starts and ends at once
    struct StopAfter {
        at: Nanos,
        now: Nanos,
        stopped_at: Option<Nanos>,
    }
    impl Observer for StopAfter {
        fn on_progress(&mut self, now: Nanos) {
            self.now = now;
        }
        fn stop_requested(&mut self) -> bool {
            assert!(self.stopped_at.is_none(), "asked again after it said stop");
            if self.now >= self.at {
                self.stopped_at = Some(self.now);
            }
            self.stopped_at.is_some()
        }
    }
    let text = "[global]\nioengine=io_uring\nrw=randread\nsize=64m\nruntime=10s\ntime_based\n\
                [a]\niodepth=32\n[b]\nstonewall\niodepth=1\n";
    let mut obs = StopAfter { at: Nanos::from_ms(300), now: Nanos::ZERO, stopped_at: None };
    let out = run_with(text, "none", &profile(&[]), 0, &mut obs);
    let stop = obs.stopped_at.expect("asked to stop");
    assert!(out.interrupted);
    // the reads in flight complete, none is issued after the stop: the run ends within
    // the longest a read took (randomly placed on 16 units, 32 reads may queue a millisecond)
    let (a, b) = (&out.clones[0], &out.clones[1]);
    let longest = Nanos(a.stats.dirs[0].lat.max);
    assert!(
        out.end >= stop && out.end - stop <= longest,
        "stopped at {stop}, ended at {}; longest read {longest}",
        out.end
    );
    assert!(a.stats.total_ios() > 10_000, "a ran until the stop: {}", a.stats.total_ios());
    assert!(a.finished_at <= out.end && b.stats.total_ios() == 0, "b, in the later phase, did no I/O");
    assert_eq!(out.engine.requests, a.stats.total_ios(), "what was in flight completed");
    // without a stop, the same run takes its 20 s
    let whole = run_with(text, "none", &profile(&[]), 0, &mut NoObserver);
    assert!(!whole.interrupted && whole.end >= Nanos::from_secs(20));
}

#[test]
fn the_observer_hears_of_progress_by_wall_clock_time_even_from_a_slow_run() {
    // each completion takes a millisecond of wall-clock time here (as a policy written in
    // Python may): the run's few hundred events take a third of a second, over which the
    // observer is asked every 20 ms, where a count of events would not have asked it once
    struct Slow {
        progress_calls: u32,
    }
    impl Observer for Slow {
        fn on_complete(&mut self, _now: Nanos, _rq: &nvsched_policy::Request, _latency: Nanos) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        fn on_progress(&mut self, _now: Nanos) {
            self.progress_calls += 1;
        }
    }
    let mut obs = Slow { progress_calls: 0 };
    let out = run_with("[a]\nrw=randread\nsize=1200k\n", "none", &profile(&[]), 0, &mut obs);
    assert_eq!(out.engine.requests, 300);
    assert!(obs.progress_calls >= 5, "{} progress calls over 300 slow completions", obs.progress_calls);
}
