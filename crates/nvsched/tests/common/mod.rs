//! What the binary's signal tests share.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Gives the child SIGINT's and SIGTERM's default actions, whatever the test runner
/// inherited: a shell script's background job ignores SIGINT, its children inherit that,
/// and nvsched leaves an ignored signal ignored.
pub fn with_default_signals(command: &mut Command) -> &mut Command {
    // SAFETY: signal() is async-signal-safe, as pre_exec requires
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        })
    }
}
