//! fio's per-job log files (`write_lat_log`, `write_bw_log`, `write_iops_log`), in fio
//! 3.33's format: `time_ms, value, direction, block size[, offset], high priority`, one
//! line per completed I/O, or with `log_avg_msec` one line per window and direction
//! (block size 0): the mean latency, KiB/s and IOPS of the window; fio's
//! `write_hist_log`: completion-latency histograms per interval. And fio's
//! `write_iolog`: the I/Os as they are issued, an iolog that `read_iolog` replays.

use nvsched_core::{IoPrio, LogRequest, Nanos, Op};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lat,
    Clat,
    Slat,
    Bw,
    Iops,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Lat => "lat",
            Kind::Clat => "clat",
            Kind::Slat => "slat",
            Kind::Bw => "bw",
            Kind::Iops => "iops",
        }
    }
}

/// Sums of one direction within the current window.
#[derive(Clone, Copy, Debug, Default)]
struct WindowSums {
    ios: u64,
    bytes: u64,
    lat_ns: u64,
    clat_ns: u64,
    slat_ns: u64,
    slat_ios: u64,
    lat_max_ns: u64,
    clat_max_ns: u64,
    slat_max_ns: u64,
}

/// Where a log's lines go: the clone's own file, or (`per_job_logs=0`) a file shared by
/// every job, which each appends its lines to when it finishes, as fio does (after what
/// earlier runs left there, too).
enum LogSink {
    Own(File),
    Shared { path: PathBuf, lines: Vec<u8> },
}

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            LogSink::Own(f) => f.write(buf),
            LogSink::Shared { lines, .. } => {
                lines.extend_from_slice(buf);
                Ok(buf.len())
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            LogSink::Own(f) => f.flush(),
            LogSink::Shared { .. } => Ok(()),
        }
    }
}

impl LogSink {
    /// Appends a shared log's lines to its file.
    fn close(&mut self) -> std::io::Result<()> {
        match self {
            LogSink::Own(_) => Ok(()),
            LogSink::Shared { path, lines } => {
                std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(&std::mem::take(lines))
            }
        }
    }
}

/// fio's histogram buckets (`FIO_IO_U_PLAT_NR`): the columns of a histogram log before
/// `log_hist_coarseness` merges them.
const FIO_PLAT_NR: usize = 29 * 64;

/// fio's `write_hist_log`: every `log_hist_msec`, at the first completion after the
/// interval, one line `time_ms, direction, block size, bucket counts...` with the
/// completion latencies of that direction since its previous line, in fio's buckets.
struct HistLog {
    path: PathBuf,
    out: BufWriter<LogSink>,
    every_ms: u64,
    /// Where the current interval began (fio moves it on by whole intervals).
    since_ms: u64,
    /// Buckets summed per column (2^`log_hist_coarseness`).
    stride: usize,
    /// Per direction: counts since its last line.
    counts: [Vec<u64>; 3],
    /// Added to every time written (`log_unix_epoch`).
    epoch_ms: u64,
}

impl HistLog {
    fn record(&mut self, at: Nanos, d: usize, bytes: u32, clat: Nanos) -> std::io::Result<()> {
        let bucket = crate::hist::value_to_index(clat.0).min(FIO_PLAT_NR - 1);
        self.counts[d][bucket] += 1;
        let ms = at.0 / 1_000_000;
        if ms.saturating_sub(self.since_ms) < self.every_ms {
            return Ok(());
        }
        self.since_ms += self.every_ms;
        write!(self.out, "{}, {d}, {bytes}", self.epoch_ms + ms)?;
        for column in self.counts[d].chunks(self.stride) {
            write!(self.out, ", {}", column.iter().sum::<u64>())?;
        }
        writeln!(self.out)?;
        self.counts[d].iter_mut().for_each(|c| *c = 0);
        Ok(())
    }
}

