//! Reporting for nvsched: fio's latency histogram ([`hist`]), per-job statistics that
//! engines fill ([`stats`]), and fio's output formats ([`fio_json`], [`terse`],
//! [`normal`]). Consumes completion records and counters; drives nothing.

pub mod fio_json;
pub mod hist;
pub mod iolog;
pub mod normal;
pub mod plots;
pub mod recorder;
pub mod stats;
pub mod terse;

pub use hist::FioHistogram;
pub use recorder::{write_merged_blktrace, CompletedIo, JobRecorder};
pub use stats::{CpuUsage, DirStats, FlushCall, JobError, JobStats, LatStats, PercentileKinds};

use nvsched_core::Nanos;
use std::io::Write;
use std::path::Path;

/// A clone's statistics so far, as `--status-interval` dumps them: (reporting group, job
/// index, statistics).
pub type CloneStatus = (u32, usize, JobStats);
/// Where `--status-interval` dumps go: the time into the run, and every clone's status.
pub type StatusDump = Box<dyn FnMut(Nanos, Vec<CloneStatus>)>;

/// When `--status-interval` dumps fall due, on either engine's clock: every `every`,
/// the next an interval after the last one due (a late dump does not shift the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusClock {
    every: Nanos,
    due: Nanos,
}

impl StatusClock {
    /// `None` for no interval.
    pub fn new(every: Nanos) -> Option<StatusClock> {
        (every > Nanos::ZERO).then_some(StatusClock { every, due: every })
    }
    pub fn is_due(&self, now: Nanos) -> bool {
        now >= self.due
    }
    /// A dump went out at `now`: the next falls due at the first interval after it.
    pub fn advance(&mut self, now: Nanos) {
        let passed = now.0.saturating_sub(self.due.0) / self.every.0 + 1;
        self.due = Nanos(self.due.0 + passed * self.every.0);
    }
}

/// fio's `disk_util` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks_ms: u64,
    pub write_ticks_ms: u64,
    pub in_queue_ms: u64,
    pub util_pct: f64,
}

/// Everything a run reports.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Goes into fio's "fio version" field.
    pub version: String,
    pub timestamp_ms: u64,
    pub global_options: nvsched_workload::OptionLines,
    /// Jobs as reported (clones or groups already merged).
    pub jobs: Vec<JobStats>,
    pub disk_util: Vec<DiskUtil>,
    /// nvsched's own data (engine, policy and device counters, time series).
    pub nvsched: serde_json::Value,
    /// Extra summary lines for the normal output.
    pub summary_extra: Vec<String>,
    /// What fio prints before the run in its normal output ([`normal::run_header`]).
    pub header: String,
    /// How long the whole run took (simulated, or on the wall clock): fio's `elapsed`,
    /// in whole seconds rounded up, the same in every job.
    pub elapsed: Nanos,
}

/// Output formats, as `--output-format` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Normal,
    Json,
    JsonPlus,
    Terse,
}

impl Format {
    pub fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "normal" => Format::Normal,
            "json" => Format::Json,
            "json+" => Format::JsonPlus,
            "terse" => Format::Terse,
            _ => return None,
        })
    }
}

impl RunReport {
    /// Renders in every format asked for, in fio's order whatever the order asked: the
    /// normal output's header (fio prints it before the run), terse, JSON (one document,
    /// with json+'s bins if either asks for them), the normal output.
    pub fn render_all(&self, formats: &[Format]) -> String {
        let normal = formats.contains(&Format::Normal);
        let json = if formats.contains(&Format::JsonPlus) {
            Some(Format::JsonPlus)
        } else {
            formats.contains(&Format::Json).then_some(Format::Json)
        };
        let mut out = String::new();
        if normal {
            out.push_str(&self.header);
        }
        if formats.contains(&Format::Terse) {
            out.push_str(&self.render(Format::Terse));
        }
        if let Some(json) = json {
            out.push_str(&self.render(json));
        }
        if normal {
            out.push_str(&self.render(Format::Normal));
        }
        out
    }

