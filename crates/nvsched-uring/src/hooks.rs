//! `exec_prerun` / `exec_postrun`: shell commands a job runs before and after its I/O,
//! as fio runs them: through `sh -c`, once per job clone as it starts and as it ends,
//! with standard output and error saved in `NAME.prerun.txt` / `NAME.postrun.txt` in the
//! working directory.

use nvsched_workload::JobSpec;
use std::fs::File;
use std::process::{Child, Command, ExitStatus, Stdio};

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

/// A job clone's hook that is running: the engine polls it and goes on with the other
/// jobs meanwhile, as fio runs each job's hooks in the job's own thread.
#[derive(Debug)]
pub struct RunningHook {
    job: String,
    command: String,
    stage: Stage,
    log: String,
    child: Child,
}

/// Starts clone's hook for `stage`, if its job has one: `sh -c COMMAND`, its output saved
/// in `NAME.STAGE.txt` in the working directory.
pub fn start(spec: &JobSpec, stage: Stage) -> Result<Option<RunningHook>, String> {
    let Some(command) = stage.command(spec) else { return Ok(None) };
    let (job, name) = (&spec.name, stage.name());
    let log = format!("{job}.{name}.txt");
    eprintln!("{job} : Saving output of {name} in {log}");
    let out = File::create(&log).map_err(|e| format!("job '{job}': exec_{name}: cannot create '{log}': {e}"))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("job '{job}': exec_{name} <{command}>: cannot start sh: {e}"))?;
    Ok(Some(RunningHook { job: job.clone(), command: command.to_string(), stage, log, child }))
}

impl RunningHook {
    /// `None` while it runs; then whether it succeeded (the error names the command and
    /// its log).
    pub fn poll(&mut self) -> Option<Result<(), String>> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(self.verdict(status)),
            Err(e) => Some(Err(format!("job '{}': exec_{}: {e}", self.job, self.stage.name()))),
        }
    }

    fn verdict(&self, status: ExitStatus) -> Result<(), String> {
        if status.success() {
            return Ok(());
        }
        Err(format!(
            "job '{}': exec_{} <{}> failed ({status}); its output is in {}",
            self.job,
            self.stage.name(),
            self.command,
            self.log
        ))
    }
}