/// The log files of one job clone, written as its I/Os complete.
pub struct IoLogs {
    files: Vec<(Kind, PathBuf, BufWriter<LogSink>)>,
    /// `write_hist_log` (boxed: few jobs have it).
    hist: Option<Box<HistLog>>,
    avg_ns: u64,
    offset: bool,
    /// `log_prio`: the priority column holds each I/O's priority value; else 1 for an
    /// I/O at another priority than the job's own (`default_prio`), 0 otherwise.
    prio_values: bool,
    default_prio: IoPrio,
    /// `log_max_value`: a window's latency lines hold its largest latency.
    max_value: bool,
    /// Index of the open window (`log_avg_msec`) and its sums per direction.
    window: u64,
    sums: [WindowSums; 3],
    error: Option<String>,
    /// Added to every time written (`log_unix_epoch`).
    epoch_ms: u64,
}

impl IoLogs {
    /// Creates (or truncates, as fio does) the files `request` names for job clone
    /// `index` (fio's 1-based job number), in `dir`.
    /// Boxed: most jobs log nothing, and the engines keep one slot per job clone.
    pub fn create(
        request: &LogRequest,
        index: u32,
        dir: &Path,
        default_prio: IoPrio,
    ) -> Result<Option<Box<IoLogs>>, String> {
        if !request.any() {
            return Ok(None);
        }
        let mut wanted = Vec::new();
        if let Some(p) = &request.lat {
            wanted.extend([(Kind::Lat, p), (Kind::Clat, p), (Kind::Slat, p)]);
        }
        if let Some(p) = &request.bw {
            wanted.push((Kind::Bw, p));
        }
        if let Some(p) = &request.iops {
            wanted.push((Kind::Iops, p));
        }
        // `per_job_logs=0`: one file per prefix, which every job appends to
        let number = if request.per_job { format!(".{index}") } else { String::new() };
        let create = |name: String| {
            let path = dir.join(name);
            let sink = if request.per_job {
                let file =
                    File::create(&path).map_err(|e| format!("cannot create log file '{}': {e}", path.display()))?;
                LogSink::Own(file)
            } else {
                LogSink::Shared { path: path.clone(), lines: Vec::new() }
            };
            Ok::<_, String>((path, BufWriter::new(sink)))
        };
        let mut files = Vec::with_capacity(wanted.len());
        for (kind, prefix) in wanted {
            let (path, out) = create(format!("{prefix}_{}{number}.log", kind.suffix()))?;
            files.push((kind, path, out));
        }
        let hist = match &request.hist {
            Some(prefix) => {
                let (path, out) = create(format!("{prefix}_clat_hist{number}.log"))?;
                Some(Box::new(HistLog {
                    path,
                    out,
                    every_ms: u64::from(request.hist_msec.max(1)),
                    since_ms: 0,
                    stride: 1 << request.hist_coarseness.min(6),
                    counts: std::array::from_fn(|_| vec![0; FIO_PLAT_NR]),
                    epoch_ms: 0,
                }))
            }
            None => None,
        };
        Ok(Some(Box::new(IoLogs {
            files,
            hist,
            avg_ns: u64::from(request.avg_msec) * 1_000_000,
            offset: request.offset,
            prio_values: request.prio,
            max_value: request.max_value,
            default_prio,
            window: 0,
            sums: [WindowSums::default(); 3],
            error: None,
            epoch_ms: 0,
        })))
    }

    /// `log_unix_epoch`: the Unix time, in milliseconds, at which the job's statistics
    /// start; every time written is counted from it.
    pub fn set_epoch_ms(&mut self, epoch_ms: u64) {
        self.epoch_ms = epoch_ms;
        if let Some(h) = &mut self.hist {
            h.epoch_ms = epoch_ms;
        }
    }

