//! `exec_prerun` / `exec_postrun`: shell commands a job runs before and after its I/O,
//! as fio runs them: through `sh -c`, once per job clone, with standard output and error
//! saved in `NAME.prerun.txt` / `NAME.postrun.txt` in the working directory.

use nvsched_workload::JobSpec;
use std::fs::File;
use std::process::{Command, Stdio};

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Prerun,
    Postrun,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Prerun => "prerun",
            Stage::Postrun => "postrun",
        }
    }

    fn command(self, spec: &JobSpec) -> Option<&str> {
        match self {
            Stage::Prerun => spec.exec_prerun.as_deref(),
            Stage::Postrun => spec.exec_postrun.as_deref(),
        }
    }
}

/// Runs every job clone's command for `stage`. The first that cannot start or exits
/// non-zero is the error (a failed prerun stops the run before any I/O, as it stops
/// the job in fio).
pub fn run_stage(jobs: &[JobSpec], stage: Stage) -> Result<(), String> {
    for spec in jobs {
        let Some(command) = stage.command(spec) else { continue };
        for _clone in 0..spec.numjobs {
            run_one(&spec.name, command, stage)?;
        }
    }
    Ok(())
}

fn run_one(job: &str, command: &str, stage: Stage) -> Result<(), String> {
    let log = format!("{job}.{}.txt", stage.name());
    eprintln!("{job} : Saving output of {} in {log}", stage.name());
    let out =
        File::create(&log).map_err(|e| format!("job '{job}': exec_{}: cannot create '{log}': {e}", stage.name()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("job '{job}': exec_{} <{command}>: cannot start sh: {e}", stage.name()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("job '{job}': exec_{} <{command}> failed ({status}); its output is in {log}", stage.name()))
    }
}
