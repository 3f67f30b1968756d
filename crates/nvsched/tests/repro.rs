//! `nvsched repro`: outputs, claims and the run cache, on the quickest experiment.

use std::path::Path;
use std::process::Command;

#[test]
fn repro_writes_its_outputs_and_reuses_cached_runs() {
    let out = std::env::temp_dir().join(format!("nvsched-repro-{}", std::process::id()));
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_nvsched"))
            .args(["repro", "tabs", "--quick", "-q", "--out", out.to_str().unwrap()])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let table = String::from_utf8(first.stdout).unwrap();
    assert!(table.contains("Claims (nvsched vs paper):") && table.contains("fairness"), "{table}");
    for f in ["results.json", "report.md", "tabs-half-full.png", "tabs-half-full.svg"] {
        assert!(out.join(f).exists(), "{f}");
    }
    // the figure shows each of the paper's metrics: a row of panels per metric
    let svg = std::fs::read_to_string(out.join("tabs-half-full.svg")).unwrap();
    for axis in ["read BW (MB/s)", "FUA BW (MB/s)", "fairness"] {
        assert!(svg.contains(axis), "the figure has no '{axis}' panels");
    }
    let fresh = std::fs::read_to_string(out.join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&fresh).unwrap();
    assert_eq!(results["runs"].as_array().unwrap().len(), 10);
    assert!(results["runs"][0]["fio"]["jobs"].is_array(), "fio-compatible job JSON inside");
    assert!(results["claims"].as_array().unwrap().iter().all(|c| c["holds"].is_boolean()));
    let second = run();
    let err = String::from_utf8(second.stderr).unwrap();
    assert!(err.contains("(0 simulated, 10 from cache)"), "{err}");
    assert_eq!(String::from_utf8(second.stdout).unwrap(), table, "cached runs give the same table");
    // floats survive the cache exactly (serde_json's float_roundtrip)
    assert!(std::fs::read_to_string(out.join("results.json")).unwrap() == fresh, "same results.json from the cache");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Runs `nvsched repro NAME --quick` into a fresh directory and returns it.
fn quick_repro(name: &str) -> std::path::PathBuf {
    let out = std::env::temp_dir().join(format!("nvsched-repro-{name}-{}", std::process::id()));
    let done = Command::new(env!("CARGO_BIN_EXE_nvsched"))
        .args(["repro", name, "--quick", "-q", "--out", out.to_str().unwrap()])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    out
}

#[test]
fn prio_nice_draws_runtime_against_nice_value() {
    let out = quick_repro("prio-nice");
    let svg = std::fs::read_to_string(out.join("prio-nice-runtimes-half-full.svg")).unwrap();
    for text in ["nice value", "runtime (s)", "nice80 readers", "nice80 writers", "crowd readers", "prio-token"] {
        assert!(svg.contains(text), "the figure lacks '{text}'");
    }
    assert!(!svg.contains("crowd writers"), "the crowd has no writers, so no panel");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn mts_draws_each_tenants_share_against_its_weight() {
    let out = quick_repro("mts");
    for state in ["clean", "aged"] {
        let svg = std::fs::read_to_string(out.join(format!("mts-shares-{state}.svg"))).unwrap();
        // (SVG escapes the apostrophes of "tenant's weight" and "weight's share")
        for text in ["s weight", "share of the bandwidth (%)", "s share", "cfq", "mts", "varmail"] {
            assert!(svg.contains(text), "the {state} figure lacks '{text}'");
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_reproduction_runs_on_another_drive_and_says_so() {
    let dir = std::env::temp_dir().join(format!("nvsched-repro-device-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repro = |args: &[&str], out: &str| {
        Command::new(env!("CARGO_BIN_EXE_nvsched"))
            .args(["repro", "tabs", "--quick", "-q", "--no-plots", "--out", dir.join(out).to_str().unwrap()])
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap()
    };
    let results = |out: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(out).join("results.json")).unwrap()).unwrap()
    };
    let own = repro(&[], "own");
    assert!(own.status.success(), "{}", String::from_utf8_lossy(&own.stderr));
    assert!(results("own")["own_device"].is_null());
    // a shipped profile in place of the manifest's: the table, JSON and report say so
    let other = repro(&["--device", "970evoplus-250g"], "other");
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    let table = String::from_utf8(other.stdout).unwrap();
    assert!(
        table.contains("device 970evoplus-250g, quick mode\ninstead of the experiment's own 970pro-512g"),
        "{table}"
    );
    let (own_json, other_json) = (results("own"), results("other"));
    assert_eq!((&other_json["device"], &other_json["own_device"]), (&"970evoplus-250g".into(), &"970pro-512g".into()));
    assert_ne!(own_json["cells"], other_json["cells"], "another drive, other numbers");
    let report = std::fs::read_to_string(dir.join("other/report.md")).unwrap();
    assert!(report.contains("`nvsched repro tabs --quick --device 970evoplus-250g`"), "{report}");
    // the manifest's own profile as a file gives the manifest's numbers; the cache keys on
    // the file's text, so an edited file is simulated anew
    let file = dir.join("mine.toml");
    std::fs::copy(root.join("profiles/970pro-512g.toml"), &file).unwrap();
    let from_file = repro(&["--device", file.to_str().unwrap()], "file");
    assert!(from_file.status.success(), "{}", String::from_utf8_lossy(&from_file.stderr));
    assert_eq!(results("file")["cells"], own_json["cells"]);
    let again = repro(&["--device", file.to_str().unwrap()], "file");
    assert!(String::from_utf8_lossy(&again.stderr).contains("(0 simulated, 10 from cache)"));
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap() + "\n# edited\n").unwrap();
    let edited = repro(&["--device", file.to_str().unwrap()], "file");
    assert!(String::from_utf8_lossy(&edited.stderr).contains("(10 simulated, 0 from cache)"));
    // profile fields on top of the manifest's; a bad profile fails before anything runs
    let set = repro(&["--device-set", "nand.t_prog_us=2000"], "set");
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    assert_eq!(results("set")["device_set"]["nand.t_prog_us"], "2000");
    let bad = repro(&["--device", "no-such-drive"], "bad");
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tabs: on device no-such-drive: unknown device"));
    assert!(!dir.join("bad").exists());
    let simple = repro(&["--device", "simple-nvme"], "bad");
    assert!(String::from_utf8_lossy(&simple.stderr).contains("need the flash model"), "{simple:?}");
    assert!(!dir.join("bad").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