    /// One completed I/O, sent at priority `prio`: `at` since the start of statistics
    /// (end of ramp).
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        at: Nanos,
        op: Op,
        bytes: u32,
        offset_bytes: u64,
        prio: IoPrio,
        slat: Option<Nanos>,
        clat: Nanos,
    ) {
        if !op.is_data() && op != Op::Discard {
            return;
        }
        let d = op.index();
        if let Some(h) = &mut self.hist {
            if let Err(e) = h.record(at, d, bytes, clat) {
                self.error.get_or_insert(e.to_string());
            }
            if self.files.is_empty() {
                return;
            }
        }
        let lat = clat.0 + slat.map_or(0, |s| s.0);
        if let Some(window) = at.0.checked_div(self.avg_ns) {
            while self.window < window {
                self.flush_window();
            }
            let s = &mut self.sums[d];
            s.ios += 1;
            s.bytes += u64::from(bytes);
            s.lat_ns += lat;
            s.clat_ns += clat.0;
            s.lat_max_ns = s.lat_max_ns.max(lat);
            s.clat_max_ns = s.clat_max_ns.max(clat.0);
            if let Some(sl) = slat {
                s.slat_ns += sl.0;
                s.slat_ios += 1;
                s.slat_max_ns = s.slat_max_ns.max(sl.0);
            }
            return;
        }
        let ms = self.epoch_ms + at.0 / 1_000_000;
        let prio = if self.prio_values {
            format!("0x{:04x}", prio.to_raw())
        } else {
            u8::from(prio != self.default_prio).to_string()
        };
        let offset = if self.offset { format!("{offset_bytes}, ") } else { String::new() };
        for (kind, _, w) in &mut self.files {
            let value = match kind {
                Kind::Lat => lat,
                Kind::Clat => clat.0,
                Kind::Slat => match slat {
                    Some(s) => s.0,
                    None => continue,
                },
                // fio: the I/O's own rate, bytes over its completion latency, in KB/s
                Kind::Bw => (u64::from(bytes) * 1_000_000).checked_div(clat.0).unwrap_or(0),
                Kind::Iops => 1,
            };
            if let Err(e) = writeln!(w, "{ms}, {value}, {d}, {bytes}, {offset}{prio}") {
                self.error.get_or_insert(e.to_string());
            }
        }
    }

    /// Writes the open window's lines (one per direction with I/O) and opens the next.
    fn flush_window(&mut self) {
        self.window += 1;
        let ms = self.epoch_ms + self.window * self.avg_ns / 1_000_000;
        let window_s = self.avg_ns as f64 / 1e9;
        let offset = if self.offset { "0, " } else { "" };
        for (d, s) in self.sums.iter().enumerate() {
            if s.ios == 0 {
                continue;
            }
            for (kind, _, w) in &mut self.files {
                let value = match kind {
                    Kind::Lat if self.max_value => s.lat_max_ns,
                    Kind::Clat if self.max_value => s.clat_max_ns,
                    Kind::Slat if s.slat_ios > 0 && self.max_value => s.slat_max_ns,
                    Kind::Lat => s.lat_ns / s.ios,
                    Kind::Clat => s.clat_ns / s.ios,
                    Kind::Slat if s.slat_ios > 0 => s.slat_ns / s.slat_ios,
                    Kind::Slat => continue,
                    Kind::Bw => (s.bytes as f64 / 1024.0 / window_s) as u64,
                    Kind::Iops => (s.ios as f64 / window_s) as u64,
                };
                if let Err(e) = writeln!(w, "{ms}, {value}, {d}, 0, {offset}0") {
                    self.error.get_or_insert(e.to_string());
                }
            }
        }
        self.sums = [WindowSums::default(); 3];
    }

    /// Writes what is buffered and closes the files; the first write error. As in fio, a
    /// window is written when a later I/O completes, so the last one never is.
    pub fn finish(mut self: Box<Self>) -> Result<(), String> {
        let hist = self.hist.as_mut().map(|h| (&h.path, &mut h.out));
        for (path, w) in self.files.iter_mut().map(|(_, p, w)| (&*p, w)).chain(hist) {
            if let Err(e) = w.flush().and_then(|()| w.get_mut().close()) {
                self.error.get_or_insert(format!("{}: {e}", path.display()));
            }
        }
        match self.error {
            Some(e) => Err(format!("writing a log file: {e}")),
            None => Ok(()),
        }
    }
}

/// fio's `write_iolog` for one job clone: version 3 iolog lines, `TIME_US FILE ACTION
/// [OFFSET LENGTH]`, times since the run started, offsets within the file, one line per
/// I/O as it is issued. A clone with several files names each (fio opens each on its
/// first I/O and closes it when done; here all open at the start and close at the end).
pub struct IssueLog {
    path: PathBuf,
    /// Each of the clone's files, and where it starts on the (simulated) device: offsets
    /// are logged relative to it, as fio logs file offsets.
    files: Vec<(String, u64)>,
    out: BufWriter<File>,
    error: Option<String>,
    /// The offset of the last read, write or trim logged: fio logs a flush with the
    /// offset its reused io_u last carried (`sync 12288 0` after a write at 12288).
    last_offset: u64,
}

