//! The `nvsched` binary end to end: fio-compatible output, determinism, errors.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn nvsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvsched")).args(args).current_dir(repo_root()).output().expect("nvsched runs")
}

/// The standard output of a command that must succeed (else its standard error).
fn stdout_of(args: &[&str]) -> String {
    let out = nvsched(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33").join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn temp_job(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nvsched-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    // tests run in parallel and several write the same job: write aside and rename (atomic),
    // so a test that reads it never sees a file half written
    let aside = dir.join(format!("{name}.{:?}", std::thread::current().id()));
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(&aside, &p).unwrap();
    p
}

/// The K2 example with a shorter runtime, so the suite stays quick.
fn short_k2_mix() -> PathBuf {
    let text = std::fs::read_to_string(repo_root().join("examples/k2-mix.fio")).unwrap();
    temp_job("k2-short.fio", &text.replace("runtime=10", "runtime=1"))
}

/// Runs job file `text` with `extra` arguments in a fresh directory named after `name`
/// (log files land in the working directory); returns the directory and the JSON report.
fn run_json_in_dir(name: &str, text: &str, extra: &[&str]) -> (PathBuf, Value) {
    let dir = std::env::temp_dir().join(format!("nvsched-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("job.fio"), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["run", "job.fio", "--output-format=json", "-q"])
        .args(extra)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, serde_json::from_slice(&out.stdout).unwrap())
}

fn run_json(job: &Path, extra: &[&str]) -> (String, Value) {
    let mut args = vec!["run", job.to_str().unwrap(), "--output-format=json", "-q"];
    args.extend_from_slice(extra);
    let out = nvsched(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let v = serde_json::from_str(&text).expect("valid JSON");
    (text, v)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of fio's object exists in ours with the same JSON type, recursively.
fn assert_same_structure(fio: &Value, ours: &Value, path: &str) {
    match (fio, ours) {
        (Value::Object(f), Value::Object(o)) => {
            for (k, fv) in f {
                // option lists depend on the job, not the format
                if matches!(k.as_str(), "job options" | "global options" | "percentile") {
                    continue;
                }
                let ov = o.get(k).unwrap_or_else(|| panic!("missing key {path}.{k}"));
                assert_same_structure(fv, ov, &format!("{path}.{k}"));
            }
        }
        (Value::Array(f), Value::Array(o)) if !f.is_empty() => {
            assert!(!o.is_empty(), "{path} is empty, fio's is not");
            assert_same_structure(&f[0], &o[0], &format!("{path}[0]"));
        }
        _ => assert_eq!(kind(fio), kind(ours), "type of {path}"),
    }
}

#[test]
fn json_has_fios_structure_and_the_rt_tail_where_fio_puts_it() {
    let (_, ours) = run_json(&short_k2_mix(), &[]);
    // fio's own job file behind prio.json (cmdprio_percentage, so per-priority blocks)
    let prio_job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33/prio.fio");
    let (_, ours_prio) = run_json(&prio_job, &["--sched", "mq-deadline"]);
    for (sample, ours) in [("mixed.json", &ours), ("prio.json", &ours_prio)] {
        let fio = fixture(sample);
        for key in ["fio version", "timestamp", "timestamp_ms", "time", "jobs"] {
            assert_eq!(kind(&fio[key]), kind(&ours[key]), "{sample}: top-level {key}");
        }
        assert_same_structure(&fio["jobs"][0], &ours["jobs"][0], "jobs[0]");
        if fio.get("disk_util").is_some() {
            assert_same_structure(&fio["disk_util"][0], &ours["disk_util"][0], "disk_util[0]");
        }
    }
    let percentiles = &fixture("mixed.json")["jobs"][0]["read"]["clat_ns"]["percentile"];
    let ours_pct = &ours["jobs"][0]["read"]["clat_ns"]["percentile"];
    let fio_keys: Vec<_> = percentiles.as_object().unwrap().keys().collect();
    let our_keys: Vec<_> = ours_pct.as_object().unwrap().keys().collect();
    assert_eq!(fio_keys, our_keys, "fio's default percentile list, in fio's key format");
    assert_eq!(ours["jobs"][0]["jobname"], "rt");
    let p999 = ours["jobs"][0]["read"]["clat_ns"]["percentile"]["99.900000"].as_u64().unwrap();
    let max = ours["jobs"][0]["read"]["clat_ns"]["max"].as_u64().unwrap();
    assert!(p999 > 0 && p999 <= max + max / 100);
    assert_eq!(ours["jobs"].as_array().unwrap().len(), 4, "rt + 3 be clones");
    assert!(ours["nvsched"]["device"]["counters"].is_object());
}

/// fio's "global options" and "job options" show each value as it was used: `${VAR}`s
/// and keywords expanded (fio dumps the substituted option, not the line as written).
#[test]
fn job_options_in_json_hold_the_expanded_values() {
    let job = temp_job(
        "expanded.fio",
        "[global]\nfilename=/dev/nvme0n1\nbs=${NVSCHED_TEST_BS}\nruntime=10ms\ntime_based\n[a]\nrw=read\nsize=${NVSCHED_TEST_SIZE}m\nnumjobs=$ncpus\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["run", job.to_str().unwrap(), "--output-format=json", "-q"])
        .env("NVSCHED_TEST_BS", "8k")
        .env("NVSCHED_TEST_SIZE", "64")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["global options"], json!({"filename": "/dev/nvme0n1", "bs": "8k", "runtime": "10ms"}));
    let ncpus = std::thread::available_parallelism().unwrap().get().to_string();
    assert_eq!(v["jobs"][0]["job options"], json!({"rw": "read", "size": "64m", "numjobs": ncpus}));
}

#[test]
fn percentile_options_give_fios_blocks_in_fios_order() {
    // one real fio run of this job file, printed as JSON, then as normal text
    let dir = repo_root().join("crates/nvsched-report/tests/fixtures/fio-3.33");
    let job = dir.join("percentiles.fio");
    let fio = std::fs::read_to_string(dir.join("percentiles.out")).unwrap();
    let (start, end) = (fio.find("\n{").unwrap() + 1, fio.find("\n}\n").unwrap() + 2);
    let fio_json: Value = serde_json::from_str(&fio[start..end]).unwrap();
    let (_, ours) = run_json(&job, &["--sched", "mq-deadline"]);
    for i in 0..2 {
        assert_same_structure(&fio_json["jobs"][i], &ours["jobs"][i], &format!("jobs[{i}]"));
    }
    // and nothing fio leaves out
    assert!(ours["jobs"][1]["write"]["clat_ns"].get("percentile").is_none(), "clat_percentiles=0");
    assert!(ours["jobs"][0]["read"]["prios"][0].get("clat_ns").is_none(), "prios hold lat_ns");
    // the normal output's latency lines and percentile blocks, in order
    let labels = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim_start)
            .filter(|l| l.contains("percentiles (") || (l.contains("sec): min=")))
            .map(|l| {
                let name = l.split(" (").next().unwrap();
                if l.contains("percentiles (") {
                    format!("{name} percentiles")
                } else {
                    name.to_string()
                }
            })
            .collect()
    };
    let out = nvsched(&["run", job.to_str().unwrap(), "--sched", "mq-deadline", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ours = labels(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(ours, labels(&fio[end..]));
    assert!(ours.contains(&"lat prio 1/0 percentiles".to_string()), "{ours:?}");
}

#[test]
fn same_command_twice_gives_identical_json_apart_from_time_of_day() {
    let job = short_k2_mix();
    let strip = |s: &str| s.lines().filter(|l| !l.trim_start().starts_with("\"time")).collect::<Vec<_>>().join("\n");
    let (a, _) = run_json(&job, &["--sched", "k2:bound=2"]);
    let (b, _) = run_json(&job, &["--sched", "k2:bound=2"]);
    assert_eq!(strip(&a), strip(&b));
    let (c, _) = run_json(&job, &["--sched", "k2:bound=2", "--seed", "7"]);
    assert_ne!(strip(&a), strip(&c), "a different seed changes the run");
}

#[test]
fn source_date_epoch_makes_output_byte_identical() {
    let job = short_k2_mix();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_nvsched"))
            .args(["run", job.to_str().unwrap(), "--output-format=json+,terse", "-q"])
            .env("SOURCE_DATE_EPOCH", "1795325671")
            .output()
            .unwrap()
            .stdout
    };
    let a = run();
    assert_eq!(a, run());
    assert!(String::from_utf8(a).unwrap().contains("\"time\" : \"Sun Nov 22 05:34:31 2026\""));
}

#[test]
fn json_plus_has_bins_and_terse_has_fios_field_count() {
    let job = short_k2_mix();
    let (_, v) = run_json(&job, &["--output-format=json+"]);
    let bins = v["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, v["jobs"][0]["read"]["clat_ns"]["N"].as_u64().unwrap());
    let out = nvsched(&["run", job.to_str().unwrap(), "--output-format=terse", "-q"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let fio_terse =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33/mixed.terse"))
            .unwrap();
    let fio_fields = fio_terse.trim().split(';').count();
    for line in text.lines() {
        // ours carries one disk_util group (9 fields) that fio's null-engine sample lacks
        assert_eq!(line.split(';').count(), fio_fields + 9, "{line}");
        assert!(line.starts_with("3;nvsched-"));
    }
}

#[test]
fn unified_rw_reporting_reports_one_mixed_direction_as_fio() {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33/mixed-unified.fio");
    let (_, ours) = run_json(&job, &[]);
    assert_same_structure(&fixture("mixed-unified.json")["jobs"][0], &ours["jobs"][0], "jobs[0]");
    for key in ["read", "write", "trim", "sync"] {
        assert!(ours["jobs"][0].get(key).is_none(), "fio has no '{key}' under mixed");
    }
    // the same run reported per direction: mixed is their sum
    let text = std::fs::read_to_string(&job).unwrap();
    let (_, separate) = run_json(&temp_job("separate.fio", &text.replace("=mixed", "=none")), &[]);
    let n = |v: &Value, d: &str| v["jobs"][0][d]["total_ios"].as_u64().unwrap();
    assert_eq!(n(&ours, "mixed"), n(&separate, "read") + n(&separate, "write"));
    // fio sums the directions' samples, one each here (fio 3.33: bw_samples=2)
    let samples = |v: &Value, d: &str| v["jobs"][0][d]["bw_samples"].as_u64().unwrap();
    assert_eq!(samples(&ours, "mixed"), samples(&separate, "read") + samples(&separate, "write"));
    assert_eq!(samples(&fixture("mixed-unified.json"), "mixed"), 2);
    assert!(n(&separate, "read") > 0 && n(&separate, "write") > 0);
    let normal = String::from_utf8(nvsched(&["run", job.to_str().unwrap(), "-q"]).stdout).unwrap();
    assert!(normal.contains("\n  mixed: IOPS=") && normal.contains("\n  MIXED: bw="), "{normal}");
    assert!(!normal.contains("  read:") && !normal.contains("zone resets"));
    assert_terse_fields_as_fio(&job, "one direction, as fio's");
}

/// nvsched's terse line for `job` has as many fields as fio's beside it (`.terse`).
fn assert_terse_fields_as_fio(job: &Path, why: &str) {
    let terse =
        String::from_utf8(nvsched(&["run", job.to_str().unwrap(), "--output-format=terse", "-q"]).stdout).unwrap();
    let fio_terse = std::fs::read_to_string(job.with_extension("terse")).unwrap();
    assert_eq!(terse.trim().split(';').count(), fio_terse.trim().split(';').count(), "{why}");
}

/// `unified_rw_reporting=both`: the directions apart, then their sum as "mixed" (after
/// `sync` in the JSON, after the directions in the normal and terse outputs, a `MIXED`
/// group line), as fio 3.33 reports it (`mixed-both.*`). fio sums the directions'
/// bandwidth samples: one each gives `samples=2`, min = the two minima's sum.
#[test]
fn unified_rw_reporting_both_adds_the_mixed_sum_as_fio() {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33/mixed-both.fio");
    let (_, ours) = run_json(&job, &[]);
    let ours = &ours["jobs"][0];
    assert_same_structure(&fixture("mixed-both.json")["jobs"][0], ours, "jobs[0]");
    let keys: Vec<&String> = ours.as_object().unwrap().keys().collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(at("mixed"), at("sync") + 1, "{keys:?}");
    let n = |d: &str, k: &str| ours[d][k].as_f64().unwrap();
    for k in ["total_ios", "io_bytes", "bw_samples", "bw_min", "iops_samples", "iops_mean"] {
        assert_eq!(n("mixed", k), n("read", k) + n("write", k), "{k}");
    }
    assert!(n("read", "total_ios") > 0.0 && n("write", "total_ios") > 0.0);
    assert_eq!(ours["mixed"]["clat_ns"]["N"].as_u64().unwrap(), n("mixed", "total_ios") as u64);
    let normal = String::from_utf8(nvsched(&["run", job.to_str().unwrap(), "-q"]).stdout).unwrap();
    let order: Vec<usize> = [
        "\n  read: IOPS=",
        "\n  write: IOPS=",
        "\n  mixed: IOPS=",
        "\n   READ: bw=",
        "\n  WRITE: bw=",
        "\n  MIXED: bw=",
    ]
    .iter()
    .map(|l| normal.find(l).unwrap_or_else(|| panic!("{l} in {normal}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{normal}");
    assert_terse_fields_as_fio(&job, "three directions, as fio's");
}

/// A job's share of its group's bandwidth (`bw_agg`, terse's `bw_agg%`) is its mean
/// sample over the group's rate, at most 100%, 0 without samples: fio 3.33's terse
/// `mixed.terse` shows 94.200801% for a mean of 3754680 KiB/s over 3985826 KiB/s.
#[test]
fn bandwidth_shares_are_the_mean_sample_over_the_groups_rate_as_in_fio() {
    let text = "[global]\nioengine=null\nsize=1g\nrw=randread\nruntime=2\ntime_based\n[a]\nrate_iops=1000\n[b]\nrate_iops=3000\n";
    let job = temp_job("bw-agg.fio", text);
    let (_, v) = run_json(&job, &[]);
    // the group's rate as fio works it out: its bytes over its longest run in ms
    let jobs = v["jobs"].as_array().unwrap();
    let bytes: u64 = jobs.iter().map(|j| j["read"]["io_bytes"].as_u64().unwrap()).sum();
    let longest_ms = jobs.iter().map(|j| j["read"]["runtime"].as_u64().unwrap()).max().unwrap();
    let group_kib = (bytes * 1000 / longest_ms) as f64 / 1024.0;
    let terse =
        String::from_utf8(nvsched(&["run", job.to_str().unwrap(), "--output-format=terse", "-q"]).stdout).unwrap();
    for (j, line) in jobs.iter().zip(terse.lines()) {
        let mean = j["read"]["bw_mean"].as_f64().unwrap();
        let expected = (mean.trunc() * 100.0 / group_kib).min(100.0);
        assert!((j["read"]["bw_agg"].as_f64().unwrap() - expected).abs() < 0.01, "{j}");
        let share: f64 = line.split(';').nth(43).unwrap().trim_end_matches('%').parse().unwrap();
        assert!((share - expected).abs() < 0.05, "{line}");
        assert!(share > 20.0 && share < 80.0, "a quarter and three quarters: {share}");
    }
    // no samples (shorter than a window): no share
    let (_, v) = run_json(&temp_job("bw-agg-short.fio", &text.replace("runtime=2", "runtime=100ms")), &[]);
    assert_eq!(v["jobs"][0]["read"]["bw_agg"], 0.0);
}

/// `--status-interval`: the report so far at each interval of simulated time, as fio
/// dumps its status, then the final report; in JSON, one document each.
#[test]
fn status_interval_dumps_the_report_so_far_at_each_interval() {
    let job =
        temp_job("status.fio", "[a]\nioengine=libaio\niodepth=8\nsize=64m\nrw=randread\nruntime=2500ms\ntime_based\n");
    let out = nvsched(&["run", job.to_str().unwrap(), "--status-interval", "1", "--output-format=json", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let docs: Vec<Value> =
        serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>().map(|d| d.unwrap()).collect();
    let read = |d: &Value, k: &str| d["jobs"][0]["read"][k].as_u64().unwrap();
    let runtimes: Vec<u64> = docs.iter().map(|d| read(d, "runtime")).collect();
    assert_eq!(runtimes, [1000, 2000, 2500], "two dumps, then the final report");
    assert!(
        read(&docs[0], "io_bytes") < read(&docs[1], "io_bytes")
            && read(&docs[1], "io_bytes") < read(&docs[2], "io_bytes")
    );
    assert!(docs[0].get("nvsched").is_none() && docs[2].get("nvsched").is_some());
    // the normal output: its header once, before the dumps
    let out = nvsched(&["run", job.to_str().unwrap(), "--status-interval", "1", "-q"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("Starting 1 process").count(), 1);
    assert!(text.find("Starting 1 process") < text.find("(groupid=0"), "{text}");
    assert_eq!(text.matches("(groupid=0").count(), 3, "{text}");
    // with --output, the file holds the dumps and then the final report
    let file = job.with_extension("out.json");
    let out = nvsched(&[
        "run",
        job.to_str().unwrap(),
        "--status-interval",
        "1",
        "--output-format=json",
        "-q",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let written = std::fs::read(&file).unwrap();
    let in_file = serde_json::Deserializer::from_slice(&written).into_iter::<Value>().count();
    assert_eq!(in_file, 3);
    let out = nvsched(&["run", job.to_str().unwrap(), "--status-interval", "100us"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1ms"));
}

/// Which clones share a report entry, as fio 3.33 groups them (checked against fio's JSON
/// for each of these job files): a clone joins the entry before it when its job has
/// `group_reporting` and the previous clone is of the same group. The entry takes its
/// first member's name and its last member's job options.
#[test]
fn group_reporting_entries_follow_fio() {
    let head = "[global]\nruntime=200ms\ntime_based\nsize=64m\nbs=4k\n";
    // (name, jobs, expected entries: (jobname, clones, job options' rw))
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, u64, &'a str)]);
    let cases: [Case; 4] = [
        (
            "gr-then-plain",
            "[r]\nrw=randread\nnumjobs=2\ngroup_reporting\n[w]\nrw=write\n",
            &[("r", 2, "randread"), ("w", 1, "write")],
        ),
        // fio's quirk: group_reporting clones right after a plain job of their group join it
        (
            "plain-then-gr",
            "[w]\nrw=write\n[r]\nrw=randread\nnumjobs=2\ngroup_reporting\n[x]\nrw=read\n",
            &[("w", 3, "randread"), ("x", 1, "read")],
        ),
        ("global-gr", "[global]\ngroup_reporting\n[a]\nrw=randread\n[b]\nrw=read\n", &[("a", 2, "read")]),
        (
            "new-group",
            "[global]\ngroup_reporting\n[a]\nrw=randread\n[b]\nnew_group\nrw=read\nnumjobs=2\n",
            &[("a", 1, "randread"), ("b", 2, "read")],
        ),
    ];
    for (name, jobs, expected) in cases {
        let job = temp_job(&format!("{name}.fio"), &format!("{head}{jobs}"));
        let (_, v) = run_json(&job, &[]);
        let entries: Vec<(&str, &str)> = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| (j["jobname"].as_str().unwrap(), j["job options"]["rw"].as_str().unwrap()))
            .collect();
        let want: Vec<(&str, &str)> = expected.iter().map(|&(job, _, rw)| (job, rw)).collect();
        assert_eq!(entries, want, "{name}");
        // an entry's job_runtime adds its members' up, as fio's total_run_time; each
        // direction's runtime is the longest member's (fio 3.33, 3 clones of 300 ms: 900)
        for (entry, &(_, clones, _)) in v["jobs"].as_array().unwrap().iter().zip(expected) {
            assert_eq!(entry["job_runtime"], 200 * clones, "{name}");
            assert!(["read", "write"].iter().any(|d| entry[d]["runtime"] == 200), "{name}");
        }
        // the normal report's heads: `NAME: (groupid=G, jobs=N): ...`
        let normal = String::from_utf8(nvsched(&["run", job.to_str().unwrap(), "-q"]).stdout).unwrap();
        let heads: Vec<(&str, u64)> = normal
            .lines()
            .filter_map(|l| {
                let (job, rest) = l.split_once(": (groupid=")?;
                let clones = rest.split_once("jobs=")?.1.split_once(')')?.0;
                Some((job, clones.parse().unwrap()))
            })
            .collect();
        let want: Vec<(&str, u64)> = expected.iter().map(|&(job, clones, _)| (job, clones)).collect();
        assert_eq!(heads, want, "{name}");
    }
}

#[test]
fn output_file_is_written() {
    let job = short_k2_mix();
    let dest = job.with_file_name("out.json");
    let out =
        nvsched(&["run", job.to_str().unwrap(), "--output-format=json", "-q", "--output", dest.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&dest).unwrap()).unwrap();
    assert!(v["jobs"].is_array());
    // through a link, the link's target is written and the link stays: a report is never
    // renamed onto a link, a device or a pipe (as `--output /dev/null` once did)
    let link = job.with_file_name("out-link.json");
    let _ = std::fs::remove_file(&link);
    std::fs::write(&dest, "old").unwrap();
    std::os::unix::fs::symlink(&dest, &link).unwrap();
    let out =
        nvsched(&["run", job.to_str().unwrap(), "--output-format=json", "-q", "--output", link.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&dest).unwrap().contains("\"jobs\""));
}

/// A fill_device job's file takes the device space the other files leave, and a job
/// without a size on that file reads all of it; a percentage size is of the device
/// (taken once: 1% of a 256 GB device is 2.56 GB, not 1% of that).
#[test]
fn fills_and_percentage_sizes_take_their_share_of_the_simulated_device() {
    let text = "[global]\nbs=1m\niodepth=32\n[big]\nrw=write\nsize=200g\n[fill]\nrw=write\nfill_device=1\n\
                [again]\nstonewall\nfilename=fill.0.0\nrw=read\n[pct]\nfilename=/dev/nvme0n1\nrw=read\nsize=1%\n";
    let (_, v) = run_json(&temp_job("fill.fio", text), &["--device", "simple-nvme"]);
    let bytes = |k: usize, dir: &str| v["jobs"][k][dir]["io_bytes"].as_u64().unwrap();
    let left = 256_000_000_000 - (200u64 << 30);
    assert_eq!(bytes(1, "write"), left / (1 << 20) * (1 << 20), "the fill takes what 'big' leaves");
    assert_eq!(bytes(2, "read"), bytes(1, "write"));
    assert_eq!(bytes(3, "read"), 2_560_000_000 / (1 << 20) * (1 << 20));
}

#[test]
fn errors_name_what_is_wrong() {
    let bad = temp_job("bad.fio", "[a]\nrw=randread\niodepth=0\n");
    let out = nvsched(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.fio:3: option 'iodepth': 0 is out of range 1..=65536"), "{err}");

    let job = short_k2_mix();
    for (args, expected) in [
        (vec!["--sched", "k3"], "unknown policy 'k3'"),
        (vec!["--sched", "k2:bound=0"], "'0' is out of range; accepted: integer 1..=65536"),
        (vec!["--device", "nope"], "unknown device 'nope'"),
        (vec!["--device-set", "simple.units"], "expected KEY=VALUE"),
        (vec!["--output-format", "xml"], "'xml' is not one of"),
        (vec!["--precondition", "partial:2"], "nvsched: precondition 'partial:2': expected clean, full or partial"),
        // checked before the run, not after it
        (vec!["--output", "/nonexistent-dir/x.json"], "--output '/nonexistent-dir/x.json': there is no directory"),
        (vec!["--output", "/tmp"], "--output '/tmp': a directory, not a file"),
    ] {
        let mut a = vec!["run", job.to_str().unwrap()];
        a.extend(args);
        let out = nvsched(&a);
        assert_eq!(out.status.code(), Some(1), "{a:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected), "{a:?}: {err}");
    }
    // compare without a calibrated profile says how to get one (run where there is none)
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["compare", job.to_str().unwrap(), "--filename", "/tmp/nvsched-never-made.dat"])
        .current_dir(job.parent().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no calibrated.toml here") && err.contains("nvsched calibrate --filename"), "{err}");
    // tune refuses a job file without a real-time job before it sweeps
    let no_rt = temp_job("no-rt.fio", "[a]\nrw=randread\nsize=1g\n");
    let out = nvsched(&["tune", "k2", "--objective", "latency:50%", no_rt.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no-rt.fio: no real-time job (prioclass=1)") && !err.contains("sweeping"), "{err}");
    // --seeds: a list, a range low to high, not with --seed
    for (seeds, expected) in [
        (vec!["--seeds", "3-1"], "a range goes from low to high"),
        (vec!["--seeds", "1,x"], "expected N, N-M or a comma list"),
        (vec!["--seeds", "1-2", "--seed", "3"], "cannot be used with"),
    ] {
        let mut a = vec!["tune", "k2", "--objective", "latency:50%"];
        a.extend(&seeds);
        let out = nvsched(&a);
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected) && !err.contains("sweeping"), "{a:?}: {err}");
    }

    // tune: which policy, and the options each takes
    for (a, expected) in [
        (vec!["tune", "k2"], "tune k2 needs --objective"),
        (vec!["tune", "iocost", "--objective", "latency:50%"], "takes no --objective"),
        (vec!["tune", "iocost", "--seconds", "0"], "--seconds and --numjobs must be at least 1"),
        (vec!["tune", "bfq"], "tune bfq: give --param NAME=V1,V2,... (the values to try); without it tune knows 'k2'"),
        (vec!["tune", "k2:bound=4", "--objective", "latency:50%"], "tune k2 sweeps the bound (--bounds): leave it out"),
        (vec!["tune", "iocost", "--job", "rt"], "takes no --objective, --job, --bounds"),
        (vec!["tune", "iocost", "--plot", "/tmp/x"], "takes no --objective, --job, --bounds, --output"),
        (
            vec!["tune", "nope", "--param", "a=1", "--objective", "latency:50%"],
            "unknown policy 'nope'; known policies: none,",
        ),
        (
            vec!["tune", "kyber", "--param", "read_lat", "--objective", "latency:50%"],
            "--param 'read_lat': expected NAME=V1,V2,...",
        ),
        (vec!["tune", "kyber", "--param", "read_lat=1ms,,2ms", "--objective", "latency:50%"], "an empty value"),
        (
            vec!["tune", "kyber", "--param", "foo=1", "--objective", "latency:50%"],
            "kyber:foo=1: policy 'kyber' has no parameter 'foo'; accepted: read_lat",
        ),
        (
            vec!["tune", "kyber", "--param", "read_lat=x", "--objective", "latency:50%"],
            "kyber:read_lat=x: policy 'kyber', parameter 'read_lat': 'x' is not a duration",
        ),
        (
            vec!["tune", "kyber", "--param", "read_lat=1ms", "--param", "read_lat=2ms", "--objective", "latency:50%"],
            "--param read_lat: given twice",
        ),
        (
            vec!["tune", "kyber", "--param", "read_lat=1ms", "--objective", "latency:50%", "--job", "nope"],
            "k2-mix.fio: no job named 'nope' (the jobs: rt, be)",
        ),
        (vec!["tune", "kyber", "--param", "read_lat=1ms"], "tune kyber needs --objective"),
    ] {
        let out = nvsched(&a);
        assert_eq!(out.status.code(), Some(1), "{a:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected), "{a:?}: {err}");
    }

    let out = nvsched(&["repro", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown experiment 'nope'; known: k2-analysis, mts, prio-nice, tabs, veloces, all"), "{err}");
    // repro's help names every shipped experiment
    let help = stdout_of(&["repro", "--help"]);
    for dir in std::fs::read_dir(repo_root().join("experiments")).unwrap() {
        let name = dir.unwrap().file_name().into_string().unwrap();
        assert!(help.contains(&name), "repro --help leaves out {name}");
    }

    let out = nvsched(&["run", "/nonexistent.fio"]);
    assert!(String::from_utf8(out.stderr).unwrap().contains("cannot read job file"));
}

#[test]
fn a_policy_with_nothing_to_do_among_the_jobs_cgroups_says_so() {
    let job = |name: &str, cgroups: &[&str]| {
        let mut text = "[global]\nrw=randread\nbs=4k\nsize=64m\nruntime=20ms\ntime_based=1\n".to_string();
        for (i, c) in cgroups.iter().enumerate() {
            text += &format!("[j{i}]\ncgroup={c}\n");
        }
        if cgroups.is_empty() {
            text += "[alone]\n";
        }
        temp_job(name, &text)
    };
    let stderr = |args: &[&str]| {
        let out = nvsched(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stderr).unwrap()
    };
    let two = job("two-cgroups.fio", &["db", "batch"]);
    let two = two.to_str().unwrap();
    let err = stderr(&["run", two, "-q", "--sched", "iolatency:target=1ms,tenant=3"]);
    assert!(
        err.contains("warning: policy 'iolatency': tenant=3 protects the jobs' cgroup number 3, but they are in 2 cgroups (db, batch)"),
        "{err}"
    );
    // a cgroup that is there, and policies that need none, say nothing
    for sched in ["iolatency:target=1ms,tenant=2", "iocost", "mts", "none"] {
        assert!(!stderr(&["run", two, "-q", "--sched", sched]).contains("warning"), "{sched}");
    }

    // sweep warns once per policy, before its runs
    let none = job("no-cgroups.fio", &[]);
    let err = stderr(&[
        "sweep",
        none.to_str().unwrap(),
        "-q",
        "--sched",
        "iocost",
        "--sched",
        "iocost:rpct=90",
        "--sched",
        "mts",
    ]);
    assert_eq!(err.matches("policy 'iocost': no job sets cgroup=").count(), 1, "{err}");
    assert!(
        err.contains("policy 'mts': the jobs are in no cgroup; it rescales slices between two or more tenants"),
        "{err}"
    );
    let one = job("one-cgroup.fio", &["db"]);
    let err = stderr(&["run", one.to_str().unwrap(), "-q", "--sched", "mts"]);
    assert!(err.contains("policy 'mts': the jobs are in 1 cgroup (db)"), "{err}");

    // nested cgroups: the policy that keeps them flat says so; cfq, bfq, iolatency and
    // iocost nest them
    let nested = job("nested.fio", &["db", "web/app", "web/logs"]);
    let nested = nested.to_str().unwrap();
    let want = "warning: policy 'mts' puts every cgroup directly below the root: web/app shares with the other \
                cgroups as their sibling, not within 'web' (cfq, bfq, iolatency and iocost nest cgroups)";
    assert_eq!(stderr(&["run", nested, "-q", "--sched", "mts"]).matches(want).count(), 1);
    for sched in ["cfq", "iocost", "bfq", "iolatency:target=1ms,tenant=2", "none", "k2:bound=4"] {
        assert!(!stderr(&["run", nested, "-q", "--sched", sched]).contains("warning"), "{sched}");
    }
    // the JSON lists the parent too, with what its cgroups moved, and names it
    let out = nvsched(&["run", nested, "-q", "--output-format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tenants = v["nvsched"]["tenants"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        tenants.iter().map(|t| (t["name"].as_str().unwrap(), t["parent"].as_str().unwrap_or("-"))).collect();
    assert_eq!(names, [("db", "-"), ("web", "-"), ("web/app", "web"), ("web/logs", "web")]);
    let bytes = |i: usize| tenants[i]["io_bytes"].as_u64().unwrap();
    assert!(bytes(2) > 0 && bytes(3) > 0 && bytes(1) == bytes(2) + bytes(3), "{tenants:?}");
    assert!(tenants.iter().all(|t| t.get("io_latency_target_us").is_none()));

    // io.latency targets from the job file: iolatency without target= uses them, and the
    // JSON lists them; without any, or beside target= alone, it says why they do nothing
    let text = std::fs::read_to_string(two).unwrap().replacen("cgroup=db\n", "cgroup=db\ncgroup_io_latency=200us\n", 1);
    let with_target = temp_job("two-cgroups-target.fio", &text);
    let with_target = with_target.to_str().unwrap();
    assert!(!stderr(&["run", with_target, "-q", "--sched", "iolatency"]).contains("warning"));
    let err = stderr(&["run", two, "-q", "--sched", "iolatency"]);
    assert!(err.contains("warning: policy 'iolatency' has no latency target"), "{err}");
    let err = stderr(&["run", with_target, "-q", "--sched", "iolatency:target=1ms"]);
    assert!(err.contains("cgroup_io_latency targets (db) apply only with tenant=N or without target="), "{err}");
    let out = nvsched(&["run", with_target, "-q", "--output-format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets: Vec<Value> =
        v["nvsched"]["tenants"].as_array().unwrap().iter().map(|t| t["io_latency_target_us"].clone()).collect();
    assert_eq!(targets, [json!(200.0), Value::Null]);
}

#[test]
fn the_job_files_ioscheduler_chooses_the_policy_unless_sched_is_given() {
    let text = std::fs::read_to_string(short_k2_mix()).unwrap();
    let with = |line: &str| temp_job("iosched.fio", &text.replacen("[global]\n", &format!("[global]\n{line}\n"), 1));
    let policy = |v: &Value| {
        (v["nvsched"]["policy"]["spec"].clone(), v["nvsched"]["policy"]["counters"]["max_inflight"].clone())
    };

    // the job file's scheduler runs, as --sched would run it
    let (_, from_file) = run_json(&with("ioscheduler=k2:bound=1"), &[]);
    let (_, from_flag) = run_json(&short_k2_mix(), &["--sched", "k2:bound=1"]);
    assert_eq!(policy(&from_file), (Value::from("k2:bound=1"), Value::from(1.0)));
    assert_eq!(from_file["jobs"], from_flag["jobs"]);
    // Linux's alias, as fio job files write it
    let (_, v) = run_json(&with("ioscheduler=deadline"), &[]);
    assert_eq!(v["nvsched"]["policy"]["spec"], "mq-deadline");

    // --sched wins, and says so
    let job = with("ioscheduler=k2:bound=1");
    let out = nvsched(&["run", job.to_str().unwrap(), "-q", "--output-format=json", "--sched", "none"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nvsched"]["policy"]["spec"], "none");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("iosched.fio:10: --sched none overrides the job file's ioscheduler=k2:bound=1"), "{err}");

    for (line, expected) in [
        (
            "ioscheduler=anticipatory",
            "iosched.fio:10: option 'ioscheduler': unknown policy 'anticipatory'; known policies: none,",
        ),
        ("ioscheduler=k2:bound=0", "iosched.fio:10: option 'ioscheduler': policy 'k2', parameter 'bound'"),
        ("ioscheduler=", "iosched.fio:10: option 'ioscheduler': needs a policy"),
    ] {
        let out = nvsched(&["run", with(line).to_str().unwrap(), "-q"]);
        assert_eq!(out.status.code(), Some(1), "{line}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected), "{line}: {err}");
    }
    // one device, one scheduler
    let two =
        temp_job("iosched2.fio", "[a]\nrw=read\nsize=1m\nioscheduler=kyber\n[b]\nrw=read\nsize=1m\nioscheduler=none\n");
    let err = String::from_utf8(nvsched(&["run", two.to_str().unwrap(), "-q"]).stderr).unwrap();
    assert!(
        err.contains("iosched2.fio:8: option 'ioscheduler': job 'b' asks for scheduler none but job 'a' for kyber"),
        "{err}"
    );
}

#[test]
fn tune_on_a_reproduction_cell_uses_its_jobs_and_device() {
    // the paper's example: O1 at alpha 50% picks bound 32 for random reads
    let out = nvsched(&["tune", "k2", "--objective", "latency:50%", "--experiment", "k2-analysis:randread"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Use: --sched k2:bound=32"), "{text}");
    // by default the reproduction's own seeds (quick mode: one repetition, seed 1), so the
    // table shows the reproduction's numbers
    let table = |extra: &[&str]| {
        let mut a = vec!["tune", "k2", "--objective", "latency:50%", "--experiment", "k2-analysis:randread"];
        a.extend(["--bounds", "32"]);
        a.extend(extra);
        let out = nvsched(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let default = table(&[]);
    assert_eq!(default, table(&["--seed", "1"]));
    assert_ne!(default, table(&["--seed", "0"]), "the seed moves the tail");
    // progress on standard error (a line per tenth off a terminal), none with -q
    let cell = ["tune", "k2", "--objective", "latency:50%", "--experiment", "k2-analysis:randread", "--bounds", "32"];
    let err = String::from_utf8(nvsched(&cell).stderr).unwrap();
    assert!(err.contains("sweeping none and k2 bounds [32]") && err.contains("tune: 2/2 runs"), "{err}");
    let quiet = nvsched(&[&cell[..], &["-q"]].concat());
    assert!(quiet.status.success() && quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));
    assert_eq!(String::from_utf8(quiet.stdout).unwrap(), default);
    for (cell, expected) in [
        ("k2-analysis:nope", "has no variant 'nope' (it has: read, randread, write, randwrite)"),
        ("k2-analysis:read:half", "has no drive state 'half' (it has: partial, full)"),
        ("k2-analysis", "expected NAME:VARIANT[:STATE]"),
    ] {
        let out = nvsched(&["tune", "k2", "--objective", "latency:50%", "--experiment", cell]);
        assert_eq!(out.status.code(), Some(1), "{cell}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected), "{cell}: {err}");
    }
}

#[test]
fn a_reproduction_cell_runs_on_another_drive_with_device() {
    let sweep = |extra: &[&str]| {
        let mut a = vec!["sweep", "--experiment", "tabs:1w1r", "--sched", "none"];
        a.extend(extra);
        let out = nvsched(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (own, own_err) = sweep(&[]);
    assert!(own_err.contains("on 970pro-512g"), "{own_err}");
    let (other, other_err) = sweep(&["--device", "970evoplus-250g"]);
    assert!(other_err.contains("on 970evoplus-250g"), "{other_err}");
    assert_ne!(own, other, "another drive, other numbers");
    assert_eq!(own, sweep(&["--device", "970pro-512g"]).0, "tabs' manifest sets no profile fields");
    // with --device the manifest's host settings stay (prio-nice's raises the block
    // layer's tags: host.nr_requests=32768) and its drive settings go (queue_depth=8184,
    // which this cell does not feel); --device-set goes on top
    let prio_nice = ["sweep", "--experiment", "prio-nice:nice80", "--sched", "none", "-q"];
    let own = stdout_of(&prio_nice);
    assert_eq!(own, stdout_of(&[&prio_nice[..], &["--device", "960pro-512g"]].concat()), "the host's tags stay");
    let fewer_tags = [&prio_nice[..], &["--device", "960pro-512g", "--device-set", "host.nr_requests=1023"]].concat();
    assert_ne!(own, stdout_of(&fewer_tags), "with fewer tags the processes share them otherwise");
}

/// `tune POLICY --param`: none and every setting run, and the choice follows the rule on
/// the printed figures (O1: the most bandwidth within the tail limit).
#[test]
fn tune_any_policy_picks_the_setting_its_objective_asks_for() {
    let tune = |extra: &[&str]| {
        let mut a = vec!["tune", "iolatency", "--param", "target=100us,200us,1ms", "-q"];
        a.extend(extra);
        let out = nvsched(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = tune(&["--objective", "latency:90%"]);
    // policy, p99.9, bandwidth per line of the table
    let rows: Vec<(String, f64, f64)> = text
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[0].to_string(), w[1].parse().unwrap(), w[2].parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["none", "iolatency:target=100us", "iolatency:target=200us", "iolatency:target=1ms"], "{text}");
    let limit = 0.9 * rows[0].1;
    let best = rows[1..].iter().filter(|r| r.1 <= limit).max_by(|a, b| a.2.total_cmp(&b.2)).expect("one fits");
    assert!(text.contains(&format!("Use: --sched {}", best.0)), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with("<- chosen")).count(), 1, "{text}");
    // the protection costs bandwidth: the tightest target is not the one with the most
    assert!(rows[1].2 < rows[0].2 && rows[1].1 < rows[0].1, "{text}");
    // another job's tail: the best-effort readers' (their first clone)
    let be = tune(&["--objective", "bandwidth:50%", "--job", "be"]);
    assert!(be.lines().next().unwrap().contains("be p99.9 (us)"), "{be}");
    assert!(be.contains("O2: ") && be.contains("Use: --sched iolatency:target="), "{be}");
    // JSON: the same figures, limit and choice; a figure on request
    let dir = std::env::temp_dir().join(format!("nvsched-cli-tune-any-{}", std::process::id()));
    let plot = dir.join("plots");
    let json = tune(&["--objective", "latency:90%", "--output-format", "json", "--plot", plot.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let t = &v["nvsched_tune"];
    assert_eq!(t["job"], "rt");
    assert_eq!(t["chosen"].as_str(), Some(best.0.as_str()));
    assert!(text.contains(t["why"].as_str().unwrap()), "{json}");
    let settings = t["settings"].as_array().unwrap();
    assert_eq!(settings.len(), rows.len());
    for (s, r) in settings.iter().zip(&rows) {
        assert_eq!(s["policy"].as_str(), Some(r.0.as_str()));
        assert_eq!(format!("{:.0}", s["p999_us"].as_f64().unwrap()), format!("{:.0}", r.1));
        assert_eq!(format!("{:.1}", s["total_bw_mbps"].as_f64().unwrap()), format!("{:.1}", r.2));
    }
    assert!((t["p999_limit_us"].as_f64().unwrap() - 0.9 * settings[0]["p999_us"].as_f64().unwrap()).abs() < 1e-6);
    assert!(t["bw_floor_mbps"].is_null());
    assert!(plot.join("tune.png").exists() && plot.join("tune.svg").exists());
    // --output writes the same text to a file
    let out_file = dir.join("tune.txt");
    assert_eq!(tune(&["--objective", "latency:90%", "--output", out_file.to_str().unwrap()]), "");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), text);
    std::fs::remove_dir_all(&dir).ok();
}

/// `sweep --objective`: none joins as the reference, and the choice among the policies
/// follows the tuner's rule on the real-time job's p99.9 and the total bandwidth.
#[test]
fn sweep_chooses_a_policy_for_an_objective() {
    let job = short_k2_mix();
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "sweep",
            job.to_str().unwrap(),
            "--sched",
            "kyber",
            "--sched",
            "k2:bound=4",
            "--sched",
            "k2:bound=32",
            "-q",
        ];
        a.extend(extra);
        let out = nvsched(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&sweep(&["--objective", "latency:50%", "--output-format", "json"])).unwrap();
    let s = &json["nvsched_sweep"];
    let figures: Vec<(String, f64, f64)> = s["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let rt = p["jobs"].as_array().unwrap().iter().find(|j| j["job"] == "rt").unwrap();
            (
                p["policy"].as_str().unwrap().to_string(),
                rt["clat_p999_us"].as_f64().unwrap(),
                p["total_bw_mbps"].as_f64().unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = figures.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["none", "kyber", "k2:bound=4", "k2:bound=32"], "none first, as the reference");
    let limit = 0.5 * figures[0].1;
    let best = figures[1..].iter().filter(|f| f.1 <= limit).max_by(|a, b| a.2.total_cmp(&b.2)).expect("a bound fits");
    assert_eq!(s["choice"]["chosen"].as_str(), Some(best.0.as_str()), "{json:#}");
    assert_eq!(s["choice"]["job"], "rt");
    let plots = std::env::temp_dir().join(format!("nvsched-sweep-objective-plot-{}", std::process::id()));
    let text = sweep(&["--objective", "latency:50%", "--plot", plots.to_str().unwrap()]);
    assert!(
        text.contains(s["choice"]["why"].as_str().unwrap()) && text.ends_with(&format!("Use: --sched {}\n", best.0)),
        "{text}"
    );
    let svg = std::fs::read_to_string(plots.join("sweep.svg")).unwrap();
    assert!(svg.contains(&format!("p99.9 limit {limit:.0} us")), "the figure draws the limit and names it");
    std::fs::remove_dir_all(&plots).unwrap();
    assert!(!sweep(&[]).contains("Use: --sched"), "no objective, no choice");
    let out = nvsched(&["sweep", job.to_str().unwrap(), "--objective", "speed:50%"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("objective 'speed': expected latency or bandwidth"));
}

#[test]
fn listings_cover_every_policy_and_device() {
    let out = String::from_utf8(nvsched(&["policies"]).stdout).unwrap();
    for p in nvsched::policy::POLICIES {
        assert!(out.contains(p.id), "{}", p.id);
        for param in p.params {
            assert!(out.contains(param.name));
        }
    }
    // one policy, by its id or Linux's alias
    let out = String::from_utf8(nvsched(&["policies", "deadline"]).stdout).unwrap();
    assert!(out.starts_with("mq-deadline  —") && !out.contains("\nk2  —"), "{out}");
    assert!(out.contains("example: --sched mq-deadline") && out.contains("Every policy also takes:"), "{out}");
    let unknown = nvsched(&["policies", "cfq2"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown policy 'cfq2'; known policies: none,"));
    let out = String::from_utf8(nvsched(&["devices"]).stdout).unwrap();
    for p in nvsched::ssd::builtin_profiles() {
        assert!(out.contains(&p.name));
    }
}

#[test]
fn normal_output_reads_like_fio() {
    let out = nvsched(&["run", short_k2_mix().to_str().unwrap(), "-q"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("rt: (groupid=0, jobs=1)"));
    assert!(text.contains("clat percentiles (usec):"));
    assert!(text.contains("Run status group 0 (all jobs):"));
    assert!(text.contains("nvsched: policy none on 970evoplus-250g (nand model)"), "{text}");
}

/// docs/job-files.md's list of supported job options names every option the parser
/// accepts.
#[test]
fn readme_lists_every_job_option() {
    let readme = std::fs::read_to_string(repo_root().join("docs/job-files.md")).unwrap();
    let missing: Vec<&str> = nvsched::workload::OPTIONS
        .iter()
        .map(|o| o.name)
        .filter(|name| !readme.contains(&format!("`{name}`")) && !readme.contains(&format!("`{name}=")))
        .collect();
    assert!(missing.is_empty(), "docs/job-files.md does not mention the job options {missing:?}");
}

/// `write_lat_log`/`write_bw_log`/`write_iops_log` write fio's files, named as fio names
/// them, in the working directory: one line per I/O, or per window with `log_avg_msec`.
#[test]
fn fio_log_files_have_fios_names_and_one_line_per_io() {
    let job = "[global]\nrw=randrw\nbs=4k\nsize=64m\nioengine=io_uring\niodepth=4\nruntime=200ms\ntime_based\n\
               [lj]\nnumjobs=2\nwrite_lat_log\nwrite_iops_log=io\n\
               [win]\nwrite_bw_log=w\nlog_avg_msec=50\n";
    let (dir, v) = run_json_in_dir("logs", job, &[]);
    let lines = |name: &str| -> Vec<String> {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        text.lines().map(str::to_string).collect()
    };
    for (n, job) in [(1, 0), (2, 1)] {
        let ios = ["read", "write"].iter().map(|d| v["jobs"][job][d]["total_ios"].as_u64().unwrap()).sum::<u64>();
        for kind in ["lat", "clat", "slat"] {
            let l = lines(&format!("lj_{kind}.{n}.log"));
            assert_eq!(l.len() as u64, ios, "lj_{kind}.{n}.log: one line per I/O");
            let fields: Vec<u64> = l[0].split(", ").map(|f| f.parse().unwrap()).collect();
            assert_eq!(fields.len(), 5, "time, value, direction, bs, priority: {}", l[0]);
            assert_eq!(fields[3], 4096);
        }
        assert!(lines(&format!("io_iops.{n}.log")).iter().all(|l| l.split(", ").nth(1) == Some("1")));
    }
    // job 3: windows of 50 ms, each written when a later I/O completes: the requests in
    // flight at the 200 ms stop write the window ending at 200; theirs is never written

    let w = lines("w_bw.3.log");
    let times: Vec<&str> = w.iter().map(|l| l.split(", ").next().unwrap()).collect();
    assert_eq!(times, ["50", "50", "100", "100", "150", "150", "200", "200"], "{w:?}");
    assert!(w.iter().all(|l| l.ends_with(", 0, 0")), "windowed lines have block size 0");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// fio makes a job's copies counting down, so its threads are clones 0, N-1, ..., 1: it
/// sets their files up, reports them and numbers their logs in that order. Checked
/// against fio 3.33 on a shared 160 KiB file with clones 64 KiB apart (40, 8 and 24
/// writes; the second report and `x_lat.2.log` are the clone at 128 KiB), and on a new
/// file that each clone sizes (a percentage `offset_increment` is of what the file holds
/// at the clone's turn: clone 2 lays 128 KiB out before clone 1 starts at 64 KiB; with
/// `size=50%` the first clone sees 128 KiB, the second 160 KiB).
#[test]
fn clones_are_set_up_reported_and_logged_in_fios_order_of_threads() {
    let job =
        "[a]\nfilename=shared\nfilesize=160k\noffset_increment=64k\nbs=4k\nnumjobs=3\nrw=write\nwrite_lat_log=x\n";
    let (dir, v) = run_json_in_dir("thread-order", job, &[]);
    let writes = |v: &Value| -> Vec<u64> {
        v["jobs"].as_array().unwrap().iter().map(|j| j["write"]["total_ios"].as_u64().unwrap()).collect()
    };
    assert_eq!(writes(&v), [40, 8, 24]);
    for (n, ios) in [(1, 40), (2, 8), (3, 24)] {
        let log = std::fs::read_to_string(dir.join(format!("x_lat.{n}.log"))).unwrap();
        assert_eq!(log.lines().count(), ios, "x_lat.{n}.log");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let job = "[a]\nfilename=f\nsize=64k\noffset_increment=50%\nbs=4k\nnumjobs=3\nrw=write\nwrite_iolog=log\n";
    let (dir, _) = run_json_in_dir("thread-order-pct", job, &[]);
    let first_write = |clone: u32| -> String {
        let log = std::fs::read_to_string(dir.join(format!("log.{clone}"))).unwrap();
        log.lines().find(|l| l.contains(" write ")).unwrap().split(' ').nth(3).unwrap().to_string()
    };
    assert_eq!([first_write(0), first_write(1), first_write(2)], ["0", "65536", "65536"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let job = "[a]\nfilename=f\nsize=50%\nfilesize=256k\nrw=write:8k\nbs=4k\nnumjobs=2\noffset_increment=32k\nloops=3\nio_size=160k\n";
    let (dir, v) = run_json_in_dir("thread-order-size", job, &[]);
    assert_eq!(writes(&v), [120, 44], "fio 3.33: each clone wraps by the file's size as it saw it");
    std::fs::remove_dir_all(&dir).unwrap();
    // fio takes the start offset again for each later pass, from the file as the clone
    // left it: clone 1 starts at 16 KiB (25% of 64 KiB), lays the file out to 80 KiB,
    // and its second pass starts at 20 KiB and ends at the file's end, a block short
    let job = "[a]\nfilename=f\nsize=64k\noffset_increment=25%\nbs=4k\nnumjobs=2\nrw=write\nloops=2\n";
    let (dir, v) = run_json_in_dir("thread-order-loops", job, &[]);
    assert_eq!(writes(&v), [32, 31], "fio 3.33");
    std::fs::remove_dir_all(&dir).unwrap();
    // clones 3 and 2 lie at and past the end of the file clone 0 laid out: fio 3.33 runs
    // them without I/O or error (a time-based one too) and the others as usual
    for extra in ["", "time_based=1\nruntime=20ms\n"] {
        let job = format!(
            "[a]\nfilename=f\nrw=write\nbs=4k\nsize=64k\nfilesize=256k\noffset_increment=50%\nnumjobs=4\n{extra}"
        );
        let (dir, v) = run_json_in_dir("thread-order-past-end", &job, &[]);
        let w = writes(&v);
        assert_eq!((w[1], w[2]), (0, 0), "{extra}");
        assert!(w[0] >= 16 && w[3] >= 16, "{extra}{w:?}");
        assert_eq!(v["jobs"][1]["job_runtime"], 0, "{extra}");
        assert!(v["jobs"].as_array().unwrap().iter().all(|j| j["error"] == 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// fio starts each pass of an appending job after the first where the file then ends,
/// finds no room and ends the job: fio 3.33 writes 64 KiB for `size=64k file_append=1`
/// with `loops=2` or `io_size=96k` (nvsched wrote 128 and 96 KiB), 48 KiB with
/// `io_size=48k`.
#[test]
fn an_appending_job_makes_one_pass() {
    for (extra, writes) in [("loops=2", 16), ("io_size=96k", 16), ("io_size=48k", 12), ("loops=3\nnumjobs=2", 16)] {
        let job = format!("[a]\nfilename=f\nrw=write\nbs=4k\nsize=64k\nfile_append=1\n{extra}\n");
        let (dir, v) = run_json_in_dir("append-passes", &job, &[]);
        for j in v["jobs"].as_array().unwrap() {
            assert_eq!(j["write"]["total_ios"], writes, "{extra}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // where the job would have gone on, fio's empty next pass flushes again (`end_fsync`)
    let job = "[a]\nfilename=f\nrw=write\nbs=4k\nsize=32k\nfile_append=1\nloops=3\nend_fsync=1\nwrite_iolog=log\n";
    let (dir, _) = run_json_in_dir("append-flushes", job, &[]);
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    let count = |op: &str| log.lines().filter(|l| l.split(' ').nth(2) == Some(op)).count();
    assert_eq!((count("write"), count("sync")), (8, 2), "fio 3.33: 8 writes, 2 flushes\n{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `log_unix_epoch`: log times are Unix milliseconds; in simulation counted from the
/// report's time of day (here SOURCE_DATE_EPOCH), after the ramp, window by window.
#[test]
fn log_unix_epoch_counts_log_times_from_the_runs_time_of_day() {
    let dir = std::env::temp_dir().join(format!("nvsched-cli-unix-epoch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = "[e]\nrw=randread\nsize=64m\nruntime=50ms\ntime_based\nramp_time=20ms\nwrite_bw_log=e\nlog_avg_msec=10\nwrite_hist_log=e\nlog_hist_msec=10\n";
    let run = |extra: &str| {
        std::fs::write(dir.join("job.fio"), format!("{job}{extra}")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
            .args(["run", "job.fio", "-q"])
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stderr).unwrap()
    };
    let first_time = |name: &str| {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        text.lines().next().unwrap().split(", ").next().unwrap().to_string()
    };
    run("log_unix_epoch=1\n");
    // 1700000000 s, then the 20 ms ramp and the first 10 ms window
    assert_eq!(first_time("e_bw.1.log"), "1700000000030");
    assert_eq!(first_time("e_clat_hist.1.log"), "1700000000030");
    // log_alternate_epoch: CLOCK_REALTIME (the default id) is the same time of day; a
    // clock a simulation does not have counts from the run's start, with a warning
    run("log_alternate_epoch_clock_id=0\nlog_alternate_epoch=1\n");
    assert_eq!(first_time("e_bw.1.log"), "1700000000030");
    let warned = run("log_alternate_epoch=1\nlog_alternate_epoch_clock_id=1\nlog_unix_epoch=1\n");
    assert!(warned.contains("log_alternate_epoch_clock_id of job 'e' names a clock"), "{warned}");
    assert_eq!(first_time("e_bw.1.log"), "30");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn options_lists_and_explains_job_options() {
    let all = String::from_utf8(nvsched(&["options"]).stdout).unwrap();
    for o in nvsched::workload::OPTIONS {
        assert!(all.lines().any(|l| l.starts_with(&format!("{} ", o.name))), "{} not listed", o.name);
    }
    let one = nvsched(&["options", "readwrite"]);
    assert!(String::from_utf8(one.stdout).unwrap().starts_with("rw "), "an alias explains its option");
    let bad = nvsched(&["options", "iodepht"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8(bad.stderr).unwrap().contains("did you mean 'iodepth'"));
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["run", short_k2_mix().to_str().unwrap(), "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the reader is gone before the report is written (as with `| head` that has quit)
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "ends by SIGPIPE, as Unix tools do: {:?}", out.status);
}

/// fio's latency-target profiling: the job finds the deepest queue whose requests meet
/// the target, reports only the final window at that depth, and stops there.
#[test]
fn latency_target_settles_on_a_depth_and_reports_its_final_window() {
    let example = repo_root().join("examples/latency-target.fio");
    let (_, v) = run_json(&example, &[]);
    let job = &v["jobs"][0];
    let depth = job["latency_depth"].as_u64().unwrap();
    assert!((2..64).contains(&depth), "a depth between the extremes: {depth}");
    assert_eq!(
        (&job["latency_target"], &job["latency_window"], &job["latency_percentile"], &job["error"]),
        (&json!(150_000), &json!(50_000), &json!(99.0), &json!(0))
    );
    let read = &job["read"];
    let runtime_ms = read["runtime"].as_u64().unwrap();
    assert!((50..200).contains(&runtime_ms), "only the final window is reported, then the job ends: {runtime_ms} ms");
    let p99 = read["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap_or(0);
    let clat_p99 = read["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap();
    assert!(p99 == 0 && clat_p99 <= 155_000, "the final window meets the target: clat p99 {clat_p99} ns");
    // the full depth misses the target, and the search gave up bandwidth to meet it
    let text = std::fs::read_to_string(&example).unwrap();
    let full_depth: String = text.lines().filter(|l| !l.starts_with("latency_")).map(|l| format!("{l}\n")).collect();
    let (_, full) = run_json(&temp_job("latency-target-full.fio", &full_depth.replace("runtime=10", "runtime=1")), &[]);
    let full_read = &full["jobs"][0]["read"];
    assert!(full_read["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 150_000);
    assert!(full_read["iops"].as_f64().unwrap() > read["iops"].as_f64().unwrap());
    assert_eq!(full["jobs"][0]["latency_depth"], json!(64));
}

/// `max_latency`: a slower request fails the job with fio's ETIMEDOUT; the report still
/// comes out, then the run exits 1 naming the job and the request.
#[test]
fn max_latency_fails_the_job_as_fio_does() {
    let job = temp_job(
        "max-latency.fio",
        "[slow]\nrw=randread\nbs=4k\nsize=1g\nioengine=io_uring\niodepth=32\nmax_latency=50\ntime_based\nruntime=1\n\
         [fine]\nrw=randread\nbs=4k\nsize=1g\nioengine=psync\ntime_based\nruntime=100ms\n",
    );
    let out = nvsched(&["run", job.to_str().unwrap(), "--output-format=json,normal", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("job 'slow': latency of") && stderr.contains("exceeds specified max (50000 nsec)"),
        "{stderr}"
    );
    assert!(stderr.contains("1 job(s) failed: slow"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("slow: (groupid=0, jobs=1): err=110 (func=max latency exceeded, error=Connection timed out)")
    );
    assert!(stdout.contains("fine: (groupid=0, jobs=1): err= 0:"));
    // the normal output's header, the JSON, the normal output
    let json_start = stdout.find("\n{\n").unwrap() + 1;
    let json_end = stdout.find("\nslow: (groupid").unwrap();
    let v: Value = serde_json::from_str(&stdout[json_start..json_end]).unwrap();
    assert_eq!((&v["jobs"][0]["error"], &v["jobs"][1]["error"]), (&json!(110), &json!(0)));
    let slow_ms = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!(slow_ms < 100, "the failed job stopped early: {slow_ms} ms");
}

/// `unlink=1`: a reader that starts after the job that removed its file fails to open it
/// (ENOENT) and does nothing; as in fio 3.33, its job is left out of the normal output
/// (fio shows no job that moved no data), kept in the JSON with error 2, and the run
/// exits 1 naming it.
#[test]
fn a_reader_of_a_file_an_earlier_job_unlinked_fails_as_in_fio() {
    let job = temp_job(
        "unlink.fio",
        "[global]\nfilename=unlinked-file\nsize=64m\nbs=1m\ndirect=1\n[w]\nrw=write\nunlink=1\n[r]\nstonewall\nrw=read\n",
    );
    let out = nvsched(&["run", job.to_str().unwrap(), "--output-format=json,normal", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("job 'r': open(unlinked-file): No such file or directory"), "{stderr}");
    assert!(stderr.contains("1 job(s) failed: r"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("w: (groupid=0, jobs=1): err= 0:"));
    assert!(!stdout.contains("r: (groupid=1"), "{stdout}");
    assert!(stdout.contains("Run status group 1 (all jobs):\n"));
    let json_start = stdout.find("\n{\n").unwrap() + 1;
    let json_end = stdout.find("\nw: (groupid").unwrap();
    let v: Value = serde_json::from_str(&stdout[json_start..json_end]).unwrap();
    assert_eq!((&v["jobs"][1]["jobname"], &v["jobs"][1]["error"]), (&json!("r"), &json!(2)));
    assert_eq!(v["jobs"][1]["read"]["total_ios"], json!(0));
}

/// fio's steady-state detection: a full drive's random writes end once GC has set a
/// steady pace (the SLC burst before it is not steady), and the report carries fio's
/// `steadystate` object with the samples judged.
#[test]
fn steady_state_ends_a_job_once_its_iops_hold() {
    let (_, v) = run_json(&repo_root().join("examples/steady-state.fio"), &[]);
    let job = &v["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!((&ss["ss"], &ss["duration"], &ss["attained"]), (&json!("iops:10.000000%"), &json!(10), &json!(1)));
    let iops: Vec<f64> = ss["data"]["iops"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(iops.len(), 10);
    let mean = iops.iter().sum::<f64>() / 10.0;
    assert!(iops.iter().all(|x| (x - mean).abs() < 0.1 * mean), "{iops:?}");
    let runtime_ms = job["write"]["runtime"].as_u64().unwrap();
    assert!((11_000..60_000).contains(&runtime_ms), "stopped long before its 600 s, after a burst: {runtime_ms} ms");
    assert!(job["write"]["iops"].as_f64().unwrap() > 2.0 * mean, "the SLC burst ran faster than the steady state");
    // with group_reporting one detector judges the group's sum, and both jobs stop together
    let text = "[global]\nrw=randread\nbs=4k\nsize=1g\nioengine=io_uring\niodepth=2\ntime_based\nruntime=60\n\
                group_reporting\nss=iops:5%\nss_dur=3s\nss_ramp=1s\n[a]\nrate_iops=1000\n[b]\nrate_iops=500\n";
    let (_, v) = run_json(&temp_job("steady-group.fio", text), &[]);
    let group = &v["jobs"][0];
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&group["steadystate"]["attained"], &group["steadystate"]["data"]["iops"]),
        (&json!(1), &json!([1500, 1500, 1500]))
    );
    assert_eq!(group["read"]["runtime"], json!(5000), "ss_ramp 1 s, one more second, three samples");
    let text = text.replace("[b]\nrate_iops=500\n", "[b]\nrate_iops=500\nss=bw:5%\n");
    let out = nvsched(&["run", temp_job("steady-mismatch.fio", &text).to_str().unwrap(), "-q"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("steadystate options must be the same"), "{out:?}");
}

/// `rate_min`/`rate_iops_min`: a job slower than its minimum over a `rate_cycle` fails
/// with fio's EIO after 2 s to settle; fio 3.33 on the null engine fails the same job
/// after 3001 ms and 301 reads with the same message.
#[test]
fn rate_min_fails_a_job_that_is_too_slow_as_fio_does() {
    let text = "[a]\nioengine=io_uring\nsize=1g\nrw=randread\ntime_based\nruntime=6\nrate_iops=100\nrate_min=1m\n";
    // a device with fixed service times, as fio's null engine has
    let out = nvsched(&[
        "run",
        temp_job("rate-min.fio", text).to_str().unwrap(),
        "--device=simple-nvme",
        "--output-format=json",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("job 'a': rate_min=1048576B/s not met, got 409600B/s: err=5 (check_min_rate)"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(
        (&job["error"], &job["read"]["runtime"], &job["read"]["total_ios"]),
        (&json!(5), &json!(3000), &json!(301))
    );
    // a minimum it can meet passes
    let (_, v) = run_json(&temp_job("rate-min-met.fio", &text.replace("rate_min=1m", "rate_iops_min=90")), &[]);
    assert_eq!(v["jobs"][0]["error"], json!(0));
    let out = nvsched(&[
        "run",
        temp_job("rate-min-bad.fio", &text.replace("rate_min=1m", "rate_iops_min=200")).to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("rate-min-bad.fio:8: option 'rate_iops_min'"), "{out:?}");
}

/// Jobs given as fio's command-line options after `--` run as the same job file does;
/// errors name the option by its position.
#[test]
fn jobs_on_the_command_line_run_as_their_job_file() {
    let file = temp_job(
        "cmdline-twin.fio",
        "[global]\nrw=randread\nsize=1g\nioengine=io_uring\nruntime=200ms\ntime_based\n[a]\niodepth=32\n[b]\nbs=8k\n",
    );
    let (_, from_file) = run_json(&file, &[]);
    let args = [
        "run",
        "--output-format=json",
        "-q",
        "--",
        "--rw=randread",
        "--size=1g",
        "--ioengine=io_uring",
        "--runtime=200ms",
        "--time_based",
        "--name=a",
        "--iodepth=32",
        "--name=b",
        "--bs=8k",
    ];
    let out = nvsched(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let from_args: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_file["jobs"], from_args["jobs"]);
    // a fio command line as it is, without `--`, `--key value` too, mixed with run's flags
    let fio_style = [
        "run",
        "--rw=randread",
        "--size",
        "1g",
        "--output-format=json",
        "--ioengine",
        "io_uring",
        "--runtime=200ms",
        "--time_based",
        "--name=a",
        "--iodepth",
        "32",
        "-q",
        "--name",
        "b",
        "--bs=8k",
    ];
    let out = nvsched(&fio_style);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let from_fio_style: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_file["jobs"], from_fio_style["jobs"]);
    // fio's own flags: --readonly refuses writing jobs, --minimal is terse, --eta is ignored
    let out = nvsched(&["run", "--name=w", "--rw=randwrite", "--size=1m", "--readonly"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--readonly forbids"), "{out:?}");
    let out = nvsched(&["run", "--name=r", "--rw=randread", "--size=1m", "--readonly", "--minimal", "--eta=never"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("3;nvsched-"), "{out:?}");
    let out = nvsched(&["run", "--", "--name=a", "--iodepht=3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("option 2 after --: option 'iodepht'"), "{stderr}");
    let out = nvsched(&["run", "--", "--rw=read"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("start one with --name=NAME"), "{out:?}");
    // after an explicit --, run's own flags are named as such, not taken as job options
    let out = nvsched(&["run", "--", "--name=a", "--size=1m", "--engine", "uring"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("option 3 after --: '--engine' is a flag of nvsched run"), "{stderr}");
}

/// `iodepth_low`: a full queue drains to the low mark before it is filled again, so the
/// depths at submission are spread as fio 3.33 reports them for the same job on a file
/// (4=25.0%, 8=66.7%, 16=8.3%); `iodepth_batch_complete_min` likewise.
#[test]
fn iodepth_low_spreads_submission_depths_as_fio_does() {
    let text = "[a]\nioengine=libaio\niodepth=16\niodepth_low=4\nsize=512m\nrw=randread\ntime_based\nruntime=200ms\n";
    let (_, v) = run_json(&temp_job("iodepth-low.fio", text), &[]);
    let levels = &v["jobs"][0]["iodepth_level"];
    let pct = |k: &str| levels[k].as_f64().unwrap();
    assert!(
        (pct("4") - 25.0).abs() < 0.1 && (pct("8") - 66.7).abs() < 0.1 && (pct("16") - 8.3).abs() < 0.1,
        "{levels}"
    );
    let (_, v) = run_json(&temp_job("iodepth-full.fio", &text.replace("iodepth_low=4\n", "")), &[]);
    assert!(v["jobs"][0]["iodepth_level"]["16"].as_f64().unwrap() > 99.0);
    // iodepth_batch_complete_min=6: fio 3.33 on a file reports depths 8=83.3%, 16=16.7%
    // and reaps completions 5-8 at a time (its "8" bucket) 100.0% of the time
    let batch = text.replace("iodepth_low=4", "iodepth_batch_complete_min=6");
    let (_, v) = run_json(&temp_job("iodepth-batch.fio", &batch), &[]);
    let job = &v["jobs"][0];
    let level = |k: &str| job["iodepth_level"][k].as_f64().unwrap();
    assert!((level("8") - 83.3).abs() < 0.1 && (level("16") - 16.7).abs() < 0.1, "{}", job["iodepth_level"]);
    assert!(job["iodepth_complete"]["8"].as_f64().unwrap() > 99.0, "{}", job["iodepth_complete"]);
}

/// `verify`: the job reads back what it wrote once its writes are done, at its depth and
/// through the policy, and the reads count as the job's, as fio 3.33 reports them (read
/// 256 I/Os of 1 MiB after writing 1 MiB in 4 KiB blocks). The simulator reads; only the
/// io_uring engine checks what it reads.
#[test]
fn verify_reads_back_what_the_job_wrote_in_simulation_too() {
    let text = "[v]\nioengine=io_uring\niodepth=4\nsize=1m\nrw=write\nbs=4k\nverify=crc32c\n";
    let (_, v) = run_json(&temp_job("verify-sim.fio", text), &[]);
    let job = &v["jobs"][0];
    assert_eq!((&job["read"]["total_ios"], &job["read"]["io_bytes"]), (&256.into(), &(1u64 << 20).into()), "{job}");
    assert_eq!(job["write"]["total_ios"], 256);
    let (_, v) = run_json(&temp_job("verify-sim-off.fio", &format!("{text}do_verify=0\n")), &[]);
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 0);
    // fio times the writes over the write phase and the reads over the read-back, not
    // both over the whole job (fio 3.33, 4 MiB on a real disk: 112 and 101 of 214 ms)
    let (_, v) = run_json(&temp_job("verify-sim-time.fio", &text.replace("size=1m", "size=64m")), &[]);
    let job = &v["jobs"][0];
    let ms = |d: &str| job[d]["runtime"].as_u64().unwrap();
    let whole = job["job_runtime"].as_u64().unwrap();
    assert!(ms("read") > 10 && ms("write") > 10 && ms("read").abs_diff(whole - ms("write")) <= 1, "{job}");
    let rate = |d: &str| job[d]["io_bytes"].as_f64().unwrap() * 1000.0 / ms(d) as f64;
    assert!((job["write"]["bw_bytes"].as_f64().unwrap() / rate("write") - 1.0).abs() < 0.02, "{job}");
}

/// `serialize_overlap`: writes to a file of four blocks at depth 16 overlap at once, unless
/// an overlapping write waits; then no more than four are ever out.
#[test]
fn serialize_overlap_holds_back_writes_to_blocks_in_flight() {
    let text = "[a]\nioengine=io_uring\niodepth=16\nsize=16k\nrw=randwrite\nnorandommap\ntime_based\nruntime=50ms\n";
    let depths = |text: &str, name: &str| {
        let (_, v) = run_json(&temp_job(name, text), &[]);
        let level = |k: &str| v["jobs"][0]["iodepth_level"][k].as_f64().unwrap();
        (level("4"), level("8") + level("16") + level("32") + level(">=64"), v["jobs"][0]["write"]["total_ios"].clone())
    };
    let (_, deep, ios) = depths(text, "overlap-free.fio");
    assert!(deep > 90.0, "without serialize_overlap the queue is full ({deep}% at 8 or more)");
    assert!(ios.as_u64().unwrap() > 0);
    let (four, deep, ios) = depths(&format!("{text}serialize_overlap=1\n"), "overlap-serial.fio");
    assert_eq!(deep, 0.0, "at most one write per block is out");
    assert!(four > 0.0 && ios.as_u64().unwrap() > 0);
}

/// `thinktime_iotime`, `thinktime_blocks` and `rate_ignore_thinktime` against fio 3.33 on
/// its null engine (rate_iops=1000): a 500 ms pause every 100 I/Os over 3 s gives 600
/// I/Os, or 505 when pacing does not catch up after a pause; 20 ms pauses after each
/// 80 ms of issuing over 2 s give 2000 I/Os (pacing catches up), or 1639 without catching
/// up.
#[test]
fn thinktime_options_pace_a_rated_job_as_fio_does() {
    let base = "[a]\nioengine=null\nsize=1g\nrw=randread\nrate_iops=1000\ntime_based\n";
    let ios = |name: &str, extra: &str| -> u64 {
        let (_, v) = run_json(&temp_job(name, &format!("{base}{extra}")), &[]);
        v["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
    };
    let blocks = "runtime=3\nthinktime=500ms\nthinktime_blocks=100\n";
    assert_eq!(ios("think-blocks.fio", blocks), 600);
    assert_eq!(ios("think-blocks-ignore.fio", &format!("{blocks}rate_ignore_thinktime=1\n")), 505);
    let iotime = "runtime=2\nthinktime=20ms\nthinktime_iotime=80ms\n";
    assert_eq!(ios("think-iotime.fio", iotime), 2000);
    let ignoring = ios("think-iotime-ignore.fio", &format!("{iotime}rate_ignore_thinktime=1\n"));
    assert!((1639.0 - ignoring as f64).abs() < 0.02 * 1639.0, "{ignoring}");
}

/// `--section` runs only the named job sections (with the `[global]` options), as fio's
/// does; `--parse-only` checks a job file without running it.
#[test]
fn section_picks_jobs_and_parse_only_checks_without_running() {
    let file = temp_job(
        "sections.fio",
        "[global]\nsize=1g\nruntime=50ms\ntime_based\n[light]\nrw=randread\n[heavy]\nrw=randread\niodepth=8\nioengine=libaio\n[w]\nrw=randwrite\n",
    );
    let (_, v) = run_json(&file, &["--section", "heavy", "--section", "w"]);
    let names: Vec<&str> = v["jobs"].as_array().unwrap().iter().map(|j| j["jobname"].as_str().unwrap()).collect();
    assert_eq!(names, ["heavy", "w"]);
    let out = nvsched(&["run", file.to_str().unwrap(), "--section", "medium"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--section medium: there is no job section of that name (jobs: light, heavy, w)"));
    let out = nvsched(&["run", file.to_str().unwrap(), "--parse-only"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 job(s), 3 clone(s): parsed"));
    let bad = temp_job("sections-bad.fio", "[a]\nrw=randread\niodepht=4\n");
    let out = nvsched(&["run", bad.to_str().unwrap(), "--parse-only"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sections-bad.fio:3: option 'iodepht'"));
}

/// Bandwidth and IOPS samples: one per `bwavgtime`/`iopsavgtime` window that ends before
/// the job does, as fio 3.33 reports for the same job on its null engine (3 s: 5 and 5
/// at the default 500 ms; 11 at 250 ms, 2 at 1 s). Jobs reported together must agree.
#[test]
fn bandwidth_samples_follow_bwavgtime_and_iopsavgtime_as_in_fio() {
    let base = "[a]\nioengine=null\nsize=1g\nrw=randread\nrate_iops=1000\nruntime=3\ntime_based\n";
    let samples = |name: &str, text: &str| {
        let (_, v) = run_json(&temp_job(name, text), &[]);
        let r = &v["jobs"][0]["read"];
        (r["bw_samples"].as_u64().unwrap(), r["iops_samples"].as_u64().unwrap(), r["iops_mean"].as_f64().unwrap())
    };
    assert_eq!(samples("avg-default.fio", base), (5, 5, 1000.0));
    assert_eq!(samples("avg-set.fio", &format!("{base}bwavgtime=250\niopsavgtime=1000\n")), (11, 2, 1000.0));
    // a busy queue: the last I/Os complete after the 3 s, and fio takes no sample then
    let busy =
        samples("avg-busy.fio", "[a]\nioengine=libaio\niodepth=32\nsize=64m\nrw=randread\nruntime=3\ntime_based\n");
    assert_eq!((busy.0, busy.1), (5, 5));
    let out = nvsched(&[
        "run",
        temp_job("avg-group.fio", &format!("[global]\ngroup_reporting\n{}[a]\n[b]\nbwavgtime=100\n", &base[4..]))
            .to_str()
            .unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("avg-group.fio:11: option 'bwavgtime'") && stderr.contains("must agree"), "{stderr}");
}

/// `write_hist_log` writes fio's histogram log: `time, direction, bs` and 1856 bucket
/// counts per line, one line per `log_hist_msec`; together the lines hold the run's
/// completions up to the last interval.
#[test]
fn hist_log_has_fios_columns_and_the_runs_completions() {
    let job = "[h]\nrw=randread\nsize=64m\nioengine=io_uring\niodepth=4\nruntime=210ms\ntime_based\nwrite_hist_log\nlog_hist_msec=50\n";
    let (dir, v) = run_json_in_dir("hist", job, &[]);
    let text = std::fs::read_to_string(dir.join("h_clat_hist.1.log")).unwrap();
    let rows: Vec<Vec<u64>> = text.lines().map(|l| l.split(", ").map(|f| f.parse().unwrap()).collect()).collect();
    let times: Vec<u64> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(times, [50, 100, 150, 200]);
    assert!(rows.iter().all(|r| r.len() == 1859 && r[1] == 0 && r[2] == 4096));
    let logged: u64 = rows.iter().map(|r| r[3..].iter().sum::<u64>()).sum();
    let total = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(logged <= total && logged as f64 > 0.9 * total as f64, "{logged} of {total}");
    let out =
        nvsched(&["run", temp_job("hist-no-msec.fio", "[h]\nrw=read\nsize=1m\nwrite_hist_log\n").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("write_hist_log needs log_hist_msec"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `exitall_on_error`: a job that fails stops every running job, and the next stonewall
/// group still runs, as fio 3.33 does (a `max_latency=1` job at QD32 failed at once; the
/// job beside it stopped with 0 I/Os, the stonewalled one ran its second).
#[test]
fn exitall_on_error_stops_the_running_jobs_when_one_fails() {
    let text = "[global]\nsize=1g\nbs=4k\nrw=randread\n\
                [slow]\nioengine=io_uring\niodepth=32\nmax_latency=1\nexitall_on_error\nruntime=2\ntime_based\n\
                [fine]\nioengine=psync\nruntime=2\ntime_based\n\
                [later]\nstonewall\nioengine=psync\nruntime=100ms\ntime_based\n";
    let out = nvsched(&["run", temp_job("exitall-on-error.fio", text).to_str().unwrap(), "--output-format=json", "-q"]);
    assert_eq!(out.status.code(), Some(1), "a job failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runtime_ms = |i: usize| v["jobs"][i]["job_runtime"].as_u64().unwrap();
    assert_eq!(v["jobs"][0]["error"], json!(110));
    assert!(runtime_ms(1) < 10, "'fine' stopped with 'slow': {} ms", runtime_ms(1));
    assert_eq!(runtime_ms(2), 100, "the next stonewall group ran");
    // without the option the other job runs its time
    let (_, v) = {
        let out = nvsched(&[
            "run",
            temp_job("exitall-on-error-off.fio", &text.replace("exitall_on_error\n", "")).to_str().unwrap(),
            "--output-format=json",
            "-q",
        ]);
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    assert_eq!(v["jobs"][1]["job_runtime"], json!(2000));
}

/// `examples/rt-bursts.fio` as docs/job-files.md shows it: under `k2:bound=8` the bursty
/// real-time reader gets the 4000 IOPS it asks for 80% of the time; `flow` keeps the
/// background jobs at 3:1 I/Os; the reader's histogram log has a line per second.
#[test]
fn rt_bursts_example_runs_as_the_readme_says() {
    let text = std::fs::read_to_string(repo_root().join("examples/rt-bursts.fio")).unwrap();
    let (dir, v) = run_json_in_dir("rt-bursts", &text, &["--sched", "k2:bound=8"]);
    let ios = |job: usize, dir: &str| v["jobs"][job][dir]["total_ios"].as_f64().unwrap();
    let rt_iops = ios(0, "read") / 5.0;
    assert!((rt_iops - 3200.0).abs() < 32.0, "{rt_iops}");
    assert!((ios(1, "write") / ios(2, "read") - 3.0).abs() < 0.01);
    let hist = std::fs::read_to_string(dir.join("rt_clat_hist.1.log")).unwrap();
    assert!(hist.lines().count() >= 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// fio's `elapsed` is the whole run's length in seconds, rounded up, the same in every
/// job: ramp time and earlier stonewall groups count.
#[test]
fn elapsed_is_the_whole_runs_length_in_every_job() {
    let text =
        "[global]\nsize=1g\nrw=randread\ntime_based\n[a]\nramp_time=1\nruntime=1500ms\n[b]\nstonewall\nruntime=1\n";
    let (_, v) = run_json(&temp_job("elapsed.fio", text), &[]);
    let elapsed: Vec<u64> = v["jobs"].as_array().unwrap().iter().map(|j| j["elapsed"].as_u64().unwrap()).collect();
    assert_eq!(elapsed, [4, 4], "1 s ramp + 1.5 s + 1 s, rounded up");
}

/// `stats=0`: the job runs (its writes fill the drive for the next group) but the report
/// leaves it out, as fio 3.33 does; a run of such jobs alone reports no jobs.
#[test]
fn stats_off_runs_a_job_but_leaves_it_out_of_the_report() {
    let text =
        "[global]\nsize=64m\n[fill]\nrw=write\nstats=0\n[test]\nstonewall\nrw=randread\nruntime=100ms\ntime_based\n";
    let (_, v) = run_json(&temp_job("stats-off.fio", text), &[]);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!((&jobs[0]["jobname"], &jobs[0]["groupid"]), (&json!("test"), &json!(1)));
    assert!(v["disk_util"][0]["write_ios"].as_u64().unwrap() >= 64 * 256, "the fill ran: {}", v["disk_util"]);
    let out =
        nvsched(&["run", temp_job("stats-off-only.fio", "[fill]\nsize=1m\nrw=write\nstats=0\n").to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
}

/// `nvsched sweep`: one workload under several policies, per job; K2's bound shortens the
/// real-time tail that `none` leaves; several seeds give means and ranges; the JSON is
/// deterministic; a bad policy is named before anything runs.
#[test]
fn sweep_compares_policies_job_by_job() {
    let job = short_k2_mix();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", job.to_str().unwrap(), "--sched", "none", "--sched", "k2:bound=4", "-q"];
        args.extend_from_slice(extra);
        stdout_of(&args)
    };
    let text = sweep(&["--output-format", "json"]);
    assert_eq!(text, sweep(&["--output-format", "json"]), "same inputs, same JSON");
    let v: Value = serde_json::from_str(&text).unwrap();
    let policies = v["nvsched_sweep"]["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 2);
    let rt_tail = |p: usize| policies[p]["jobs"][0]["clat_p999_us"].as_f64().unwrap();
    assert_eq!(policies[0]["jobs"][0]["job"], json!("rt"));
    assert_eq!(policies[0]["jobs"].as_array().unwrap().len(), 4, "rt and three best-effort clones");
    assert_eq!(policies[0]["jobs"][3]["job"], json!("be#2"));
    assert!(rt_tail(1) < rt_tail(0) / 2.0, "k2:bound=4 {} vs none {}", rt_tail(1), rt_tail(0));
    let total = |p: usize| policies[p]["total_bw_mbps"].as_f64().unwrap();
    let sum: f64 = policies[0]["jobs"].as_array().unwrap().iter().map(|j| j["bw_mbps"].as_f64().unwrap()).sum();
    assert!((total(0) - sum).abs() < 1e-6 && total(1) < total(0));

    let plots = std::env::temp_dir().join(format!("nvsched-sweep-plot-{}", std::process::id()));
    let table = sweep(&["--seeds", "1-2", "--plot", plots.to_str().unwrap()]);
    assert!(table.contains("p99.9 range (us)"), "{table}");
    assert!(plots.join("sweep.png").is_file() && plots.join("sweep.svg").is_file());
    std::fs::remove_dir_all(&plots).unwrap();
    assert!(table.lines().any(|l| l.starts_with("k2:bound=4") && l.contains(" rt ")), "{table}");

    let out = nvsched(&["sweep", job.to_str().unwrap(), "--sched", "none", "--sched", "k2:bond=4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--sched k2:bond=4") && err.contains("'bond'"), "{err}");
    assert!(!err.contains("runs"), "refused before running: {err}");
}

/// `--job-set KEY=VALUE` changes every job of the file as if written last in each: the
/// same report as the edited file, in `run`, `sweep` (also on a reproduction's cell) and
/// `tune`; a bad one is an error naming it before anything runs.
#[test]
fn job_set_changes_every_job_as_the_edited_file_would() {
    let k2_mix = repo_root().join("examples/k2-mix.fio");
    let edited = short_k2_mix(); // runtime=1 instead of 10
    let report = |job: &Path, extra: &[&str]| {
        let mut args = vec!["run", job.to_str().unwrap(), "-q", "--output-format", "json"];
        args.extend_from_slice(extra);
        let mut v: Value = serde_json::from_str(&stdout_of(&args)).unwrap();
        // the options as written differ: the edited file's [global] says runtime=1, where
        // --job-set keeps runtime=10 there and adds runtime=1 to each job
        let set_in_job = |job: &Value| job["job options"]["runtime"] == json!("1");
        let global_runtime = v["global options"]["runtime"].clone();
        assert!(v["jobs"].as_array().unwrap().iter().all(|j| set_in_job(j) != (global_runtime == json!("1"))), "{v}");
        for job in v["jobs"].as_array_mut().unwrap() {
            job["job options"] = json!(null);
        }
        v["global options"] = json!(null);
        v["time"] = json!(null);
        v["timestamp"] = json!(null);
        v["timestamp_ms"] = json!(null);
        v
    };
    assert_eq!(report(&k2_mix, &["--job-set", "runtime=1"]), report(&edited, &[]));
    let v = report(&k2_mix, &["--job-set", "runtime=1", "--job-set", "size=1g"]);
    assert!(v["jobs"].as_array().unwrap().iter().all(|j| j["job_runtime"] == json!(1000)), "{v}");
    let sweep = |job: &Path, extra: &[&str]| {
        let mut args = vec!["sweep", job.to_str().unwrap(), "--sched", "k2:bound=2", "-q"];
        args.extend_from_slice(extra);
        stdout_of(&args)
    };
    assert_eq!(sweep(&k2_mix, &["--job-set", "runtime=1"]), sweep(&edited, &[]));
    let tune = |job: &Path, extra: &[&str]| {
        let mut args =
            vec!["tune", "k2", "--objective", "latency:50%", job.to_str().unwrap(), "--bounds", "2,16", "-q"];
        args.extend_from_slice(extra);
        stdout_of(&args)
    };
    assert_eq!(tune(&k2_mix, &["--job-set", "runtime=1"]), tune(&edited, &[]));
    // on a reproduction's cell: its runtime comes from the manifest, --job-set wins
    let cell = stdout_of(&[
        "sweep",
        "--experiment",
        "k2-analysis:read",
        "--sched",
        "none",
        "--job-set",
        "runtime=200ms",
        "-q",
        "--output-format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&cell).unwrap();
    let iops = v["nvsched_sweep"]["policies"][0]["jobs"][0]["iops"].as_f64().unwrap();
    assert!(iops > 0.0, "{v}");
    for (args, expected) in [
        (
            vec!["run", k2_mix.to_str().unwrap(), "--job-set", "runtime=soon"],
            "--job-set runtime=soon: option 'runtime': ",
        ),
        (vec!["sweep", k2_mix.to_str().unwrap(), "--job-set", "nosuch=1"], "--job-set nosuch=1: option 'nosuch': "),
        (
            vec!["tune", "k2", "--objective", "latency:50%", "--job-set", "[x]"],
            "--job-set [x]: expected one job option",
        ),
    ] {
        let out = nvsched(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("sweeping") && !err.contains("runs"), "refused before running: {err}");
    }
}

/// `--center` picks how the seeds' runs make one figure: the mean by default in simulation,
/// the median on request, each of the single-seed runs' figures.
#[test]
fn sweep_center_is_the_mean_or_median_of_the_single_seed_runs() {
    let job = short_k2_mix();
    let rt_tail = |extra: &[&str]| {
        let mut args = vec!["sweep", job.to_str().unwrap(), "--sched", "k2:bound=8", "-q", "--output-format", "json"];
        args.extend_from_slice(extra);
        let v: Value = serde_json::from_str(&stdout_of(&args)).unwrap();
        let center = v["nvsched_sweep"]["center"].as_str().unwrap().to_string();
        (v["nvsched_sweep"]["policies"][0]["jobs"][0]["clat_p999_us"].as_f64().unwrap(), center)
    };
    let mut single: Vec<f64> = ["1", "2", "4"].iter().map(|s| rt_tail(&["--seed", s]).0).collect();
    single.sort_by(f64::total_cmp);
    assert!(single[0] < single[2], "the seeds differ: {single:?}");
    let mean = single.iter().sum::<f64>() / 3.0;
    let (by_default, name) = rt_tail(&["--seeds", "1,2,4"]);
    assert!((by_default - mean).abs() < 1e-9 && name == "mean", "{by_default} {name} vs {single:?}");
    assert_eq!(rt_tail(&["--seeds", "1,2,4", "--center", "mean"]), (by_default, name));
    assert_eq!(rt_tail(&["--seeds", "1,2,4", "--center", "median"]), (single[1], "median".to_string()));
    let out = nvsched(&["sweep", job.to_str().unwrap(), "--center", "mode"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("'mode': expected mean or median"));
}

/// `tune` with no job file sweeps the K2 example from any working directory, as `repro`
/// finds its experiments.
#[test]
fn tune_without_a_job_file_works_outside_the_repository() {
    let dir = std::env::temp_dir().join(format!("nvsched-cli-tune-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["tune", "k2", "--objective", "bandwidth:50%", "--bounds", "64", "-q"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Use: --sched k2:bound=64"), "{text}");
}

/// Several formats come out in fio 3.33's order whatever the order asked (the normal
/// output's header, terse, JSON, normal), and json with json+ is one JSON document.
/// fio 3.33 with `--output-format=normal,json,terse` on a null job prints the same order.
#[test]
fn formats_come_out_in_fios_order() {
    let run = |formats: &str| {
        let out = nvsched(&["run", "-q", "--output-format", formats, "--name=a", "--size=64k", "--ioengine=null"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("normal,json,terse");
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle:?} in {text}"));
    let order = [
        at("a: (g=0): rw=read, bs=(R) 4096B-4096B"),
        at("\nStarting 1 process\n"),
        at("\n3;nvsched-"),
        at("\n{\n"),
        // the normal output opens with an empty line, as fio's does
        at("}\n\na: (groupid=0, jobs=1)"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{text}");
    let both = run("json,json+");
    assert_eq!(both.matches("\"fio version\"").count(), 1, "{both}");
    assert!(both.contains("\"bins\""), "json+ wins");
    assert!(!run("json").contains("Starting"), "the header belongs to the normal output");
}

/// fio 3.33 opens every "Run status group" block with an empty line, the second as well
/// as the first (its output for `new_group` jobs).
#[test]
fn each_run_status_group_follows_an_empty_line() {
    let out = nvsched(&[
        "run",
        "-q",
        "--name=a",
        "--size=64k",
        "--ioengine=null",
        "--name=b",
        "--size=64k",
        "--ioengine=null",
        "--new_group",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for g in 0..2 {
        assert!(text.contains(&format!("\n\nRun status group {g} (all jobs):\n")), "{text}");
    }
}

/// fsync latencies get fio's percentile block, after the latency rows, whatever
/// clat_percentiles says; the JSON's sync entry has percentiles where the job shows clat
/// or lat percentiles (fio 3.33 on the same jobs).
#[test]
fn sync_latencies_get_percentiles_as_in_fio() {
    let job = "[a]\nrw=randwrite\nsize=4m\nfsync=4\nioengine=psync\n";
    let (_, v) = run_json(&temp_job("sync-pct.fio", job), &[]);
    let sync = &v["jobs"][0]["sync"]["lat_ns"];
    assert!(sync["percentile"]["99.000000"].as_u64().unwrap() > 0, "{sync}");
    let quiet = format!("{job}clat_percentiles=0\npercentile_list=50:99\n");
    let (_, v) = run_json(&temp_job("sync-pct-off.fio", &quiet), &[]);
    assert!(v["jobs"][0]["sync"]["lat_ns"].get("percentile").is_none(), "{}", v["jobs"][0]["sync"]);
    let out = nvsched(&["run", "-q", temp_job("sync-pct-off2.fio", &quiet).to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let (rows, sync_block) = (text.find("  lat (").unwrap(), text.find("  fsync/fdatasync/sync_file_range:").unwrap());
    assert!(rows < sync_block, "{text}");
    assert!(text[sync_block..].contains("    sync percentiles (") && text.contains("|  50th=["), "{text}");
}

#[test]
fn trace_summarizes_a_block_trace_as_read_iolog_reads_it() {
    let web = "examples/traces/websearch-60s.disksim.trace";
    let out = nvsched(&["trace", web]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("{web}: disksim trace, 24783 requests over 60.055 s (413 IOPS")), "{text}");
    assert!(text.contains("  write          4 (  0.0%)  32.0KiB, mean 8.0KiB; sizes 8KiB 100%"), "{text}");
    assert!(text.contains("  devices: 6"), "{text}");
    let out = nvsched(&["trace", web, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["records"].as_u64(), v["devices"].as_array().map(Vec::len)), (Some(24_783), Some(6)));
    let requests: Vec<u64> =
        v["directions"].as_array().unwrap().iter().map(|d| d["requests"].as_u64().unwrap()).collect();
    assert_eq!(requests, [24_779, 4], "reads and writes; no trims or flushes");
    assert_eq!(v["directions"][0]["common_sizes"][0]["bytes"], 8192);

    let out = nvsched(&["trace", "no-such.trace"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such.trace: cannot read trace"), "{out:?}");
    let out = nvsched(&["trace", web, "--format", "csv"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format: 'csv' is not a trace format"), "{out:?}");
}

#[test]
fn trace_to_iolog_writes_what_replays_the_same() {
    let web = repo_root().join("examples/traces/websearch-60s.disksim.trace");
    let dir = std::env::temp_dir().join(format!("nvsched-to-iolog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let iolog = dir.join("web.iolog");
    let _ = std::fs::remove_file(&iolog);
    let convert = |extra: &[&str]| {
        let mut args = vec!["trace", web.to_str().unwrap(), "--to-iolog", iolog.to_str().unwrap()];
        args.extend_from_slice(extra);
        nvsched(&args)
    };
    assert!(convert(&[]).status.success());
    let text = std::fs::read_to_string(&iolog).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n0 trace-dev-0 add\n"), "{}", &text[..200]);
    assert!(text.contains("\n0 trace-dev-0 read 336756736 8192\n152 trace-dev-1 read 15997329408 32768\n"));
    assert_eq!(text.lines().count(), 1 + 6 + 6 + 24_783 + 6, "header, add and open per device, requests, close");
    // an existing file needs --force; names must match the devices
    let out = convert(&[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists; --force overwrites it"), "{out:?}");
    let out = convert(&["--force", "--file", "a", "--file", "b"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--file: 2 names for the trace's 6 devices"), "{out:?}");
    assert!(convert(&["--force"]).status.success());

    // the iolog replays as the trace does
    let replay = |trace: &Path| {
        let job = dir.join("replay.fio");
        std::fs::write(&job, format!("[web]\nread_iolog={}\nioengine=libaio\niodepth=16\n", trace.display())).unwrap();
        let out = nvsched(&["run", job.to_str().unwrap(), "--output-format=json", "-q"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["jobs"][0].clone()
    };
    let (from_iolog, from_trace) = (replay(&iolog), replay(&web));
    for key in ["read", "write", "job_runtime", "iodepth_level"] {
        assert_eq!(from_iolog[key], from_trace[key], "{key}");
    }
}

/// fio 3.33 with `unit_base=1` prints the job line, the steady-state line and the group
/// line's bandwidth in bits per second, and the rest in bytes.
#[test]
fn unit_base_1_prints_bandwidth_in_bits() {
    let out = nvsched(&[
        "run",
        "--",
        "--name=r",
        "--rw=randread",
        "--size=1m",
        "--time_based",
        "--runtime=3s",
        "--ss=iops_slope:50%",
        "--ss_dur=2",
        "--unit_base=1",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |start: &str| text.lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_default().to_string();
    assert!(line("read: IOPS=").contains("bit/s ("), "{text}");
    assert!(line("steadystate  : attained=yes, bw=").contains("bit/s ("), "{text}");
    assert!(line("READ: bw=").contains("bit/s), ") && line("READ: bw=").contains("io="), "{text}");
    assert!(line("bw (").contains("B/s): min="), "samples stay in bytes: {text}");
}

#[test]
fn the_run_summary_says_what_the_page_cache_did() {
    let job = temp_job(
        "page-cache-summary.fio",
        "[w]\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=512\nsize=1m\nnumber_ios=100\nsync_file_range=write:10\n",
    );
    let job = job.to_str().unwrap();
    let args = ["run", job, "--page-cache", "64m", "--device", "simple-nvme"];
    let normal = String::from_utf8(nvsched(&args).stdout).unwrap();
    let line = normal.lines().find(|l| l.starts_with("  page cache: ")).expect("a page cache line");
    let out = nvsched(&[&args[..], &["--output-format", "json"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let counters = &v["nvsched"]["engine_counters"]["page_cache"];
    // the summary shows the JSON's counters, by the same names
    for (name, value) in counters.as_object().unwrap() {
        assert!(line.contains(&format!("{name}={value}")), "{name} missing from {line}");
    }
    assert!(counters["partial_page_reads"].as_u64().unwrap() > 0, "512-byte writes read their pages first");
    assert!(counters["writeback_requests"].as_u64().unwrap() > 0, "sync_file_range=write writes back");
    // without a cache: no such line
    let out = nvsched(&["run", job, "--device", "simple-nvme"]);
    assert!(out.status.success() && !String::from_utf8(out.stdout).unwrap().contains("page cache:"));
}

/// Reads of what the drive never had written return at once: the summary says so when
/// they are a notable share, and the files fio writes out first are not among them.
#[test]
fn the_summary_notes_reads_of_pages_that_hold_no_data() {
    let job = |target: &str| {
        temp_job(
            &format!("nodata-{}.fio", target.len()),
            &format!("[a]\nrw=randread\nbs=4k\n{target}\nnumber_ios=500\nioengine=io_uring\ndirect=1\n"),
        )
    };
    let summary = |job: &Path, extra: &[&str]| {
        let out = nvsched(&[&["run", job.to_str().unwrap()], extra].concat());
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let device = job("filename=/dev/nvme0n1");
    let text = summary(&device, &[]);
    assert!(text.contains("note: 100% of the pages read (500 of 500) hold no data on the drive"), "{text}");
    let full = nvsched(&["run", device.to_str().unwrap(), "--precondition", "full"]);
    assert!(full.status.success() && !String::from_utf8_lossy(&full.stdout).contains("hold no data"));
    // the closing line gives the run's own speed, and the drive's preparation apart
    let stderr = String::from_utf8_lossy(&full.stderr);
    let closing = stderr.lines().find(|l| l.starts_with("nvsched: simulated ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(closing.contains("s preparing the drive's full state"), "{closing}");
    // a new file a job reads is written out before the run, as fio does
    assert!(!summary(&job("size=64m"), &[]).contains("hold no data"));
}

/// Starts `nvsched args` in the repository, sends it SIGINT once `ready` returns, and
/// returns what it did (it must end within a minute of the signal).
fn interrupt_when(args: &[&str], ready: impl FnOnce()) -> Output {
    let mut child = common::with_default_signals(&mut Command::new(env!("CARGO_BIN_EXE_nvsched")))
        .args(args)
        .current_dir(repo_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    ready();
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let waited = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if waited.elapsed().as_secs() > 60 {
            child.kill().unwrap();
            panic!("{args:?}: still running a minute after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn sigint_ends_a_simulated_run_early_with_its_report() {
    // an hour of simulated reads takes minutes; Ctrl-C a second in ends it as fio's
    // SIGINT does: the report covers what ran, the later phase's job did nothing
    let job = temp_job(
        "hour.fio",
        "[global]\nioengine=io_uring\nsize=1g\ntime_based\n[a]\nrw=randread\niodepth=32\nruntime=3600s\n\
         [b]\nstonewall\nrw=read\nruntime=10s\n",
    );
    let out = interrupt_when(&["run", job.to_str().unwrap(), "--output-format", "json"], || {
        std::thread::sleep(std::time::Duration::from_secs(1));
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted after") && stderr.contains("the report covers what ran"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("the report is printed");
    assert_eq!(v["nvsched"]["interrupted"], true);
    let simulated_ns = v["nvsched"]["simulated_time_ns"].as_u64().unwrap();
    assert!(simulated_ns > 0 && simulated_ns < 3_600_000_000_000, "{simulated_ns}");
    let (a, b) = (&v["jobs"][0], &v["jobs"][1]);
    assert!(a["read"]["total_ios"].as_u64().unwrap() > 0 && a["job_runtime"].as_u64().unwrap() < 3_600_000);
    assert_eq!(b["read"]["total_ios"], 0, "{b}");
    // a SIGINT the process ignores (as a shell script's background job does) stays ignored
    let short =
        temp_job("twenty.fio", "[a]\nioengine=io_uring\nrw=randread\niodepth=32\nsize=1g\nruntime=20s\ntime_based\n");
    let child = Command::new("sh")
        .args(["-c", "trap '' INT; exec \"$0\" run \"$1\" --output-format json -q"])
        .args([env!("CARGO_BIN_EXE_nvsched"), short.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["nvsched"]["interrupted"].is_null() && v["jobs"][0]["job_runtime"] == 20_000, "ran its 20 s");
}

#[test]
fn sigint_stops_a_reproduction_and_keeps_the_finished_runs() {
    let out_dir = std::env::temp_dir().join(format!("nvsched-cli-repro-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let args = ["repro", "mts", "--quick", "--no-plots", "-q", "--out", out_dir.to_str().unwrap()];
    // the signal comes once the first run is in the cache
    let cached = || std::fs::read_dir(out_dir.join("cache")).map_or(0, |d| d.count());
    let out = interrupt_when(&args, || {
        let waited = std::time::Instant::now();
        while cached() == 0 && waited.elapsed().as_secs() < 120 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let kept: usize = stderr
        .split("mts: interrupted: ")
        .nth(1)
        .and_then(|rest| rest.split(" of 16 runs are in the cache").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(cached(), kept, "the cache holds the runs that finished, and only those");
    assert!((1..16).contains(&kept) && out.stdout.is_empty(), "no table from part of the runs: {kept}");
    // the same command goes on from there
    let out = nvsched(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("16 runs ({} simulated, {kept} from cache)", 16 - kept)), "{stderr}");
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// `calibrate --fit` fits a flash profile to its datasheet and writes a profile that
/// `devices --verify` and `run` take; what it cannot fit is refused with the reason.
#[test]
fn calibrate_fits_a_profile_to_its_datasheet_and_devices_verifies_the_file() {
    let out_file = temp_job("fitted-pro.toml", "");
    std::fs::remove_file(&out_file).unwrap();
    let out = out_file.to_str().unwrap();
    let text = stdout_of(&["calibrate", "--fit", "970pro-512g", "--rounds", "2", "--output", out]);
    assert!(text.contains("970pro-512g: before") && text.contains("970pro-512g: fitted"), "{text}");
    assert!(text.contains(&format!("wrote {out} (use: --device {out})")), "{text}");
    let verified = stdout_of(&["devices", "--verify", out]);
    assert!(verified.starts_with("fitted-pro\n") && verified.contains("random write QD1 (IOPS)"), "{verified}");
    let job = temp_job("on-fitted.fio", "[r]\nrw=randread\nsize=1g\nnumber_ios=100\n");
    stdout_of(&["run", job.to_str().unwrap(), "--device", out]);
    std::fs::remove_file(&out_file).unwrap();
    // what cannot be fitted or verified, and why
    let refused = [
        (vec!["calibrate", "--fit", "simple-nvme"], "simple-nvme: the profile has no [datasheet] section"),
        (
            vec!["calibrate", "--filename", "/nonexistent/x", "--rounds", "2"],
            "--rounds applies to --fit and --like only",
        ),
        (vec!["calibrate", "--fit", "970pro-512g", "--size", "1g"], "cannot be used with"),
        (vec!["devices", "--verify", "simple-nvme"], "simple-nvme: the profile has no [datasheet] section to verify"),
        (vec!["devices", "--verify", "nope.toml"], "unknown device 'nope.toml'"),
    ];
    for (args, message) in refused {
        let out = nvsched(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{args:?}: {stderr}");
    }
}
