//! nvsched's real-device engine: the same job drivers and scheduling policies as the
//! simulator, in front of io_uring with O_DIRECT. One thread runs one event loop: job
//! drivers decide what to issue, the policy orders and admits requests in user space
//! (`insert`/`dispatch`/`complete`/`next_wakeup`), admitted requests become SQEs, and CQEs
//! complete them. Timers use a bounded wait in `io_uring_enter`, not busy polling (unless
//! `poll` is set).

#[cfg(target_os = "linux")]
mod engine;
pub mod hooks;
pub mod targets;
pub mod verify;

#[cfg(target_os = "linux")]
pub use engine::{run, run_with_status, StatusHook, TargetsReady};

use nvsched_core::Nanos;
use nvsched_policy::PolicyReport;
use nvsched_report::JobStats;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How to run on real devices.
#[derive(Clone, Debug)]
pub struct UringOptions {
    /// Submission/completion ring size: the most requests in flight at the device.
    pub ring_entries: u32,
    /// Busy-poll for completions instead of sleeping in the kernel.
    pub poll: bool,
    pub safety: targets::Safety,
    /// Keep files nvsched created (default: remove them at the end).
    pub keep_files: bool,
    /// Overwrite existing targets with random data before the jobs start (files nvsched
    /// creates are always laid out with random data).
    pub prefill: bool,
    pub seed: u64,
    /// For testing error handling: every Nth completion fails with this errno instead
    /// of its result (`--inject-errors N:ERRNO`).
    pub inject_errors: Option<(u64, i32)>,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            ring_entries: 256,
            poll: false,
            safety: targets::Safety::default(),
            keep_files: false,
            prefill: false,
            seed: 0,
            inject_errors: None,
        }
    }
}

/// One job clone's results.
#[derive(Clone, Debug)]
pub struct CloneOutcome {
    pub job_index: usize,
    pub clone: u32,
    pub reporting_group: u32,
    pub tenant: u32,
    pub stats: JobStats,
    /// How its trace replay went, for a clone that replays one (`read_iolog`).
    pub replay: Option<nvsched_workload::ReplayStats>,
}

/// A target the run used.
#[derive(Clone, Debug)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub block_device: bool,
    pub created: bool,
    /// nvsched created it at its size before the run (not a fill that grows it), or
    /// extended a shorter file to it (`--allow-destructive`).
    pub laid_out: bool,
    /// A file nvsched created stays after the run (`--keep-files`, or a `create_only`
    /// job laid it out).
    pub kept: bool,
    pub kernel_scheduler: Option<String>,
    pub size: u64,
}

/// What a real-device run did.
#[derive(Clone, Debug)]
pub struct UringOutcome {
    pub clones: Vec<CloneOutcome>,
    pub end: Nanos,
    pub policy: PolicyReport,
    pub policy_id: &'static str,
    pub requests: u64,
    /// Most requests in the ring at once (the device queue the policy controls).
    pub max_in_ring: u32,
    /// The kernel polled the submission queue (`sqthread_poll`).
    pub sq_polled: bool,
    /// Submissions handed to the kernel's async workers (`force_async`).
    pub forced_async: u64,
    /// Times the loop waited in the kernel for completions.
    pub waits: u64,
    pub io_errors: Vec<String>,
    pub verify_errors: Vec<String>,
    pub verified_blocks: u64,
    /// Verify writes left unchecked: a write overlapping them in part was in flight with
    /// them, so what they hold depends on which landed last (`serialize_overlap` avoids
    /// it).
    pub verify_unsettled: u64,
    pub kernel: String,
    pub targets: Vec<TargetInfo>,
    pub cpu_user: Duration,
    pub cpu_sys: Duration,
    /// The cgroups by tenant id; tenant 0 is "no cgroup".
    pub tenants: nvsched_core::TenantTree,
    /// fio's disk stats of each device the targets are on, over the run.
    pub disk_util: Vec<nvsched_report::DiskUtil>,
    /// A signal stopped the run early (see [`stop_on_interrupt`]).
    pub interrupted: bool,
}

impl UringOutcome {
    /// CPU time (user + system) per completed request.
    pub fn cpu_per_io(&self) -> Duration {
        let n = self.requests.max(1) as u32;
        (self.cpu_user + self.cpu_sys) / n
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM end a run as its runtime would, instead of killing the
/// process: no job starts any more, each running one finishes what it has in flight, the
/// report covers what ran ([`UringOutcome::interrupted`] says so) and the files the run
/// created are removed as usual. A second signal kills the process. For the command
/// line: a library caller (Python) keeps its own handlers.
pub fn stop_on_interrupt() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic, which
        // is async-signal-safe; SA_RESETHAND gives the second signal its default action.
        // Without SA_RESTART a wait in io_uring_enter returns EINTR, and the loop looks.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            for signal in [libc::SIGINT, libc::SIGTERM] {
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

/// Whether a signal asked the runs to stop (see [`stop_on_interrupt`] and
/// [`InterruptGuard`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The handlers an [`InterruptGuard`] displaced, and how many guards are alive.
static GUARDS: std::sync::Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = std::sync::Mutex::new((0, Vec::new()));

/// For a library caller with handlers of its own (Python): while a guard is alive, SIGINT
/// and SIGTERM stop the runs as [`stop_on_interrupt`] makes them do on the command line
/// (real and simulated), instead of running the caller's handlers, which cannot run while
/// native code holds the thread. Guards nest across threads; when the last one is
/// dropped, the caller's handlers come back and the flag clears. Ask
/// [`InterruptGuard::interrupted`] before dropping it.
pub struct InterruptGuard(());

impl InterruptGuard {
    pub fn new() -> InterruptGuard {
        let mut guards = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
        if guards.0 == 0 {
            // SAFETY: as in stop_on_interrupt; the displaced actions are kept to be put back.
            // No SA_RESETHAND: a second signal must not kill the caller's process.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                for signal in [libc::SIGINT, libc::SIGTERM] {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, &action, &mut old) == 0 {
                        guards.1.push((signal, old));
                    }
                }
            }
        }
        guards.0 += 1;
        InterruptGuard(())
    }

    /// Whether a signal came while this guard (or another alive with it) was alive.
    pub fn interrupted(&self) -> bool {
        interrupted()
    }
}

impl Default for InterruptGuard {
    fn default() -> Self {
        InterruptGuard::new()
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        let mut guards = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
        guards.0 -= 1;
        if guards.0 == 0 {
            for (signal, old) in guards.1.drain(..) {
                // SAFETY: puts back the action sigaction gave when the first guard came
                unsafe {
                    libc::sigaction(signal, &old, std::ptr::null_mut());
                }
            }
            INTERRUPTED.store(false, Ordering::SeqCst);
        }
    }
}

/// Whether io_uring works here (for tests that need it): `Err` says why not.
pub fn available() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        io_uring::IoUring::new(8).map(|_| ()).map_err(|e| format!("io_uring unavailable: {e}"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("io_uring needs Linux".into())
    }
}