impl IssueLog {
    /// Creates (or truncates) `path` and writes the header and each file's `add` and
    /// `open` lines; `files` are (name, start on the device). Boxed, as [`IoLogs`].
    pub fn create(path: &Path, files: Vec<(String, u64)>) -> Result<Box<IssueLog>, String> {
        let file = File::create(path).map_err(|e| format!("cannot create iolog '{}': {e}", path.display()))?;
        let mut log = Box::new(IssueLog {
            path: path.to_path_buf(),
            files,
            out: BufWriter::new(file),
            error: None,
            last_offset: 0,
        });
        let mut header = writeln!(log.out, "fio version 3 iolog");
        for (name, _) in &log.files {
            header = header.and_then(|()| writeln!(log.out, "0 {name} add"));
        }
        for (name, _) in &log.files {
            header = header.and_then(|()| writeln!(log.out, "0 {name} open"));
        }
        log.note(header);
        Ok(log)
    }

    /// Keeps the first write error (reported by [`finish`](Self::finish)).
    fn note(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written {
            self.error.get_or_insert(e.to_string());
        }
    }

    /// One I/O to the clone's file `file` issued at `now` (since the run started).
    pub fn issue(&mut self, now: Nanos, op: Op, file: u16, offset_bytes: u64, len_bytes: u32) {
        let action = op.fio_name();
        let (name, start) = &self.files[usize::from(file).min(self.files.len() - 1)];
        let offset = if op == Op::Flush { self.last_offset } else { offset_bytes.saturating_sub(*start) };
        self.last_offset = offset;
        let written = writeln!(self.out, "{} {name} {action} {offset} {len_bytes}", now.0 / 1_000);
        self.note(written);
    }

