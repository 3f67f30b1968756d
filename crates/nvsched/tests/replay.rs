//! Block-trace replay end to end (`read_iolog=`): the shipped WebSearch trace through the
//! simulator, alone and beside best-effort readers under `none` and K2.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn websearch() -> String {
    repo_root().join("examples/traces/websearch-60s.disksim.trace").display().to_string()
}

/// Runs `job_text` (written to a temporary job file) and returns its JSON report.
fn run(name: &str, job_text: &str, extra: &[&str]) -> Value {
    let dir = std::env::temp_dir().join(format!("nvsched-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join(name);
    std::fs::write(&job, job_text).unwrap();
    let mut args = vec!["run", job.to_str().unwrap(), "--output-format=json", "-q"];
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched")).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_websearch_trace_replays_whole_at_its_times() {
    let text = format!("[web]\nread_iolog={}\nioengine=io_uring\niodepth=64\n", websearch());
    let v = run("web.fio", &text, &[]);
    let job = &v["jobs"][0];
    assert_eq!(job["read"]["total_ios"], 24_779);
    assert_eq!(job["write"]["total_ios"], 4);
    let runtime_ms = job["job_runtime"].as_u64().unwrap();
    assert!((59_900..=60_100).contains(&runtime_ms), "the trace spans 60 s: {runtime_ms} ms");
    let r = &v["nvsched"]["replay"][0];
    assert_eq!((r["records"].as_u64(), r["issued"].as_u64()), (Some(24_783), Some(24_783)));
    assert_eq!(r["format"], "disksim");
    assert_eq!(r["devices"].as_array().unwrap().len(), 6);
    assert_eq!(r["dropped_outside"], 0, "the replay's file holds every volume");
    // a light load on an idle drive: every request leaves when the trace says
    assert_eq!(r["lag_max_us"], 0.0);
    // mean 15.1 KiB per request, as the trace's README says
    let bytes = job["read"]["io_bytes"].as_u64().unwrap() + job["write"]["io_bytes"].as_u64().unwrap();
    let mean_kib = bytes as f64 / 24_783.0 / 1024.0;
    assert!((15.0..15.2).contains(&mean_kib), "{mean_kib}");
    // twice as fast: half the time, the same requests
    let fast = run("web-fast.fio", &format!("{text}replay_time_scale=200\n"), &[]);
    let fast_ms = fast["jobs"][0]["job_runtime"].as_u64().unwrap();
    assert!((29_900..=30_100).contains(&fast_ms), "{fast_ms}");
    assert_eq!(fast["jobs"][0]["read"]["total_ios"], 24_779);
}

#[test]
fn a_shallow_queue_makes_the_replay_late_and_the_report_says_how_late() {
    // ten times the trace's pace at iodepth 1 on a half-full drive: requests wait for each
    // other; and a 64 GiB file for six volumes of about 18 GB: those beyond their volume's
    // part are dropped and counted
    let text = format!(
        "[web]\nread_iolog={}\nreplay_time_scale=1000\nprecondition=partial:0.5\nsize=64g\nnumber_ios=3000\n",
        websearch()
    );
    let r = &run("web-qd1.fio", &text, &[])["nvsched"]["replay"][0];
    let (issued, dropped) = (r["issued"].as_u64().unwrap(), r["dropped_outside"].as_u64().unwrap());
    assert_eq!(issued, 3000);
    assert!(dropped > 300, "{dropped}");
    assert!(r["lag_max_us"].as_f64().unwrap() > 50.0, "{r}");
    assert!(r["lag_mean_us"].as_f64().unwrap() > 0.0, "{r}");
    let wrapped = &run("web-wrap.fio", &format!("{text}replay_outside=wrap\n"), &[])["nvsched"]["replay"][0];
    assert_eq!(wrapped["dropped_outside"], 0);
    assert!(wrapped["wrapped_outside"].as_u64().unwrap() > 300);
}

#[test]
fn k2_cuts_the_traces_tail_beside_busy_readers() {
    let text = std::fs::read_to_string(repo_root().join("examples/websearch-mix.fio")).unwrap();
    // the first 5,000 requests (about 12 s) keep the test short
    let text = text
        .replace("read_iolog=traces/", &format!("read_iolog={}/examples/traces/", repo_root().display()))
        .replace("prioclass=1\n", "prioclass=1\nnumber_ios=5000\n")
        .replace("runtime=60", "runtime=12");
    let p999 = |v: &Value| v["jobs"][0]["read"]["clat_ns"]["percentile"]["99.900000"].as_f64().unwrap() / 1e3;
    let none = run("mix-none.fio", &text, &["--sched", "none"]);
    let k2 = run("mix-k2.fio", &text, &["--sched", "k2:bound=4"]);
    assert_eq!(none["nvsched"]["replay"][0]["issued"], 5000);
    assert_eq!(k2["nvsched"]["replay"][0]["issued"], 5000);
    assert!(p999(&k2) * 2.0 < p999(&none), "K2-4 {} us vs none {} us", p999(&k2), p999(&none));
    let again = run("mix-k2.fio", &text, &["--sched", "k2:bound=4"]);
    assert_eq!(again["jobs"], k2["jobs"], "deterministic");
}

#[test]
fn an_iolog_fio_wrote_replays_as_fio_replays_it() {
    let iolog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33/randrw-fsync.iolog");
    let v = run("iolog.fio", &format!("[r]\nread_iolog={}\nsize=8m\n", iolog.display()), &[]);
    let job = &v["jobs"][0];
    let counts = [&job["read"], &job["write"], &job["sync"]].map(|d| d["total_ios"].as_u64().unwrap());
    assert_eq!(counts, [242, 270, 25], "what fio 3.33 issued replaying the same iolog");
    assert_eq!(v["nvsched"]["replay"][0]["format"], "fio");
}

#[test]
fn an_ftrace_capture_of_fio_replays_what_fio_and_the_filesystem_issued() {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ftrace/fio-randrw-fsync.ftrace");
    let v = run("ftrace.fio", &format!("[r]\nread_iolog={}\nioengine=io_uring\niodepth=4\n", capture.display()), &[]);
    let job = &v["jobs"][0];
    let counts = [&job["read"], &job["write"], &job["sync"]].map(|d| d["total_ios"].as_u64().unwrap());
    // fio's 417 reads and 24 fsyncs (empty writes with a pre-flush); its 183 writes plus
    // 4 the file system wrote (README.md beside the capture)
    assert_eq!(counts, [417, 183 + 4, 24]);
    let r = &v["nvsched"]["replay"][0];
    assert_eq!(r["format"], "ftrace");
    assert_eq!(r["records"], 628, "one per block_bio_queue event; block_rq_issue left out");
}

/// The blktrace fixture's job: its binary events, or blkparse's text of them.
fn blktrace_capture(file: &str) -> String {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blktrace").join(file);
    format!("[r]\nread_iolog={}\nioengine=libaio\ndirect=1\n", capture.display())
}

#[test]
fn a_blktrace_replays_what_fio_replays_from_it() {
    let v = run("blktrace.fio", &blktrace_capture("fio-randrw-fsync.blktrace"), &[]);
    let job = &v["jobs"][0];
    let counts = [&job["read"], &job["write"], &job["sync"]].map(|d| d["total_ios"].as_u64().unwrap());
    // fio 3.33 replaying the same file (README.md beside it)
    assert_eq!(counts, [157, 63, 28]);
    let r = &v["nvsched"]["replay"][0];
    assert_eq!((r["format"].as_str(), r["records"].as_u64()), (Some("blktrace"), Some(248)));
    // blkparse's text of the same events replays the same
    let text = run("blkparse.fio", &blktrace_capture("fio-randrw-fsync.blkparse"), &[]);
    assert_eq!(text["nvsched"]["replay"][0]["format"], "blkparse");
    assert_eq!(text["jobs"][0]["read"], job["read"]);
    assert_eq!(text["jobs"][0]["write"], job["write"]);
    assert_eq!(text["jobs"][0]["sync"], job["sync"]);
}

#[test]
fn a_blktrace_replays_at_the_depth_it_was_captured_at_unless_iodepth_says() {
    let job = blktrace_capture("fio-randrw-fsync.blktrace");
    let deeper_than_1 = |v: &Value| {
        let levels = v["jobs"][0]["iodepth_level"].as_object().unwrap();
        levels.iter().filter(|(k, _)| *k != "1").map(|(_, share)| share.as_f64().unwrap()).sum::<f64>()
    };
    let probed = run("probed.fio", &job, &[]);
    assert!(deeper_than_1(&probed) > 10.0, "{}", probed["jobs"][0]["iodepth_level"]);
    let one = run("depth-1.fio", &format!("{job}iodepth=1\n"), &[]);
    assert_eq!(deeper_than_1(&one), 0.0);
    assert_eq!(one["jobs"][0]["read"]["total_ios"], probed["jobs"][0]["read"]["total_ios"]);

    let dir = std::env::temp_dir().join(format!("nvsched-replay-{}", std::process::id()));
    let path = dir.join("probed.fio");
    let out =
        Command::new(env!("CARGO_BIN_EXE_nvsched")).args(["run", path.to_str().unwrap(), "--parse-only"]).output();
    let err = String::from_utf8(out.unwrap().stderr).unwrap();
    assert!(err.contains("job 'r' replays at iodepth=7, the deepest its queue went"), "{err}");
}

#[test]
fn merge_blktrace_file_merges_the_traces_writes_them_and_replays_them() {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blktrace/fio-randrw-fsync.blktrace");
    let dir = std::env::temp_dir().join(format!("nvsched-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let merged = dir.join("merged.blktrace");
    let _ = std::fs::remove_file(&merged);
    // the capture twice, the second at half its times and laid end to end twice
    let job = format!(
        "[m]\nread_iolog={c}:{c}\nmerge_blktrace_file={}\nmerge_blktrace_scalars=100:50\nmerge_blktrace_iters=1:2\n",
        merged.display(),
        c = capture.display()
    );
    let v = run("merge.fio", &job, &[]);
    let counts = [&v["jobs"][0]["read"], &v["jobs"][0]["write"], &v["jobs"][0]["sync"]]
        .map(|d| d["total_ios"].as_u64().unwrap());
    assert_eq!(counts, [3 * 157, 3 * 63, 3 * 28], "three passes over the capture's requests");
    let r = &v["nvsched"]["replay"][0];
    assert_eq!((r["format"].as_str(), r["records"].as_u64()), (Some("blktrace"), Some(3 * 248)));
    // the merged file holds just the queue events, and replays the same by itself
    assert_eq!(std::fs::metadata(&merged).unwrap().len(), 3 * 248 * 48);
    let again = run("merged.fio", &format!("[m]\nread_iolog={}\n", merged.display()), &[]);
    assert_eq!(again["jobs"][0]["read"], v["jobs"][0]["read"]);
    assert_eq!(again["jobs"][0]["job_runtime"], v["jobs"][0]["job_runtime"]);
    // --merge-blktrace-only writes the same merge and runs nothing
    let merge_only = dir.join("merge-only.fio");
    std::fs::write(&merge_only, &job).unwrap();
    std::fs::remove_file(&merged).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["run", merge_only.to_str().unwrap(), "--merge-blktrace-only", "--output-format=json"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("job 'm': 2 blktraces merged into"), "{out:?}");
    assert_eq!(std::fs::metadata(&merged).unwrap().len(), 3 * 248 * 48);

    let refused = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out =
            Command::new(env!("CARGO_BIN_EXE_nvsched")).args(["run", path.to_str().unwrap(), "-q"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        String::from_utf8(out.stderr).unwrap()
    };
    let err = refused("count.fio", &job.replace("merge_blktrace_iters=1:2", "merge_blktrace_iters=1:2:3"));
    assert!(
        err.contains("count.fio:5: option 'merge_blktrace_iters': job 'm': 3 values for 2 traces in read_iolog"),
        "{err}"
    );
    let err = refused("onto-input.fio", &job.replace(&merged.display().to_string(), &capture.display().to_string()));
    assert!(err.contains("is one of the traces it merges"), "{err}");
    let err = refused(
        "text.fio",
        &format!("[m]\nread_iolog={c}\nmerge_blktrace_file={}\n", merged.display(), c = websearch()),
    );
    assert!(err.contains("merge_blktrace_file merges blktraces, and this is not one"), "{err}");
}

#[test]
fn readonly_leaves_out_a_replays_writes_and_trims_as_fio_does() {
    let dir = std::env::temp_dir().join(format!("nvsched-readonly-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let iolog = dir.join("mix.iolog");
    std::fs::write(
        &iolog,
        "fio version 3 iolog\n0 f add\n0 f open\n10 f read 0 4096\n20 f write 4096 4096\n\
         30 f trim 8192 4096\n40 f sync 0 0\n50 f read 12288 4096\n",
    )
    .unwrap();
    // replays `trace` with --readonly: its read, write, trim and sync counts, and stderr
    let replay_readonly = |trace: &Path| {
        let job = dir.join("ro.fio");
        std::fs::write(&job, format!("[r]\nread_iolog={}\n", trace.display())).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
            .args(["run", job.to_str().unwrap(), "--readonly", "--output-format=json", "-q"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let counts = ["read", "write", "trim", "sync"].map(|d| v["jobs"][0][d]["total_ios"].as_u64().unwrap());
        (counts, String::from_utf8(out.stderr).unwrap())
    };
    // fio 3.33 --readonly replays the same log as its two reads and the sync
    let (counts, err) = replay_readonly(&iolog);
    assert_eq!(counts, [2, 0, 0, 1]);
    assert!(err.contains("job 'r': --readonly: its trace's 1 writes and 1 trims are left out"), "{err}");
    // a blktrace's flushes carry the write bit, so fio 3.33 --readonly skips them too:
    // the fixture capture replays as its 157 reads alone (fio: 157, 0, 0)
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blktrace/fio-randrw-fsync.blktrace");
    let (counts, err) = replay_readonly(&capture);
    assert_eq!(counts, [157, 0, 0, 0]);
    assert!(err.contains("its trace's 63 writes and 28 flushes are left out"), "{err}");
}

#[test]
fn write_iolog_records_what_read_iolog_replays() {
    let dir = std::env::temp_dir().join(format!("nvsched-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (first, second) = (dir.join("first.iolog"), dir.join("second.iolog"));
    let job = format!(
        "[w]\nfilename=/dev/nvme0n1\nsize=16m\nrw=randrw\nbs=4k\nioengine=io_uring\niodepth=4\nio_size=2m\nfsync=16\nwrite_iolog={}\n",
        first.display()
    );
    let made = run("write-iolog.fio", &job, &[]);
    // replay it, logging the replay in turn
    let replay = format!("[r]\nread_iolog={}\nsize=16m\nwrite_iolog={}\n", first.display(), second.display());
    let replayed = run("replay-iolog.fio", &replay, &["--sched", "k2:bound=2"]);
    for dir in ["read", "write", "sync"] {
        assert_eq!(made["jobs"][0][dir]["total_ios"], replayed["jobs"][0][dir]["total_ios"], "{dir}");
    }
    let requests = |p: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(p).unwrap();
        assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
        // ACTION OFFSET LENGTH of each I/O, without the time and file name
        text.lines()
            .filter(|l| l.split(' ').count() == 5)
            .map(|l| l.splitn(3, ' ').nth(2).unwrap().to_string())
            .collect()
    };
    let (a, b) = (requests(&first), requests(&second));
    let syncs = made["jobs"][0]["sync"]["total_ios"].as_u64().unwrap() as usize;
    assert!(syncs > 10, "a sync after every 16 writes: {syncs}");
    assert_eq!(a.len(), 512 + syncs, "2 MiB of 4 KiB I/Os and the syncs");
    assert_eq!(a, b, "the replay issues the same I/Os in the same order, at the same file offsets");
}

#[test]
fn write_iolog_never_overwrites_a_device_or_the_data_file() {
    let cases = [
        ("/dev/null", "filename=/tmp/x.dat\nsize=1m"),
        ("/tmp", "filename=/tmp/x.dat\nsize=1m"),
        ("/tmp/nvsched-same.dat", "filename=/tmp/nvsched-same.dat\nsize=1m"),
    ];
    for (name, target) in cases {
        let job = format!("[w]\n{target}\nrw=write\nwrite_iolog={name}\n");
        let dir = std::env::temp_dir().join(format!("nvsched-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("refuse.fio");
        std::fs::write(&path, job).unwrap();
        let out =
            Command::new(env!("CARGO_BIN_EXE_nvsched")).args(["run", path.to_str().unwrap(), "-q"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("write_iolog '{name}' is not a plain file of its own")), "{err}");
    }
}

#[test]
fn replay_ioprio_keeps_the_priorities_a_capture_recorded() {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ftrace/fio-rt-be.ftrace");
    let job = format!("[r]\nread_iolog={}\nioengine=io_uring\niodepth=16\n", capture.display());
    let prios = |v: &Value| -> Vec<(u64, u64, u64)> {
        let blocks = v["jobs"][0]["read"]["prios"].as_array().cloned().unwrap_or_default();
        blocks
            .iter()
            .map(|p| {
                (p["prioclass"].as_u64().unwrap(), p["prio"].as_u64().unwrap(), p["clat_ns"]["N"].as_u64().unwrap())
            })
            .collect()
    };
    // what fio's two jobs issued: 300 real-time reads and 1200 best-effort ones at level 4
    let kept = run("ioprio.fio", &format!("{job}replay_ioprio=1\n"), &[]);
    assert_eq!(prios(&kept), [(1, 0, 300), (2, 4, 1200)]);
    // without it, every request has the job's priority: no per-priority blocks
    let plain = run("no-ioprio.fio", &job, &[]);
    assert_eq!(plain["jobs"][0]["read"]["total_ios"], 1500);
    assert!(prios(&plain).is_empty());
}
