//! The simulated examples of README.md and docs/job-files.md print what they show.
//!
//! Every `$ nvsched run|sweep|trace examples/...`, `$ nvsched tune ... examples/...` and
//! `$ nvsched repro NAME --quick` line in a fenced block is run (in simulation, so the output is deterministic) and each output
//! line shown under it must appear in what the command prints. README abridges: a `...`
//! line stands for lines left out, `a ... b` for a line's middle, and the time of day in
//! a job's header line and a reproduction's wall-clock time are not compared. An example
//! must not read pages that hold no data unless it shows the summary's note saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One README command and the output lines shown under it.
struct Example {
    readme_line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

/// The `nvsched run`, `sweep` and `tune` commands on job files in `examples/`, and the quick
/// reproductions, of README's fenced blocks. A command's shown
/// output ends at the block's end or at the next `$` line; a pipe into grep or tail only
/// selects lines, so the command runs without it.
fn simulated_examples(readme: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut in_block = false;
    let mut current: Option<Example> = None;
    // a command continued on the next line (`\`): what it has so far, and its first line
    let mut continued: Option<(usize, String)> = None;
    for (i, raw) in readme.lines().enumerate() {
        let (i, joined) = match continued.take() {
            Some((first, head)) => (first, format!("{head} {}", raw.trim())),
            None => (i, raw.trim().to_owned()),
        };
        if joined.starts_with("$ ") && joined.ends_with('\\') {
            continued = Some((i, joined.trim_end_matches('\\').trim_end().to_owned()));
            continue;
        }
        let line = joined.as_str();
        if line.starts_with("```") {
            in_block = !in_block;
            examples.extend(current.take());
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            examples.extend(current.take());
            let command = command.split(" | ").next().unwrap();
            let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            // `run`, `sweep` and `tune` on a job file of examples/ (tune's --experiment sweeps cost
            // minutes; real devices print what the device gives)
            let job = match words.get(1).map(String::as_str) {
                Some("run") | Some("sweep") | Some("trace") => words.get(2),
                Some("tune") => words.last(),
                _ => None,
            };
            let quick_repro = words.get(1).is_some_and(|w| w == "repro") && words.iter().any(|w| w == "--quick");
            let simulated = words[0] == "nvsched"
                && (job.is_some_and(|j| j.starts_with("examples/")) || quick_repro)
                && !words.iter().any(|w| w == "--engine" || w == "--experiment" || w == "--filename");
            if simulated {
                current = Some(Example { readme_line: i + 1, args: words[1..].to_vec(), shown: Vec::new() });
            }
        } else if let Some(example) = current.as_mut() {
            example.shown.push(line.to_owned());
        }
    }
    examples
}

/// What differs from run to run is not compared: a header line's time of day ("pid=0: Tue
/// Nov 24 10:50:40 2026") is cut off, and a reproduction's wall-clock time ("from cache) in
/// 42.1s; results in ...") becomes "in _s".
fn without_wall_clock(line: &str) -> String {
    if let Some(at) = line.find("pid=0: ") {
        return line[..at + "pid=0:".len()].to_owned();
    }
    if let Some(at) = line.find("from cache) in ") {
        let from = at + "from cache) in ".len();
        if let Some(len) = line[from..].find("s;") {
            return format!("{}_{}", &line[..from], &line[from + len..]);
        }
    }
    line.to_owned()
}

#[test]
fn readme_examples_print_what_readme_shows() {
    let root = repo_root().canonicalize().unwrap();
    // a scratch directory, so the log files some examples write stay out of the checkout
    let dir = std::env::temp_dir().join(format!("nvsched-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("examples");
    if !link.exists() {
        std::os::unix::fs::symlink(root.join("examples"), &link).unwrap();
    }
    let mut mismatches = Vec::new();
    for (doc, at_least) in [("README.md", 6), ("docs/job-files.md", 1)] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let examples = simulated_examples(&text);
        assert!(examples.len() >= at_least, "{doc}'s examples were not found: {}", examples.len());
        for example in &examples {
            let out = Command::new(env!("CARGO_BIN_EXE_nvsched"))
                .args(&example.args)
                .current_dir(&dir)
                .output()
                .expect("nvsched runs");
            let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let printed_lines: Vec<String> = printed.lines().map(|l| without_wall_clock(l.trim())).collect();
            // an example whose reads find no data shows a clean drive's controller, not the flash
            let no_data = "hold no data on the drive";
            if printed.contains(no_data) && !example.shown.iter().any(|l| l.contains(no_data)) {
                mismatches.push(format!(
                    "{doc}:{} `nvsched {}`: reads pages that hold no data (give its job file a precondition=)",
                    example.readme_line,
                    example.args.join(" ")
                ));
            }
            for shown in &example.shown {
                let shown = without_wall_clock(shown);
                let fragments = shown.split("...").map(str::trim).filter(|f| !f.is_empty());
                for fragment in fragments {
                    if !printed_lines.iter().any(|l| l.contains(fragment)) {
                        mismatches.push(format!(
                            "{doc}:{} `nvsched {}`: not printed: {fragment}",
                            example.readme_line,
                            example.args.join(" ")
                        ));
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(mismatches.is_empty(), "the docs show output nvsched no longer prints:\n{}", mismatches.join("\n"));
}
