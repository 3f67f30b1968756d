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
    /// Time spent in the policy's insert, dispatch and complete calls.
    pub policy_time: Duration,
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

    /// The part of [`UringOutcome::cpu_per_io`] spent in the policy.
    pub fn policy_per_io(&self) -> Duration {
        self.policy_time / self.requests.max(1) as u32
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The last signal that set [`INTERRUPTED`].
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_interrupt(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM end a run as its runtime would, instead of killing the
/// process: no job starts any more, each running one finishes what it has in flight, the
/// report covers what ran ([`UringOutcome::interrupted`] says so) and the files the run
/// created are removed as usual. A second signal kills the process; a signal the process
/// ignores (a background job of a shell script ignores SIGINT) stays ignored. For the
/// command line: a library caller (Python) uses an [`InterruptGuard`].
pub fn stop_on_interrupt() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    // SA_RESETHAND gives the second signal its default action
    INSTALL.call_once(|| drop(catch_stop_signals(libc::SA_RESETHAND)));
}

/// Sets [`on_interrupt`] as the action of SIGINT and SIGTERM, except where the signal is
/// ignored; returns the actions it displaced.
fn catch_stop_signals(flags: libc::c_int) -> Vec<(libc::c_int, libc::sigaction)> {
    let mut displaced = Vec::new();
    // SAFETY: a zeroed sigaction is valid; the handler only stores to atomics, which is
    // async-signal-safe. Without SA_RESTART a wait in io_uring_enter returns EINTR, and
    // the loop looks at the flag.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            let mut old: libc::sigaction = std::mem::zeroed();
            let ignored = libc::sigaction(signal, std::ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN;
            if !ignored && libc::sigaction(signal, &action, std::ptr::null_mut()) == 0 {
                displaced.push((signal, old));
            }
        }
    }
    displaced
}

/// Whether a signal asked the runs to stop (see [`stop_on_interrupt`] and
/// [`InterruptGuard`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signals that stop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// The handlers an [`InterruptGuard`] displaced, and how many guards are alive.
static GUARDS: std::sync::Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = std::sync::Mutex::new((0, Vec::new()));

/// For a library caller with handlers of its own (Python): while a guard is alive, SIGINT
/// and SIGTERM stop the runs as [`stop_on_interrupt`] makes them do on the command line
/// (real and simulated), instead of running the caller's handlers, which cannot run while
/// native code holds the thread. A signal the caller ignores stays ignored. Guards nest
/// across threads; when the last one is dropped, the caller's handlers come back and the
/// flag clears, and a SIGTERM that came is raised again, so the caller's disposition
/// (by default: terminate) applies once the runs have stopped and cleaned up. Ask
/// [`InterruptGuard::signal`] before dropping it.
pub struct InterruptGuard(());

impl InterruptGuard {
    pub fn new() -> InterruptGuard {
        let mut guards = GUARDS.lock().unwrap_or_else(|e| e.into_inner());
        if guards.0 == 0 {
            // no SA_RESETHAND: a second signal must not kill the caller's process
            guards.1 = catch_stop_signals(0);
        }
        guards.0 += 1;
        InterruptGuard(())
    }

    /// The signal that came while this guard, or another alive with it, was alive.
    pub fn signal(&self) -> Option<StopSignal> {
        interrupted().then(|| match SIGNAL.load(Ordering::SeqCst) {
            libc::SIGTERM => StopSignal::Terminate,
            _ => StopSignal::Interrupt,
        })
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
        if guards.0 > 0 {
            return;
        }
        for (signal, old) in guards.1.drain(..) {
            // SAFETY: puts back the action sigaction gave when the first guard came
            unsafe {
                libc::sigaction(signal, &old, std::ptr::null_mut());
            }
        }
        let terminate = self.signal() == Some(StopSignal::Terminate);
        INTERRUPTED.store(false, Ordering::SeqCst);
        if terminate {
            // SAFETY: raise is safe to call; the caller's own disposition handles it
            unsafe {
                libc::raise(libc::SIGTERM);
            }
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