    /// Renders in one format.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Normal => normal::render(self),
            Format::Terse => terse::render(self),
            Format::Json | Format::JsonPlus => {
                let value = fio_json::report_value(self, format == Format::JsonPlus);
                let mut out = Vec::new();
                fio_json::write_fio_style(&mut out, &value).expect("writing to memory");
                String::from_utf8(out).expect("JSON is UTF-8")
            }
        }
    }
}

/// Writes `contents` to `path` atomically: a temporary file beside it, then a rename, so
/// readers never see a half-written file. Only a regular file (or a new one) is replaced
/// that way: a symbolic link's target is written, not the link, and a character device or
/// a FIFO (`/dev/null`, `/dev/stdout`, a pipe) is written to as it is, since renaming onto
/// it would put a regular file in its place. A block device or a directory is refused.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let (path, stream) = output_target(path)?;
    let path = &path;
    if stream {
        return std::fs::OpenOptions::new().write(true).open(path)?.write_all(contents);
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name =
        path.file_name().ok_or_else(|| std::io::Error::other(format!("'{}' is not a file path", path.display())))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Whether [`write_atomic`] can write `path`, said before a long run: an error for a
/// directory or a block device.
pub fn check_output_path(path: &Path) -> std::io::Result<()> {
    output_target(path).map(|_| ())
}

/// Where [`write_atomic`] writes `path` (links followed), and whether it writes to it as it
/// is (a character device, FIFO or socket) rather than replacing it.
fn output_target(path: &Path) -> std::io::Result<(std::path::PathBuf, bool)> {
    use std::os::unix::fs::FileTypeExt;
    let path = follow_links(path)?;
    let Ok(meta) = std::fs::metadata(&path) else { return Ok((path, false)) };
    let kind = meta.file_type();
    if kind.is_block_device() {
        return Err(std::io::Error::other("a block device: nvsched writes reports to files only"));
    }
    if kind.is_dir() {
        return Err(std::io::Error::other("a directory, not a file"));
    }
    let stream = kind.is_char_device() || kind.is_fifo() || kind.is_socket();
    Ok((path, stream))
}

/// The path a chain of symbolic links ends at (which need not exist yet).
fn follow_links(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(std::io::Error::other(format!("'{}': too many levels of symbolic links", path.display())))
}

/// `ctime(3)`-style UTC time: `Sun Nov 22 05:34:31 2026`.
pub fn ctime(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        WD[days.rem_euclid(7) as usize],
        MON[(m - 1) as usize],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_dumps_fall_due_every_interval_whatever_the_lateness() {
        assert_eq!(StatusClock::new(Nanos::ZERO), None);
        let mut clock = StatusClock::new(Nanos(100)).unwrap();
        assert!(!clock.is_due(Nanos(99)) && clock.is_due(Nanos(100)));
        clock.advance(Nanos(130));
        assert!(!clock.is_due(Nanos(199)) && clock.is_due(Nanos(200)));
        // a dump 2.5 intervals late skips the intervals it missed
        clock.advance(Nanos(450));
        assert!(!clock.is_due(Nanos(499)) && clock.is_due(Nanos(500)));
    }

    #[test]
    fn ctime_matches_fio_sample() {
        // "timestamp" : 1795325671 -> "Sun Nov 22 05:34:31 2026" in fio's mixed.json
        assert_eq!(ctime(1_795_325_671), "Sun Nov 22 05:34:31 2026");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    }

    #[test]
    fn atomic_write_replaces_file() {
        let dir = std::env::temp_dir().join(format!("nvsched-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_write_keeps_links_fifos_and_directories_what_they_are() {
        use std::os::unix::fs::FileTypeExt;
        let dir = std::env::temp_dir().join(format!("nvsched-atomic-special-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // a link: its target gets the contents, the link stays a link
        let (target, link) = (dir.join("target.json"), dir.join("link.json"));
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink("target.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // a dangling link: its target is created
        let (missing, dangling) = (dir.join("later.json"), dir.join("dangling.json"));
        std::os::unix::fs::symlink("later.json", &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert_eq!(std::fs::read(&missing).unwrap(), b"made");
        // a FIFO (as /dev/null or a pipe would be): written to, not replaced
        let fifo = dir.join("pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
        // a directory is refused and left alone
        let err = write_atomic(&dir, b"x").unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