    /// Writes the `close` lines at `end` and flushes; the first write error.
    pub fn finish(mut self, end: Nanos) -> Result<(), String> {
        let mut closed = Ok(());
        for (name, _) in &self.files {
            closed = closed.and_then(|()| writeln!(self.out, "{} {name} close", end.0 / 1_000));
        }
        let closed = closed.and_then(|()| self.out.flush());
        self.note(closed);
        match self.error {
            Some(e) => Err(format!("writing iolog '{}': {e}", self.path.display())),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BE4: IoPrio = IoPrio::be(4);

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nvsched-iolog-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn read(dir: &Path, name: &str) -> Vec<String> {
        std::fs::read_to_string(dir.join(name)).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn issue_log_is_fios_version_3_iolog() {
        let dir = temp_dir("issue");
        let path = dir.join("w.iolog");
        let mut log = IssueLog::create(&path, vec![("f.0.0".into(), 1 << 20)]).unwrap();
        log.issue(Nanos(1_500), Op::Read, 0, (1 << 20) + 8192, 4096);
        log.issue(Nanos(2_600_000), Op::Write, 0, (1 << 20) + 12288, 8192);
        // a flush carries the last I/O's offset, as in fio's logs
        log.issue(Nanos(3_000_000), Op::Flush, 0, 0, 0);
        log.finish(Nanos(4_000_999)).unwrap();
        let lines = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            lines,
            "fio version 3 iolog\n0 f.0.0 add\n0 f.0.0 open\n1 f.0.0 read 8192 4096\n\
             2600 f.0.0 write 12288 8192\n3000 f.0.0 sync 12288 0\n4000 f.0.0 close\n"
        );
        // several files: each is named, with offsets within it
        let mut log = IssueLog::create(&path, vec![("a".into(), 0), ("b".into(), 1 << 20)]).unwrap();
        log.issue(Nanos(1_000), Op::Write, 1, (1 << 20) + 4096, 4096);
        log.issue(Nanos(2_000), Op::Write, 0, 4096, 4096);
        log.finish(Nanos(3_000)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "fio version 3 iolog\n0 a add\n0 b add\n0 a open\n0 b open\n1 b write 4096 4096\n\
             2 a write 4096 4096\n3 a close\n3 b close\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn per_io_lines_in_fios_format() {
        let dir = temp_dir("per-io");
        let req =
            LogRequest { lat: Some("j".into()), bw: Some("j".into()), iops: Some("j".into()), ..Default::default() };
        let mut logs = IoLogs::create(&req, 2, &dir, BE4).unwrap().unwrap();
        logs.record(Nanos(1_500_000), Op::Read, 4096, 8192, BE4, Some(Nanos(2_000)), Nanos(248_536));
        logs.record(Nanos(2_100_000), Op::Write, 8192, 0, IoPrio::rt(0), None, Nanos(100_000));
        logs.finish().unwrap();
        assert_eq!(read(&dir, "j_lat.2.log"), ["1, 250536, 0, 4096, 0", "2, 100000, 1, 8192, 1"]);
        assert_eq!(read(&dir, "j_clat.2.log"), ["1, 248536, 0, 4096, 0", "2, 100000, 1, 8192, 1"]);
        assert_eq!(read(&dir, "j_slat.2.log"), ["1, 2000, 0, 4096, 0"], "a sync write has no slat");
        // fio 3.33 logged 16480 for a 4 KiB read of 248536 ns completion latency
        assert_eq!(read(&dir, "j_bw.2.log"), ["1, 16480, 0, 4096, 0", "2, 81920, 1, 8192, 1"]);
        assert_eq!(read(&dir, "j_iops.2.log"), ["1, 1, 0, 4096, 0", "2, 1, 1, 8192, 1"]);
        // log_unix_epoch: the same times from the Unix time the statistics start at
        let mut logs = IoLogs::create(&LogRequest { lat: Some("u".into()), ..req }, 1, &dir, BE4).unwrap().unwrap();
        logs.set_epoch_ms(1_700_000_000_000);
        logs.record(Nanos(1_500_000), Op::Read, 4096, 8192, BE4, None, Nanos(1_000));
        logs.finish().unwrap();
        assert_eq!(read(&dir, "u_clat.1.log"), ["1700000000001, 1000, 0, 4096, 0"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `write_hist_log`: a line per direction once an interval has passed, with the
    /// counts since that direction's last line in fio's 1856 buckets, merged by
    /// `log_hist_coarseness`.
    #[test]
    fn histogram_lines_count_each_interval_in_fios_buckets() {
        let dir = temp_dir("hist");
        let req = LogRequest { hist: Some("h".into()), hist_msec: 100, hist_coarseness: 2, ..Default::default() };
        let mut logs = IoLogs::create(&req, 1, &dir, BE4).unwrap().unwrap();
        let ms = Nanos::from_ms;
        for (at, clat) in [(10, 5_000), (50, 5_000), (99, 200_000), (100, 5_000), (150, 5_000), (230, 5_000)] {
            logs.record(ms(at), Op::Read, 4096, 0, BE4, None, Nanos(clat));
        }
        logs.record(ms(120), Op::Write, 8192, 0, BE4, None, Nanos(10_000)); // its first line waits
        logs.finish().unwrap();
        let lines = read(&dir, "h_clat_hist.1.log");
        let rows: Vec<Vec<u64>> = lines.iter().map(|l| l.split(", ").map(|f| f.parse().unwrap()).collect()).collect();
        assert_eq!(rows.len(), 2, "{lines:?}");
        for row in &rows {
            assert_eq!(row.len(), 3 + 1856 / 4);
        }
        let column = |clat: u64| crate::hist::value_to_index(clat) / 4;
        assert_eq!(rows[0][..3], [100, 0, 4096]);
        assert_eq!(
            (rows[0][3 + column(5_000)], rows[0][3 + column(200_000)], rows[0][3..].iter().sum::<u64>()),
            (3, 1, 4)
        );
        assert_eq!(rows[1][..3], [230, 0, 4096], "the interval after 100 ms: 100-200 ms, written at 230");
        assert_eq!(rows[1][3..].iter().sum::<u64>(), 2, "only what completed since the last line");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn log_prio_writes_each_ios_priority_value_as_fio_does() {
        let dir = temp_dir("prio");
        let req = LogRequest { lat: Some("p".into()), prio: true, ..Default::default() };
        let mut logs = IoLogs::create(&req, 1, &dir, IoPrio::be(3)).unwrap().unwrap();
        logs.record(Nanos(1_000_000), Op::Read, 4096, 0, IoPrio::rt(4), None, Nanos(144_431));
        logs.record(Nanos(1_000_000), Op::Read, 4096, 0, IoPrio::be(3), None, Nanos(178_525));
        logs.finish().unwrap();
        // fio 3.33, log_prio=1, prioclass=2 prio=3 with cmdprio_class=1 cmdprio=4
        assert_eq!(read(&dir, "p_clat.1.log"), ["1, 144431, 0, 4096, 0x2004", "1, 178525, 0, 4096, 0x4003"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn windows_average_per_direction_and_offsets_on_request() {
        let dir = temp_dir("windows");
        let req = LogRequest { lat: Some("w".into()), bw: Some("w".into()), avg_msec: 200, ..Default::default() };
        let mut logs = IoLogs::create(&req, 1, &dir, BE4).unwrap().unwrap();
        for i in 0..100u64 {
            logs.record(Nanos(i * 2_000_000), Op::Read, 4096, 0, BE4, None, Nanos(100_000 + i));
        }
        logs.record(Nanos(150_000_000), Op::Write, 4096, 0, BE4, None, Nanos(50_000));
        // the next window's first I/O writes the first window; the last is never written
        logs.record(Nanos(200_000_000), Op::Read, 4096, 0, BE4, None, Nanos(50_000));
        logs.finish().unwrap();
        // 100 reads in the first 200 ms: 2000 KiB/s; mean clat 100049.5 -> 100049
        assert_eq!(read(&dir, "w_bw.1.log"), ["200, 2000, 0, 0, 0", "200, 20, 1, 0, 0"]);
        assert_eq!(read(&dir, "w_clat.1.log"), ["200, 100049, 0, 0, 0", "200, 50000, 1, 0, 0"]);
        // log_max_value: the window's largest latency; the bandwidth line keeps the rate
        let req = LogRequest {
            lat: Some("m".into()),
            bw: Some("m".into()),
            avg_msec: 200,
            max_value: true,
            ..Default::default()
        };
        let mut logs = IoLogs::create(&req, 1, &dir, BE4).unwrap().unwrap();
        for i in 0..101u64 {
            logs.record(Nanos(i * 2_000_000), Op::Read, 4096, 0, BE4, None, Nanos(100_000 + i));
        }
        logs.finish().unwrap();
        assert_eq!(read(&dir, "m_clat.1.log"), ["200, 100099, 0, 0, 0"]);
        assert_eq!(read(&dir, "m_bw.1.log"), ["200, 2000, 0, 0, 0"]);
        let req = LogRequest { lat: Some("o".into()), offset: true, ..Default::default() };
        let mut logs = IoLogs::create(&req, 1, &dir, BE4).unwrap().unwrap();
        logs.record(Nanos(1_000_000), Op::Read, 4096, 1_011_712, BE4, None, Nanos(897_454));
        logs.finish().unwrap();
        assert_eq!(read(&dir, "o_clat.1.log"), ["1, 897454, 0, 4096, 1011712, 0"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn per_job_logs_off_appends_every_job_to_one_file() {
        let dir = temp_dir("shared");
        std::fs::write(dir.join("s_iops.log"), "from an earlier run\n").unwrap();
        let req = LogRequest { iops: Some("s".into()), per_job: false, ..Default::default() };
        let mut a = IoLogs::create(&req, 1, &dir, BE4).unwrap().unwrap();
        let mut b = IoLogs::create(&req, 2, &dir, BE4).unwrap().unwrap();
        b.record(Nanos(2_000_000), Op::Write, 8192, 0, BE4, None, Nanos(10_000));
        a.record(Nanos(1_000_000), Op::Read, 4096, 0, BE4, None, Nanos(10_000));
        a.finish().unwrap();
        b.finish().unwrap();
        // fio appends each job's lines when it finishes, after what was there
        assert_eq!(read(&dir, "s_iops.log"), ["from an earlier run", "1, 1, 0, 4096, 0", "2, 1, 1, 8192, 0"]);
        assert!(!dir.join("s_iops.1.log").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_file() {
        let req = LogRequest { iops: Some("x".into()), ..Default::default() };
        let err = IoLogs::create(&req, 1, Path::new("/nonexistent/dir"), BE4).err().unwrap();
        assert!(err.contains("/nonexistent/dir/x_iops.1.log"), "{err}");
    }
}
