//! Block traces for replay (`read_iolog=`): fio's iolog v2/v3, DiskSim ASCII (MQSim's
//! nanosecond variant and DiskSim's milliseconds), SPC/UMass CSV, MSR Cambridge CSV,
//! Alibaba's and Tencent's cloud block traces (CSV), FIU's text, blktrace's binary
//! events, blkparse text and the kernel's ftrace block events. Each becomes one list of
//! records with times relative to the first record; where a record lands in the job's
//! file is the replaying driver's business ([`Trace::device_spans`], [`place`]).

mod blktrace;

/// The bytes of one blktrace event without its payload (a merged trace's events have none).
pub use blktrace::EVENT_BYTES as BLKTRACE_EVENT_BYTES;
use blktrace::{Action, ByteOrder, DepthProbe, Events, MergeInput, Stop};
use nvsched_core::{IoPrio, Op, PrioClass};
use std::fmt;
use std::path::{Path, PathBuf};

const SECTOR_BYTES: u64 = 512;
/// Each trace device's space is rounded up to this when devices are laid end to end.
const DEVICE_ALIGN_BYTES: u64 = 1 << 20;

/// The formats [`load_trace`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// fio's `fio version 2 iolog` / `fio version 3 iolog` (v3 times in microseconds).
    Fio,
    /// DiskSim ASCII with integer nanoseconds (MQSim's traces):
    /// `time_ns device start_sector size_sectors flags` (flags bit 0: 1 = read).
    DisksimNs,
    /// DiskSim ASCII with (fractional) milliseconds, as DiskSim itself writes it.
    DisksimMs,
    /// SPC / UMass: `ASU,LBA_sector,size_bytes,opcode,time_s[,...]`.
    Spc,
    /// MSR Cambridge: `filetime,host,disk,Read|Write,offset_bytes,size_bytes,response`.
    Msr,
    /// Alibaba Cloud's block traces (2020): `device_id,R|W,offset_bytes,length_bytes,time_us`.
    Alibaba,
    /// Tencent CBS block traces (SNIA): `time_s,offset_sectors,size_sectors,0|1,volume`
    /// (1 = write). Times are whole seconds: the requests of one second are spread evenly
    /// over it.
    Tencent,
    /// FIU block traces (SNIA): `time_ns pid process sector sectors R|W major minor md5`.
    Fiu,
    /// blkparse's default text output; the `Q` (queued) events are the requests.
    Blkparse,
    /// blktrace's binary events (version 7, either byte order), as fio replays them; read
    /// as blkparse would print them.
    Blktrace,
    /// The kernel's ftrace text (`/sys/kernel/tracing/trace`) with block events: the
    /// first of `block_bio_queue` (as blkparse's `Q`), `block_rq_insert` or
    /// `block_rq_issue` seen is the kind taken; the others are left out.
    Ftrace,
}

impl TraceFormat {
    pub const NAMES: &'static str =
        "auto, fio, disksim, disksim-ms, spc, msr, alibaba, tencent, fiu, blktrace, blkparse, ftrace";

    /// `None` for `auto`.
    pub fn parse(name: &str) -> Result<Option<TraceFormat>, String> {
        Ok(Some(match name {
            "auto" => return Ok(None),
            "fio" => TraceFormat::Fio,
            "disksim" => TraceFormat::DisksimNs,
            "disksim-ms" => TraceFormat::DisksimMs,
            "spc" => TraceFormat::Spc,
            "msr" => TraceFormat::Msr,
            "alibaba" => TraceFormat::Alibaba,
            "tencent" => TraceFormat::Tencent,
            "fiu" => TraceFormat::Fiu,
            "blkparse" => TraceFormat::Blkparse,
            "blktrace" => TraceFormat::Blktrace,
            "ftrace" => TraceFormat::Ftrace,
            _ => return Err(format!("'{name}' is not a trace format; accepted: {}", TraceFormat::NAMES)),
        }))
    }

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Fio => "fio",
            TraceFormat::DisksimNs => "disksim",
            TraceFormat::DisksimMs => "disksim-ms",
            TraceFormat::Spc => "spc",
            TraceFormat::Msr => "msr",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Fiu => "fiu",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Blktrace => "blktrace",
            TraceFormat::Ftrace => "ftrace",
        }
    }

    /// The format a trace's first record line is written in, if it is one of ours.
    fn detect(line: &str) -> Option<TraceFormat> {
        if line.starts_with("fio version ") {
            return Some(TraceFormat::Fio);
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        // ftrace: "TASK-PID [CPU] FLAGS SECONDS: event: ...", a block event or any other
        let cpu =
            tokens.iter().position(|t| t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).is_some_and(is_digits));
        let stamp = cpu.and_then(|c| tokens.get(c + 2)).and_then(|t| t.strip_suffix(':'));
        if FTRACE_EVENTS.iter().any(|e| line.contains(e)) || stamp.is_some_and(|t| t.parse::<f64>().is_ok()) {
            return Some(TraceFormat::Ftrace);
        }
        let is_dev = |t: &str| t.split_once(',').is_some_and(|(a, b)| is_digits(a) && is_digits(b));
        if tokens.len() >= 7 && is_dev(tokens[0]) && tokens[3].contains('.') {
            return Some(TraceFormat::Blkparse);
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() >= 7 && ["read", "write"].contains(&fields[3].to_ascii_lowercase().as_str()) {
            return Some(TraceFormat::Msr);
        }
        if fields.len() >= 5 && ["r", "w"].contains(&fields[3].to_ascii_lowercase().as_str()) {
            return Some(TraceFormat::Spc);
        }
        if line == ALIBABA_HEADER || (fields.len() == 5 && ["R", "W"].contains(&fields[1]) && is_digits(fields[4])) {
            return Some(TraceFormat::Alibaba);
        }
        if line == TENCENT_HEADER
            || (fields.len() == 5 && fields.iter().all(|f| is_digits(f)) && ["0", "1"].contains(&fields[3]))
        {
            return Some(TraceFormat::Tencent);
        }
        if tokens.len() >= 8 && is_digits(tokens[0]) && ["R", "W"].contains(&tokens[5]) {
            return Some(TraceFormat::Fiu);
        }
        if tokens.len() == 5 && tokens.iter().all(|t| t.parse::<f64>().is_ok()) {
            return Some(if tokens[0].contains('.') { TraceFormat::DisksimMs } else { TraceFormat::DisksimNs });
        }
        None
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Since the trace's first record.
    pub at_ns: u64,
    /// Index into [`Trace::devices`].
    pub device: u32,
    pub op: Op,
    /// In the trace device's own space.
    pub offset_bytes: u64,
    pub len_bytes: u32,
    /// The I/O priority the trace gives it (ftrace's `block_rq_*` events), if any.
    pub prio: Option<IoPrio>,
}

/// A trace read into memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub path: PathBuf,
    pub format: TraceFormat,
    pub records: Vec<TraceRecord>,
    /// The trace's device names (ASU, disk, file or maj,min), by first appearance.
    pub devices: Vec<String>,
    /// Per device: the end of its furthest request, bytes.
    pub extents_bytes: Vec<u64>,
    /// Per device: its lowest request's offset, rounded down to 1 MiB. A replay keeps the
    /// distances between requests but starts there: a trace of a file at 100 GB into a
    /// disk needs no 100 GB file.
    pub lowest_bytes: Vec<u64>,
    /// Records earlier than the one before them: replayed in file order, at their
    /// predecessor's time.
    pub reordered: u64,
    /// Records whose offset or length was not a multiple of 512 bytes (widened to it).
    pub realigned: u64,
    /// Data records of length 0 (left out).
    pub empty: u64,
    /// Which directions occur, by [`Op::index`].
    pub has_op: [bool; 4],
    /// The longest request, bytes.
    pub max_len_bytes: u32,
    /// The I/O priorities the trace's requests carry, in order of first appearance.
    pub prios: Vec<IoPrio>,
    /// blktrace and blkparse: the depth the trace was captured at, as fio guesses it for a
    /// blktrace (requests queued, less merged, between completions, at the deepest; 1 to
    /// 1024). A replay that does not set `iodepth` takes it.
    pub queue_depth: Option<u32>,
    /// blktrace: the bytes of an event cut off at the file's end (a capture stopped while
    /// writing); the events before it stand.
    pub cut_off_bytes: u64,
}

/// A trace that cannot be read, with the file and line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path.display(), self.message)
        }
    }
}
impl std::error::Error for TraceError {}

/// How a trace's devices share the job's region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceMapping {
    /// Each device gets its own part, in order of first appearance (fio replays each
    /// device's requests onto that device).
    Split,
    /// Every device's offsets land in the one region (fio's `replay_redirect`).
    Shared,
}

/// What happens to a request beyond its device's part of the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outside {
    /// Left out, and counted.
    Drop,
    /// Its offset is taken modulo the part's size, and counted.
    Wrap,
}

/// Where one trace device lands in the job's region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSpan {
    pub base_bytes: u64,
    pub len_bytes: u64,
    /// The trace offset that lands at `base_bytes`.
    pub origin_bytes: u64,
}

/// Where a record lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Offset within the job's region.
    At(u64),
    Wrapped(u64),
    Dropped,
}

impl Trace {
    /// fio's `replay_scale` and `replay_align`: every offset divided by `divisor`, then
    /// aligned down to `align_bytes`; where each device starts and ends follows.
    pub fn rescale_offsets(&mut self, divisor: u64, align_bytes: u64) {
        self.extents_bytes.iter_mut().for_each(|e| *e = 0);
        self.lowest_bytes.iter_mut().for_each(|l| *l = u64::MAX);
        for r in &mut self.records {
            if r.op == Op::Flush {
                continue;
            }
            r.offset_bytes = r.offset_bytes / divisor / align_bytes * align_bytes;
            note_extent(&mut self.extents_bytes, &mut self.lowest_bytes, r);
        }
        settle_lowest(&mut self.lowest_bytes);
    }

    /// Bytes the job's region needs for nothing to fall outside it.
    pub fn needed_bytes(&self, mapping: DeviceMapping) -> u64 {
        match mapping {
            DeviceMapping::Split => (0..self.devices.len()).map(|d| self.wanted_bytes(mapping, d)).sum(),
            DeviceMapping::Shared => (0..self.devices.len()).map(|d| self.wanted_bytes(mapping, d)).max().unwrap_or(0),
        }
    }

    /// The trace offset that lands at the start of device `d`'s part: its own lowest, or
    /// with one space for all, the lowest of any.
    fn origin_bytes(&self, mapping: DeviceMapping, d: usize) -> u64 {
        match mapping {
            DeviceMapping::Split => self.lowest_bytes[d],
            DeviceMapping::Shared => self.lowest_bytes.iter().copied().min().unwrap_or(0),
        }
    }

    /// Bytes device `d`'s part needs, from its origin to its furthest request (1 MiB
    /// aligned).
    fn wanted_bytes(&self, mapping: DeviceMapping, d: usize) -> u64 {
        let span = self.extents_bytes[d].saturating_sub(self.origin_bytes(mapping, d));
        span.div_ceil(DEVICE_ALIGN_BYTES) * DEVICE_ALIGN_BYTES
    }

    /// Each device's part of a region of `region_bytes`: laid end to end as they need
    /// when they fit, else shrunk in proportion (4 KiB aligned).
    pub fn device_spans(&self, mapping: DeviceMapping, region_bytes: u64) -> Vec<DeviceSpan> {
        if mapping == DeviceMapping::Shared {
            let origin_bytes = self.origin_bytes(mapping, 0);
            return vec![DeviceSpan { base_bytes: 0, len_bytes: region_bytes, origin_bytes }; self.devices.len()];
        }
        let needed = self.needed_bytes(mapping);
        let mut base = 0;
        (0..self.devices.len())
            .map(|d| {
                let want = self.wanted_bytes(mapping, d);
                let len = if needed <= region_bytes {
                    want
                } else {
                    ((region_bytes as u128 * want as u128 / needed as u128) as u64) / 4096 * 4096
                };
                let span = DeviceSpan { base_bytes: base, len_bytes: len, origin_bytes: self.origin_bytes(mapping, d) };
                base += len;
                span
            })
            .collect()
    }
}

/// What a trace holds, for `nvsched trace`: per direction, per device, and how its
/// requests follow one another.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub format: &'static str,
    pub records: u64,
    /// From the first record to the last.
    pub span_ns: u64,
    /// Read, write, trim, flush (by [`Op::index`]).
    pub directions: Vec<DirectionSummary>,
    pub devices: Vec<DeviceSummary>,
    /// Data requests (reads and writes) that start where the previous one on their device
    /// ended.
    pub sequential_pct: f64,
    pub queue_depth: Option<u32>,
    pub reordered: u64,
    pub realigned: u64,
    pub empty: u64,
    pub cut_off_bytes: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DirectionSummary {
    pub direction: &'static str,
    pub requests: u64,
    pub bytes: u64,
    /// The most common sizes, most common first (at most 4): (bytes, share of this
    /// direction's requests in percent).
    pub common_sizes: Vec<(u32, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSummary {
    pub name: String,
    pub requests: u64,
    /// Its lowest request (1 MiB aligned) and the end of its furthest.
    pub lowest_bytes: u64,
    pub extent_bytes: u64,
}

impl Trace {
    pub fn summary(&self) -> Summary {
        let mut counts = [0u64; 4];
        let mut bytes = [0u64; 4];
        let mut sizes: [std::collections::BTreeMap<u32, u64>; 4] = Default::default();
        let mut per_device = vec![0u64; self.devices.len()];
        let mut last_end: Vec<Option<u64>> = vec![None; self.devices.len()];
        let (mut data, mut sequential) = (0u64, 0u64);
        for r in &self.records {
            let i = r.op.index();
            counts[i] += 1;
            bytes[i] += u64::from(r.len_bytes);
            if r.op != Op::Flush {
                *sizes[i].entry(r.len_bytes).or_default() += 1;
            }
            let d = r.device as usize;
            per_device[d] += 1;
            if r.op.is_data() {
                data += 1;
                sequential += u64::from(last_end[d] == Some(r.offset_bytes));
                last_end[d] = Some(r.offset_bytes + u64::from(r.len_bytes));
            }
        }
        let directions = [Op::Read, Op::Write, Op::Discard, Op::Flush]
            .into_iter()
            .map(|op| {
                let i = op.index();
                let mut common: Vec<(u32, u64)> = sizes[i].iter().map(|(s, n)| (*s, *n)).collect();
                common.sort_by_key(|(size, n)| (std::cmp::Reverse(*n), *size));
                let share = |n: u64| (n as f64 * 1000.0 / counts[i].max(1) as f64).round() / 10.0;
                DirectionSummary {
                    direction: match op {
                        Op::Discard => "trim",
                        other => other.name(),
                    },
                    requests: counts[i],
                    bytes: bytes[i],
                    common_sizes: common.into_iter().take(4).map(|(size, n)| (size, share(n))).collect(),
                }
            })
            .collect();
        let devices = (0..self.devices.len())
            .map(|d| DeviceSummary {
                name: self.devices[d].clone(),
                requests: per_device[d],
                lowest_bytes: self.lowest_bytes[d],
                extent_bytes: self.extents_bytes[d],
            })
            .collect();
        Summary {
            format: self.format.name(),
            records: self.records.len() as u64,
            span_ns: self.records.last().map_or(0, |r| r.at_ns),
            directions,
            devices,
            sequential_pct: (sequential as f64 * 1000.0 / data.max(1) as f64).round() / 10.0,
            queue_depth: self.queue_depth,
            reordered: self.reordered,
            realigned: self.realigned,
            empty: self.empty,
            cut_off_bytes: self.cut_off_bytes,
        }
    }
}

/// Widens `r`'s device to hold it: its furthest end, and its lowest offset (1 MiB aligned;
/// `u64::MAX` until a request is seen).
fn note_extent(extents_bytes: &mut [u64], lowest_bytes: &mut [u64], r: &TraceRecord) {
    let d = r.device as usize;
    extents_bytes[d] = extents_bytes[d].max(r.offset_bytes + u64::from(r.len_bytes));
    lowest_bytes[d] = lowest_bytes[d].min(r.offset_bytes / DEVICE_ALIGN_BYTES * DEVICE_ALIGN_BYTES);
}

/// A device with flushes only has no lowest request: it starts at 0.
fn settle_lowest(lowest_bytes: &mut [u64]) {
    lowest_bytes.iter_mut().filter(|l| **l == u64::MAX).for_each(|l| *l = 0);
}

/// Where `r` lands, given its device's span.
pub fn place(r: &TraceRecord, span: DeviceSpan, outside: Outside) -> Placement {
    let len = u64::from(r.len_bytes);
    let offset = r.offset_bytes.saturating_sub(span.origin_bytes);
    if offset + len <= span.len_bytes {
        return Placement::At(span.base_bytes + offset);
    }
    match outside {
        Outside::Wrap if len <= span.len_bytes => {
            let mut off = offset % span.len_bytes;
            if off + len > span.len_bytes {
                off = (span.len_bytes - len) / SECTOR_BYTES * SECTOR_BYTES;
            }
            Placement::Wrapped(span.base_bytes + off)
        }
        _ => Placement::Dropped,
    }
}

/// Reads a trace file: blktrace's binary events, told by their first word, or text line
/// by line; `format` `None` detects the text's format from its first record line.
pub fn load_trace(path: &Path, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
    use std::io::BufRead;
    let err = |line: usize, message: String| TraceError { path: path.to_path_buf(), line, message };
    let cannot = |line: usize, e: std::io::Error| err(line, format!("cannot read trace: {e}"));
    let (file, first) = open_sniffed(path).map_err(|e| cannot(0, e))?;
    match (first.and_then(ByteOrder::of_magic), format) {
        (Some(order), None | Some(TraceFormat::Blktrace)) => {
            read_blktrace(Events::new(file, order), path).map_err(|m| err(0, m))
        }
        (Some(_), Some(text)) => Err(err(
            0,
            format!("the file holds blktrace's binary events, not {} text; set trace_format=blktrace (or auto)", text.name()),
        )),
        (None, Some(TraceFormat::Blktrace)) => Err(err(
            0,
            format!(
                "not blktrace's binary events: a blktrace file begins with the bytes 07 74 61 65 (or 65 61 74 07), this one with {}",
                first.unwrap_or_default().map(|b| format!("{b:02x}")).join(" ")
            ),
        )),
        (None, _) => {
            let lines = file.lines();
            let line_error = |line: usize, e: std::io::Error| match e.kind() {
                std::io::ErrorKind::InvalidData => err(
                    line,
                    "this line is not UTF-8 text: the file is neither a text trace nor blktrace's binary events".into(),
                ),
                _ => cannot(line, e),
            };
            read_lines(lines.enumerate().map(|(i, l)| l.map_err(|e| line_error(i + 1, e))), path, format)
        }
    }
}

/// Opens `path` for reading from its start, with its first 4 bytes (`None` if it is
/// shorter), by which a blktrace is told from text.
fn open_sniffed(path: &Path) -> std::io::Result<(std::io::BufReader<std::fs::File>, Option<[u8; 4]>)> {
    use std::io::{BufReader, Read, Seek};
    let mut file = BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut first = [0u8; 4];
    let first = file.read_exact(&mut first).ok().map(|()| first);
    file.rewind()?;
    Ok((file, first))
}

/// Reads blktrace events already in memory (a merge), named `path` in errors.
pub fn parse_blktrace(bytes: &[u8], path: &Path) -> Result<Trace, TraceError> {
    let err = |message: String| TraceError { path: path.to_path_buf(), line: 0, message };
    let order = bytes.get(..4).and_then(|b| ByteOrder::of_magic(b.try_into().expect("4 bytes")));
    let order = order.ok_or_else(|| err("not blktrace's binary events".into()))?;
    read_blktrace(Events::new(bytes, order), path).map_err(err)
}

/// fio's `merge_blktrace_file`: the requests of the blktraces at `paths` in one blktrace,
/// earliest first; each input laid end to end `iterations[i]` times and its times scaled
/// by `scalars_pct[i]`% (see `blktrace::merge`).
pub fn merge_blktraces(paths: &[PathBuf], scalars_pct: &[u64], iterations: &[u32]) -> Result<Vec<u8>, TraceError> {
    type Input = std::io::BufReader<std::fs::File>;
    let err = |i: usize, message: String| TraceError { path: paths[i].clone(), line: 0, message };
    let open = |i: usize| -> Result<Events<Input>, TraceError> {
        let (file, first) = open_sniffed(&paths[i]).map_err(|e| err(i, format!("cannot read trace: {e}")))?;
        let order = first.and_then(ByteOrder::of_magic);
        let order = order.ok_or_else(|| err(i, "merge_blktrace_file merges blktraces, and this is not one".into()))?;
        Ok(Events::new(file, order))
    };
    let mut inputs = Vec::with_capacity(paths.len());
    for i in 0..paths.len() {
        inputs.push(MergeInput { events: open(i)?, scalar_pct: scalars_pct[i], iterations: iterations[i] });
    }
    let reopen = |i: usize| open(i).map_err(|e| Stop::Invalid(e.message));
    blktrace::merge(&mut inputs, reopen).map_err(|(i, stop)| err(i, stop.to_string()))
}

/// A blktrace's requests, as blkparse would print them and [`parse_blkparse`] reads them:
/// the queue (`Q`) events other than passthrough commands; every event but messages feeds
/// the depth probe.
fn read_blktrace(mut events: Events<impl std::io::Read>, path: &Path) -> Result<Trace, String> {
    let mut b = Builder::new(path.to_path_buf(), TraceFormat::Blktrace);
    let mut probe = DepthProbe::default();
    loop {
        let (number, start_byte) = (events.count + 1, events.offset_bytes);
        let event = match events.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(Stop::CutOff { event_bytes }) => {
                b.trace.cut_off_bytes = event_bytes;
                break;
            }
            Err(stop) => return Err(stop.to_string()),
        };
        if event.is_notify() {
            continue;
        }
        let (preflush, main) = event.rwbs();
        probe.note(event.action(), main);
        if event.action() != Action::Queue || event.is_passthrough() {
            continue;
        }
        let device = event.device_name();
        let line = block_line(event.time_ns, &device, preflush, main, || {
            let offset_bytes = event.sector.checked_mul(SECTOR_BYTES).ok_or("its sector is too large")?;
            Ok((offset_bytes, u64::from(event.bytes), None))
        });
        line.and_then(|line| b.take(line)).map_err(|m| format!("event {number} (byte {start_byte}): {m}"))?;
    }
    b.trace.queue_depth = Some(probe.depth());
    b.finish()
}

/// Reads trace text (named `path` in errors).
pub fn parse_trace(text: &str, path: &Path, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
    read_lines(text.lines().map(|l| Ok(l.to_string())), path, format)
}

fn read_lines(
    lines: impl Iterator<Item = Result<String, TraceError>>,
    path: &Path,
    format: Option<TraceFormat>,
) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError { path: path.to_path_buf(), line, message };
    let mut b: Option<Builder> = None;
    let mut fio_version = 0;
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let line = raw.trim();
        let at = i + 1;
        if line.is_empty() || (line.starts_with('#') && b.as_ref().is_none_or(|b| b.trace.format != TraceFormat::Fio)) {
            continue;
        }
        let b = match &mut b {
            Some(b) => b,
            None => {
                let format = match format {
                    Some(f) => f,
                    None => TraceFormat::detect(line).ok_or_else(|| {
                        let why = format!(
                            "cannot tell the trace's format from '{line}'; set trace_format= ({})",
                            TraceFormat::NAMES
                        );
                        err(at, why)
                    })?,
                };
                b.insert(Builder::new(path.to_path_buf(), format))
            }
        };
        let format = b.trace.format;
        if format == TraceFormat::Fio && fio_version == 0 {
            fio_version = match line {
                l if l.starts_with("fio version 2 iolog") => 2,
                l if l.starts_with("fio version 3 iolog") => 3,
                _ => {
                    let why = "a fio iolog starts with 'fio version 2 iolog' or 'fio version 3 iolog'";
                    return Err(err(at, why.into()));
                }
            };
            continue;
        }
        let parsed = match format {
            TraceFormat::Fio => parse_fio(line, fio_version),
            TraceFormat::DisksimNs | TraceFormat::DisksimMs => parse_disksim(line, format == TraceFormat::DisksimMs),
            TraceFormat::Spc => parse_spc(line),
            TraceFormat::Msr => parse_msr(line),
            TraceFormat::Alibaba => parse_alibaba(line),
            TraceFormat::Tencent => parse_tencent(line),
            TraceFormat::Fiu => parse_fiu(line),
            TraceFormat::Blkparse => parse_blkparse(line, b.depth_probe.get_or_insert_with(DepthProbe::default)),
            TraceFormat::Blktrace => Err("blktrace's events are binary, not lines of text".into()),
            TraceFormat::Ftrace => parse_ftrace(line, &mut b.ftrace_event),
        };
        parsed.and_then(|line| b.take(line)).map_err(|m| err(at, m))?;
    }
    let Some(mut b) = b else { return Err(err(0, "the trace has no records".into())) };
    if let Some(probe) = &b.depth_probe {
        b.trace.queue_depth = Some(probe.depth());
    }
    if b.trace.format == TraceFormat::Tencent {
        spread_within_seconds(&mut b.trace.records);
    }
    b.finish().map_err(|m| err(0, m))
}

/// Tencent's times are whole seconds: the requests of one second are spread evenly over
/// it, the k-th of n at k/n s, in file order (all at its start would be a burst the trace
/// does not show).
fn spread_within_seconds(records: &mut [TraceRecord]) {
    let mut start = 0;
    while start < records.len() {
        let second = records[start].at_ns;
        let n = records[start..].iter().take_while(|r| r.at_ns == second).count();
        for (k, r) in records[start..start + n].iter_mut().enumerate() {
            r.at_ns = second.saturating_add(k as u64 * 1_000_000_000 / n as u64);
        }
        start += n;
    }
}

/// What one line of a trace says.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    /// A request; `time_ns` `None` for fio v2 (no times: as soon as possible).
    /// `preflush`: a flush goes first (the block layer's `F` before the operation);
    /// `prio`: the priority the trace gives it.
    Request {
        time_ns: Option<u64>,
        device: &'a str,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        preflush: bool,
        prio: Option<IoPrio>,
    },
    /// fio v2's `wait`: later requests no earlier than this.
    WaitUntil(u64),
    /// Not a request (a file action, another blkparse event, a summary line).
    Other,
}

struct Builder {
    trace: Trace,
    first_ns: Option<u64>,
    /// The latest time so far (relative), which an earlier record is raised to.
    last_ns: u64,
    /// The latest time so far as the trace writes it.
    last_abs_ns: u64,
    /// ftrace: the block event taken as the requests, once one is seen.
    ftrace_event: Option<&'static str>,
    /// blkparse: the depth its events show.
    depth_probe: Option<DepthProbe>,
}

impl Builder {
    fn new(path: PathBuf, format: TraceFormat) -> Builder {
        Builder {
            trace: Trace {
                path,
                format,
                records: Vec::new(),
                devices: Vec::new(),
                extents_bytes: Vec::new(),
                lowest_bytes: Vec::new(),
                reordered: 0,
                realigned: 0,
                empty: 0,
                has_op: [false; 4],
                max_len_bytes: 0,
                prios: Vec::new(),
                queue_depth: None,
                cut_off_bytes: 0,
            },
            first_ns: None,
            last_ns: 0,
            last_abs_ns: 0,
            ftrace_event: None,
            depth_probe: None,
        }
    }

    /// Adds what a line (or event) says.
    fn take(&mut self, line: Line) -> Result<(), String> {
        match line {
            Line::Request { time_ns, device, op, offset_bytes, len_bytes, preflush, prio } => {
                if preflush {
                    self.push(time_ns, device, Op::Flush, 0, 0, prio)?
                }
                self.push(time_ns, device, op, offset_bytes, len_bytes, prio)
            }
            Line::WaitUntil(time_ns) => {
                self.wait_until(time_ns);
                Ok(())
            }
            Line::Other => Ok(()),
        }
    }

    fn finish(mut self) -> Result<Trace, String> {
        if self.trace.records.is_empty() {
            return Err(format!("no requests in the trace (read as {})", self.trace.format.name()));
        }
        settle_lowest(&mut self.trace.lowest_bytes);
        Ok(self.trace)
    }

    fn wait_until(&mut self, time_ns: u64) {
        self.last_ns = self.last_ns.max(time_ns);
    }

    fn push(
        &mut self,
        time_ns: Option<u64>,
        device: &str,
        op: Op,
        offset: u64,
        len: u64,
        prio: Option<IoPrio>,
    ) -> Result<(), String> {
        if op != Op::Flush && len == 0 {
            self.trace.empty += 1;
            return Ok(());
        }
        let t = &mut self.trace;
        let at_ns = match time_ns {
            None => self.last_ns,
            Some(abs) => {
                let first = *self.first_ns.get_or_insert(abs);
                if abs < self.last_abs_ns {
                    t.reordered += 1;
                }
                self.last_abs_ns = self.last_abs_ns.max(abs);
                abs.saturating_sub(first).max(self.last_ns)
            }
        };
        self.last_ns = at_ns;
        let (offset_bytes, len_bytes) = if op == Op::Flush {
            (0, 0)
        } else {
            let start = offset / SECTOR_BYTES * SECTOR_BYTES;
            let unaligned_end = offset.checked_add(len).filter(|e| *e <= u64::MAX - SECTOR_BYTES);
            let unaligned_end = unaligned_end.ok_or_else(|| format!("offset {offset} + length {len} is too large"))?;
            let end = unaligned_end.div_ceil(SECTOR_BYTES) * SECTOR_BYTES;
            if start != offset || end != unaligned_end {
                t.realigned += 1;
            }
            if end - start > crate::spec::MAX_BLOCK_BYTES {
                return Err(format!("a request of {len} bytes is larger than 64 MiB"));
            }
            (start, (end - start) as u32)
        };
        let index = match t.devices.iter().position(|d| d == device) {
            Some(i) => i,
            None => {
                t.devices.push(device.to_string());
                t.extents_bytes.push(0);
                t.lowest_bytes.push(u64::MAX);
                t.devices.len() - 1
            }
        };
        t.has_op[op.index()] = true;
        t.max_len_bytes = t.max_len_bytes.max(len_bytes);
        if let Some(p) = prio.filter(|p| !t.prios.contains(p)) {
            t.prios.push(p);
        }
        let record = TraceRecord { at_ns, device: index as u32, op, offset_bytes, len_bytes, prio };
        if op != Op::Flush {
            note_extent(&mut t.extents_bytes, &mut t.lowest_bytes, &record);
        }
        t.records.push(record);
        Ok(())
    }
}

fn number<T: std::str::FromStr>(field: &str, what: &str) -> Result<T, String> {
    field.trim().parse().map_err(|_| format!("{what} '{field}' is not a number"))
}

fn field<'a>(fields: &[&'a str], i: usize, what: &str, expected: &str) -> Result<&'a str, String> {
    fields.get(i).copied().ok_or_else(|| format!("no {what}; expected {expected}"))
}

/// Seconds (or another unit) as a float, to whole nanoseconds.
fn float_ns(field: &str, what: &str, ns_per_unit: f64) -> Result<u64, String> {
    let v: f64 = number(field, what)?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("{what} '{field}' is negative or not finite"));
    }
    Ok((v * ns_per_unit).round() as u64)
}

fn sectors(field: &str, what: &str) -> Result<u64, String> {
    let s: u64 = number(field, what)?;
    s.checked_mul(SECTOR_BYTES).ok_or_else(|| format!("{what} '{field}' is too large"))
}

fn parse_fio(line: &str, version: u32) -> Result<Line<'_>, String> {
    const EXPECTED_V3: &str = "'TIME_US FILE ACTION [OFFSET LENGTH]'";
    const EXPECTED_V2: &str = "'FILE ACTION [OFFSET LENGTH]'";
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let (time_ns, rest, expected) = if version == 3 {
        let t: u64 = number(field(&tokens, 0, "time", EXPECTED_V3)?, "time (us)")?;
        (Some(t.saturating_mul(1000)), &tokens[1..], EXPECTED_V3)
    } else {
        (None, &tokens[..], EXPECTED_V2)
    };
    let device = field(rest, 0, "file name", expected)?;
    let action = field(rest, 1, "action", expected)?;
    let op = match action {
        "add" | "open" | "close" => return Ok(Line::Other),
        "wait" if version == 2 => {
            let ms: u64 = number(field(rest, 2, "wait time", expected)?, "wait time (ms)")?;
            return Ok(Line::WaitUntil(ms.saturating_mul(1_000_000)));
        }
        "read" => Op::Read,
        "write" => Op::Write,
        "trim" => Op::Discard,
        "sync" | "datasync" => {
            return Ok(Line::Request {
                time_ns,
                device,
                op: Op::Flush,
                offset_bytes: 0,
                len_bytes: 0,
                preflush: false,
                prio: None,
            })
        }
        other => {
            return Err(format!(
                "'{other}' is not an iolog action (read, write, trim, sync, datasync, add, open, close)"
            ))
        }
    };
    let offset_bytes = number(field(rest, 2, "offset", expected)?, "offset")?;
    let len_bytes = number(field(rest, 3, "length", expected)?, "length")?;
    Ok(Line::Request { time_ns, device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_disksim(line: &str, millis: bool) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'TIME DEVICE SECTOR SECTORS FLAGS'";
    let t: Vec<&str> = line.split_whitespace().collect();
    let time_ns = if millis {
        float_ns(field(&t, 0, "time", EXPECTED)?, "time (ms)", 1e6)?
    } else {
        number(field(&t, 0, "time", EXPECTED)?, "time (ns)")?
    };
    let device = field(&t, 1, "device", EXPECTED)?;
    let offset_bytes = sectors(field(&t, 2, "start sector", EXPECTED)?, "start sector")?;
    let len_bytes = sectors(field(&t, 3, "size", EXPECTED)?, "size (sectors)")?;
    let flags: u64 = number(field(&t, 4, "flags", EXPECTED)?, "flags")?;
    let op = if flags & 1 == 1 { Op::Read } else { Op::Write };
    Ok(Line::Request { time_ns: Some(time_ns), device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_spc(line: &str) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'ASU,SECTOR,BYTES,OPCODE,SECONDS'";
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let device = field(&f, 0, "ASU", EXPECTED)?;
    let offset_bytes = sectors(field(&f, 1, "LBA", EXPECTED)?, "LBA (sectors)")?;
    let len_bytes = number(field(&f, 2, "size", EXPECTED)?, "size (bytes)")?;
    let op = match field(&f, 3, "opcode", EXPECTED)? {
        "r" | "R" => Op::Read,
        "w" | "W" => Op::Write,
        other => return Err(format!("opcode '{other}' is neither r nor w")),
    };
    let time_ns = float_ns(field(&f, 4, "timestamp", EXPECTED)?, "timestamp (s)", 1e9)?;
    Ok(Line::Request { time_ns: Some(time_ns), device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_msr(line: &str) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'FILETIME,HOST,DISK,Read|Write,OFFSET,SIZE,RESPONSE'";
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let ticks: u64 = number(field(&f, 0, "timestamp", EXPECTED)?, "timestamp (100 ns)")?;
    let kind = field(&f, 3, "type", EXPECTED)?;
    // host and disk together name the volume: the text between the first and third comma
    let commas: Vec<usize> = line.match_indices(',').map(|(i, _)| i).take(3).collect();
    let device = line[commas[0] + 1..commas[2]].trim();
    let op = match kind.to_ascii_lowercase().as_str() {
        "read" => Op::Read,
        "write" => Op::Write,
        _ => return Err(format!("type '{}' is neither Read nor Write", f[3])),
    };
    let offset_bytes = number(field(&f, 4, "offset", EXPECTED)?, "offset (bytes)")?;
    let len_bytes = number(field(&f, 5, "size", EXPECTED)?, "size (bytes)")?;
    Ok(Line::Request {
        time_ns: Some(ticks.saturating_mul(100)),
        device,
        op,
        offset_bytes,
        len_bytes,
        preflush: false,
        prio: None,
    })
}

/// `probe` counts the queue, merge and completion events.
/// The header line Alibaba's CSV may begin with (its README spells the last column so).
const ALIBABA_HEADER: &str = "device_id,opcode,offset,length,timestmap";
const TENCENT_HEADER: &str = "Timestamp,Offset,Size,IOType,VolumeID";

fn parse_alibaba(line: &str) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'DEVICE,R|W,OFFSET,LENGTH,TIME_US'";
    if line == ALIBABA_HEADER || line == "device_id,opcode,offset,length,timestamp" {
        return Ok(Line::Other);
    }
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let device = field(&f, 0, "device id", EXPECTED)?;
    let op = match field(&f, 1, "opcode", EXPECTED)? {
        "R" | "r" => Op::Read,
        "W" | "w" => Op::Write,
        other => return Err(format!("opcode '{other}' is neither R nor W")),
    };
    let offset_bytes = number(field(&f, 2, "offset", EXPECTED)?, "offset (bytes)")?;
    let len_bytes = number(field(&f, 3, "length", EXPECTED)?, "length (bytes)")?;
    let time_us: u64 = number(field(&f, 4, "timestamp", EXPECTED)?, "timestamp (us)")?;
    let time_ns = Some(time_us.saturating_mul(1000));
    Ok(Line::Request { time_ns, device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_tencent(line: &str) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'TIME_S,SECTOR,SECTORS,0|1,VOLUME'";
    if line == TENCENT_HEADER {
        return Ok(Line::Other);
    }
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let time_s: u64 = number(field(&f, 0, "timestamp", EXPECTED)?, "timestamp (s)")?;
    let offset_bytes = sectors(field(&f, 1, "offset", EXPECTED)?, "offset (sectors)")?;
    let len_bytes = sectors(field(&f, 2, "size", EXPECTED)?, "size (sectors)")?;
    let op = match field(&f, 3, "I/O type", EXPECTED)? {
        "0" => Op::Read,
        "1" => Op::Write,
        other => return Err(format!("I/O type '{other}' is neither 0 (read) nor 1 (write)")),
    };
    let device = field(&f, 4, "volume", EXPECTED)?;
    let time_ns = Some(time_s.saturating_mul(1_000_000_000));
    Ok(Line::Request { time_ns, device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_fiu(line: &str) -> Result<Line<'_>, String> {
    const EXPECTED: &str = "'TIME_NS PID PROCESS SECTOR SECTORS R|W MAJOR MINOR [MD5]'";
    let t: Vec<&str> = line.split_whitespace().collect();
    let time_ns: u64 = number(field(&t, 0, "timestamp", EXPECTED)?, "timestamp (ns)")?;
    let offset_bytes = sectors(field(&t, 3, "sector", EXPECTED)?, "sector")?;
    let len_bytes = sectors(field(&t, 4, "size", EXPECTED)?, "size (sectors)")?;
    let op = match field(&t, 5, "direction", EXPECTED)? {
        "R" => Op::Read,
        "W" => Op::Write,
        other => return Err(format!("direction '{other}' is neither R nor W")),
    };
    // major and minor together name the device: the line's text from the one to the other
    let (major, minor) = (field(&t, 6, "major", EXPECTED)?, field(&t, 7, "minor", EXPECTED)?);
    let at = |token: &str| token.as_ptr() as usize - line.as_ptr() as usize;
    let device = &line[at(major)..at(minor) + minor.len()];
    Ok(Line::Request { time_ns: Some(time_ns), device, op, offset_bytes, len_bytes, preflush: false, prio: None })
}

fn parse_blkparse<'a>(line: &'a str, probe: &mut DepthProbe) -> Result<Line<'a>, String> {
    let t: Vec<&str> = line.split_whitespace().collect();
    // anything but an event line (the summary at the end, a message) is not a request
    let is_event = t.len() >= 7 && t[0].split_once(',').is_some_and(|(a, b)| is_digits(a) && is_digits(b));
    if !is_event {
        return Ok(Line::Other);
    }
    let action = match t[5] {
        "Q" => Action::Queue,
        "M" | "F" => Action::Merge,
        "C" => Action::Complete,
        _ => Action::Other,
    };
    probe.note(action, t[6].strip_prefix('F').unwrap_or(t[6]).chars().next().unwrap_or('N'));
    if action != Action::Queue {
        return Ok(Line::Other);
    }
    let time_ns = {
        let (s, ns) = t[3].split_once('.').ok_or_else(|| format!("time '{}' is not SECONDS.NANOSECONDS", t[3]))?;
        let s: u64 = number(s, "time (s)")?;
        let ns: u64 = number(ns, "time (ns)")?;
        s.saturating_mul(1_000_000_000).saturating_add(ns)
    };
    block_request(time_ns, t[0], t[6], &t[7..])
}

/// The block events an ftrace capture may hold, in the order they are preferred.
const FTRACE_EVENTS: [&str; 3] = ["block_bio_queue: ", "block_rq_insert: ", "block_rq_issue: "];

fn parse_ftrace<'a>(line: &'a str, taken: &mut Option<&'static str>) -> Result<Line<'a>, String> {
    let Some((event, at)) = FTRACE_EVENTS.iter().find_map(|e| line.find(e).map(|at| (*e, at))) else {
        return Ok(Line::Other);
    };
    if *taken.get_or_insert(event) != event {
        return Ok(Line::Other);
    }
    // "TASK-PID [CPU] FLAGS SECONDS.MICROS: event: DEV RWBS ..."
    let stamp = line[..at].trim_end().trim_end_matches(':');
    let stamp = stamp.rsplit(' ').next().unwrap_or(stamp);
    let time_ns = float_ns(stamp, "time (s)", 1e9)?;
    let t: Vec<&str> = line[at + event.len()..].split_whitespace().collect();
    if t.len() < 2 {
        return Err(format!("{}reads 'DEV RWBS ...'", event));
    }
    // block_rq_*: DEV RWBS BYTES (CMD) SECTOR + SECTORS ...; block_bio_queue: DEV RWBS SECTOR + SECTORS
    let rest = if event == "block_bio_queue: " { &t[2..] } else { t.get(4..).unwrap_or(&[]) };
    block_request(time_ns, t[0], t[1], rest)
}

/// The kernel's `CLASS,HINT,LEVEL` (`rt,0,0`, `be,0,4`); `none` is no priority.
fn ioprio_of(token: &str) -> Option<IoPrio> {
    let mut parts = token.split(',');
    let class = match parts.next()? {
        "rt" => PrioClass::RealTime,
        "be" => PrioClass::BestEffort,
        "idle" => PrioClass::Idle,
        _ => return None,
    };
    let _hint = parts.next()?;
    let level: u8 = parts.next()?.parse().ok().filter(|l| *l < IoPrio::LEVELS)?;
    parts.next().is_none().then_some(IoPrio::new(class, level))
}

/// A block-layer event's request from its RWBS flags and `SECTOR + SECTORS` (blkparse's
/// and the kernel's text: an `F` first is a pre-flush, `N` no data, `FN`/`FF` a flush).
fn block_request<'a>(time_ns: u64, device: &'a str, rwbs: &str, rest: &[&str]) -> Result<Line<'a>, String> {
    let (preflush, flags) = match rwbs.strip_prefix('F') {
        Some(flags) => (true, flags),
        None => (false, rwbs),
    };
    let main = flags.chars().next().filter(|c| "RWDNF".contains(*c));
    let main = main.ok_or_else(|| format!("RWBS '{rwbs}' is not a read, write, discard or flush"))?;
    block_line(time_ns, device, preflush, main, || {
        let [sector, "+", count, after @ ..] = rest else {
            if preflush && rest.first().is_none_or(|t| !is_digits(t)) {
                // blkparse prints an empty flush without its sectors: `Q FWS [fio]`
                return Ok((0, 0, None));
            }
            return Err("a request of data reads 'SECTOR + SECTORS'".into());
        };
        // Linux 6's block_rq_* events add the priority as CLASS,HINT,LEVEL
        let prio = after.first().and_then(|t| ioprio_of(t));
        Ok((sectors(sector, "sector")?, sectors(count, "sectors")?, prio))
    })
}

/// A block-layer request, text or binary alike: whether a pre-flush comes first, the RWBS
/// main letter (`R`, `W`, `D`; `N` or `F` after a pre-flush is a flush, `N` alone
/// nothing), and for data its offset, length and priority.
fn block_line<'a>(
    time_ns: u64,
    device: &'a str,
    preflush: bool,
    main: char,
    data: impl FnOnce() -> Result<(u64, u64, Option<IoPrio>), String>,
) -> Result<Line<'a>, String> {
    let flush = |prio| Line::Request {
        time_ns: Some(time_ns),
        device,
        op: Op::Flush,
        offset_bytes: 0,
        len_bytes: 0,
        preflush: false,
        prio,
    };
    let op = match main {
        'R' => Op::Read,
        'W' => Op::Write,
        'D' => Op::Discard,
        'N' | 'F' if preflush => return Ok(flush(None)),
        'N' => return Ok(Line::Other),
        _ => return Err(format!("RWBS letter '{main}' is not a read, write, discard or flush")),
    };
    let (offset_bytes, len_bytes, prio) = data()?;
    if preflush && len_bytes == 0 {
        // an empty write with a pre-flush is how a flush reaches the block layer
        return Ok(flush(prio));
    }
    Ok(Line::Request { time_ns: Some(time_ns), device, op, offset_bytes, len_bytes, preflush, prio })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
        let dir = std::env::temp_dir().join(format!("nvsched-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("t{}.trace", text.len()));
        std::fs::write(&path, text).unwrap();
        let r = load_trace(&path, format);
        std::fs::remove_file(&path).unwrap();
        r
    }

    fn rec(at_ns: u64, device: u32, op: Op, offset_bytes: u64, len_bytes: u32) -> TraceRecord {
        TraceRecord { at_ns, device, op, offset_bytes, len_bytes, prio: None }
    }

    #[test]
    fn each_format_is_detected_and_read_in_its_units() {
        let cases: [(&str, TraceFormat, TraceRecord); 11] = [
            // the three below are built from the formats' documented examples
            (
                "device_id,opcode,offset,length,timestmap\n0,R,126703644672,4096,1577808000000626\n1,W,8192,8192,1577808000001626\n",
                TraceFormat::Alibaba,
                rec(1_000_000, 1, Op::Write, 8192, 8192),
            ),
            (
                "1538323199,1003027216,16,0,2313\n1538323200,6338688,8,1,1627\n",
                TraceFormat::Tencent,
                rec(1_000_000_000, 1, Op::Write, 6338688 * 512, 4096),
            ),
            (
                "89967404265337 4253 nfsd 508516672 8 W 6 0 88b93b628d84082186026d9da044f173\n\
                 89967404365337 4253 nfsd 16 16 R 6 1 0f0d5ca3eb1f0e8f1a5fe6a6d4b11c47\n",
                TraceFormat::Fiu,
                rec(100_000, 1, Op::Read, 8192, 8192),
            ),
            ("11413000 0 657728 16 1\n11565000 1 8 64 0\n", TraceFormat::DisksimNs, rec(152_000, 1, Op::Write, 4096, 32768)),
            ("1.5 0 0 8 1\n2.0 3 8 8 0\n", TraceFormat::DisksimMs, rec(500_000, 1, Op::Write, 4096, 4096)),
            ("0,303567,3584,w,0.000000\n1,8,4096,R,0.25\n", TraceFormat::Spc, rec(250_000_000, 1, Op::Read, 4096, 4096)),
            (
                "128166372003061629,prxy,0,Write,8192,4096,1514\n128166372003071629,prxy,1,Read,0,512,1\n",
                TraceFormat::Msr,
                rec(1_000_000, 1, Op::Read, 0, 512),
            ),
            (
                "  8,16   5  2  0.000001850 18615  Q   R 8 + 8 [java]\n  8,16   5  5  0.000009980 18615  I   R 8 + 8 [java]\n\
                 8,0 1 3 0.000101850 1 Q WS 16 + 16 [kworker]\nCPU0 (8,16):\n",
                TraceFormat::Blkparse,
                rec(100_000, 1, Op::Write, 8192, 8192),
            ),
            (
                "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n100 /dev/x read 0 4096\n350 /dev/x write 8192 8192\n",
                TraceFormat::Fio,
                rec(250_000, 0, Op::Write, 8192, 8192),
            ),
            (
                "# tracer: nop\n  fio-12978 [001] ..... 12237.562490: block_bio_queue: 254,0 RS 8 + 8 [fio]\n\
                 fio-12978 [001] .N... 12237.562499: block_rq_issue: 254,0 RS 4096 () 8 + 8 rt,0,0 [fio]\n\
                 kworker/0:0H-10 [000] ..... 12237.562590: block_bio_queue: 254,0 FWS 16 + 8 [kworker/0:0H]\n",
                TraceFormat::Ftrace,
                rec(100_000, 0, Op::Flush, 0, 0),
            ),
            (
                "fio version 2 iolog\nf add\nf read 0 4096\nf wait 5\nf trim 4096 4096\n",
                TraceFormat::Fio,
                rec(5_000_000, 0, Op::Discard, 4096, 4096),
            ),
        ];
        for (text, format, second) in cases {
            let t = load(text, None).unwrap();
            assert_eq!(t.format, format, "{text}");
            // ftrace: the pre-flush of the `FWS` write comes first, then the write
            let expected_len = if format == TraceFormat::Ftrace { 3 } else { 2 };
            assert_eq!(t.records.len(), expected_len, "{text}");
            assert_eq!(t.records[0].at_ns, 0, "{text}: times start at the first record");
            assert_eq!(t.records[1], second, "{text}");
            if format == TraceFormat::Ftrace {
                assert_eq!(t.records[2], rec(100_000, 0, Op::Write, 8192, 4096), "the write after its pre-flush");
                assert_eq!(t.devices, ["254,0"], "the event, not the task, names the device");
            }
            assert_eq!(load(text, Some(format)).unwrap(), t, "naming the format reads the same");
        }
    }

    fn load_bytes(bytes: &[u8], format: Option<TraceFormat>) -> Result<Trace, TraceError> {
        let dir = std::env::temp_dir().join(format!("nvsched-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("b{}.blktrace", bytes.len()));
        std::fs::write(&path, bytes).unwrap();
        let r = load_trace(&path, format);
        std::fs::remove_file(&path).unwrap();
        r
    }

    #[test]
    fn a_blktrace_is_read_as_blkparse_prints_it() {
        use blktrace::tests::*;
        let events: [(u64, u64, u32, u32); 11] = [
            (0, 0, 0, NOTIFY),                            // a process name: not an I/O
            (1_000, 2048, 4096, READ | QUEUE),            // R 2048 + 8
            (1_001, 2048, 4096, READ | ISSUE),            // the same request issued
            (1_500, 4096, 8192, WRITE | QUEUE),           // W 4096 + 16
            (1_600, 4112, 4096, WRITE | QUEUE),           // merged into the write before
            (1_601, 4112, 4096, WRITE | BACKMERGE),       //
            (2_000, 0, 0, WRITE | FLUSH | QUEUE),         // FW: an empty flush
            (3_000, 64, 4096, WRITE | FLUSH | QUEUE),     // FW 64 + 8: a pre-flush, then the write
            (4_000, 128, 65536, WRITE | DISCARD | QUEUE), // D 128 + 128
            (5_000, 8, 512, READ | PC | QUEUE),           // a passthrough command: left out
            (9_000, 4096, 12288, WRITE | COMPLETE),       // C
        ];
        let mut file = Vec::new();
        for (time_ns, sector, bytes, action) in events {
            file.extend(event_bytes(time_ns, sector, bytes, action, if action == NOTIFY { b"fio\0" } else { &[] }));
        }
        let t = load_bytes(&file, None).unwrap();
        assert_eq!(t.format, TraceFormat::Blktrace);
        let flush = |at_ns| rec(at_ns, 0, Op::Flush, 0, 0);
        assert_eq!(
            t.records,
            [
                rec(0, 0, Op::Read, 2048 * 512, 4096),
                rec(500, 0, Op::Write, 4096 * 512, 8192),
                rec(600, 0, Op::Write, 4112 * 512, 4096),
                flush(1_000),
                flush(2_000),
                rec(2_000, 0, Op::Write, 64 * 512, 4096),
                rec(3_000, 0, Op::Discard, 128 * 512, 65536),
            ]
        );
        assert_eq!(t.devices, ["8,16"]);
        assert_eq!(t.queue_depth, Some(3), "writes before the completion: 2 queued, 1 merged, 2 flushes (W)");
        assert_eq!(load_bytes(&file, Some(TraceFormat::Blktrace)).unwrap(), t);

        // the file ends inside an event: the events before it stand, and it is counted
        let cut = load_bytes(&file[..file.len() - 10], None).unwrap();
        assert_eq!((cut.records.len(), cut.cut_off_bytes), (7, 38));

        let e = load_bytes(&file, Some(TraceFormat::Blkparse)).unwrap_err();
        assert!(e.message.contains("binary events, not blkparse text; set trace_format=blktrace"), "{e}");
        let e = load("0 0 8 8 1\n", Some(TraceFormat::Blktrace)).unwrap_err();
        assert!(
            e.message.contains("not blktrace's binary events: a blktrace file begins with the bytes 07 74 61 65"),
            "{e}"
        );
        let e = load_bytes(&[0xff, 0xfe, 0x0a], None).unwrap_err();
        assert!(
            e.to_string().ends_with(
                ":1: this line is not UTF-8 text: the file is neither a text trace nor blktrace's binary events"
            ),
            "{e}"
        );
        let e = load_bytes(&event_bytes(0, 0, 0, NOTIFY, &[]), None).unwrap_err();
        assert!(e.message.contains("no requests in the trace (read as blktrace)"), "{e}");
        let mut bad = file.clone();
        bad[52..56].copy_from_slice(&[0; 4]); // the second event, after the first and its 4-byte name
        let e = load_bytes(&bad, None).unwrap_err();
        assert!(e.to_string().ends_with(".blktrace: event 2 (byte 52): magic 0x00000000 is not blktrace's (0x65617407); the file is damaged or not one blktrace file"), "{e}");
    }

    #[test]
    fn blkparse_text_gives_the_depth_and_its_empty_flushes() {
        let text = "254,0 1 0 0.000001000 7 Q RS 8 + 8 [fio]\n254,0 1 0 0.000002000 7 Q RS 16 + 8 [fio]\n\
                    254,0 1 0 0.000003000 7 Q RS 24 + 8 [fio]\n254,0 1 0 0.000003500 7 M RS 24 + 8 [fio]\n\
                    254,0 1 0 0.000004000 0 C RS 8 + 16 [0]\n254,0 0 0 0.000005000 9 Q FWS [(null)]\n";
        let t = load(text, None).unwrap();
        assert_eq!(t.format, TraceFormat::Blkparse);
        assert_eq!(t.records.len(), 4);
        assert_eq!(t.records[3], rec(4_000, 0, Op::Flush, 0, 0), "blkparse prints an empty flush without sectors");
        assert_eq!(t.queue_depth, Some(2));
        assert_eq!(load("254,0 1 0 0.1 7 Q WS [fio]\n", None).unwrap_err().line, 1, "data needs its sectors");
    }

    #[test]
    fn a_summary_counts_directions_sizes_devices_and_sequential_requests() {
        // device 0: 0-4K, 4K-8K (sequential), 100K; device 1: 0-8K
        let t = load("0,0,4096,r,0.0\n0,8,4096,r,0.1\n1,0,8192,w,0.2\n0,200,4096,w,0.3\n", None).unwrap();
        let s = t.summary();
        assert_eq!((s.format, s.records, s.span_ns), ("spc", 4, 300_000_000));
        assert_eq!((s.directions[0].direction, s.directions[0].requests, s.directions[0].bytes), ("read", 2, 8192));
        assert_eq!(s.directions[1].common_sizes, [(4096, 50.0), (8192, 50.0)], "ties: the smaller first");
        assert_eq!(s.sequential_pct, 25.0, "one of four starts where its device's last ended");
        assert_eq!(s.devices.iter().map(|d| (d.name.as_str(), d.requests)).collect::<Vec<_>>(), [("0", 3), ("1", 1)]);
        assert_eq!(s.devices[0].extent_bytes, 200 * 512 + 4096);
        assert_eq!(s.queue_depth, None);
    }

    #[test]
    fn tencent_spreads_the_requests_of_one_second_over_it() {
        let t = load("Timestamp,Offset,Size,IOType,VolumeID\n10,0,8,0,1\n10,8,8,0,1\n10,16,8,1,1\n11,0,8,0,1\n", None)
            .unwrap();
        let times: Vec<u64> = t.records.iter().map(|r| r.at_ns).collect();
        assert_eq!(times, [0, 333_333_333, 666_666_666, 1_000_000_000]);
        let fiu = load("1000 7 a 8 8 R 8 16 x\n2000 7 a 8 8 W 8 16 x\n", None).unwrap();
        assert_eq!(fiu.devices, ["8 16"], "major and minor name the device");
        let e = load("1,X,0,4096,5\n", Some(TraceFormat::Alibaba)).unwrap_err();
        assert!(e.to_string().ends_with(":1: opcode 'X' is neither R nor W"), "{e}");
        let e = load("1,0,8,2,5\n", Some(TraceFormat::Tencent)).unwrap_err();
        assert!(e.message.contains("I/O type '2' is neither 0 (read) nor 1 (write)"), "{e}");
    }

    #[test]
    fn times_past_u64_nanoseconds_saturate_instead_of_overflowing() {
        // blkparse: whole seconds that saturate, plus nanoseconds (found by fuzzing);
        // times count from the first request
        let text = "254,0 1 0 1.000000000 7 Q RS 8 + 8 [fio]\n254,0 1 0 99999999999.999999999 7 Q RS 8 + 8 [fio]\n";
        let t = load(text, None).unwrap();
        assert_eq!(t.records[1].at_ns, u64::MAX - 1_000_000_000);
        // tencent: the requests of a saturated second are spread from there
        let text = "Timestamp,Offset,Size,IOType,VolumeID\n1,0,8,0,1\n99999999999,0,8,0,1\n99999999999,8,8,0,1\n";
        let t = load(text, None).unwrap();
        let times: Vec<u64> = t.records.iter().map(|r| r.at_ns).collect();
        assert_eq!(times, [0, u64::MAX - 1_000_000_000, u64::MAX - 500_000_000]);
    }

    #[test]
    fn an_ftrace_capture_is_told_by_its_first_event_whatever_it_is() {
        let text = "# tracer: nop\n#\n  bash-1 [000] ..... 5.000001: sched_switch: prev=bash\n\
                    fio-2 [001] ..... 5.000101: block_bio_queue: 8,0 R 8 + 8 [fio]\n";
        let t = load(text, None).unwrap();
        assert_eq!((t.format, t.records.len()), (TraceFormat::Ftrace, 1));
    }

    #[test]
    fn block_rq_events_carry_their_priority() {
        let text = "fio-1 [000] ..... 1.000000: block_rq_issue: 254,0 RS 4096 () 8 + 8 rt,0,0 [fio]\n\
                    fio-2 [001] ..... 1.000010: block_rq_issue: 254,0 RS 4096 () 16 + 8 be,0,4 [fio]\n\
                    kw-3 [001] ..... 1.000020: block_rq_issue: 254,0 WS 4096 () 24 + 8 none,0,0 [kw]\n";
        let t = load(text, None).unwrap();
        let prios: Vec<Option<IoPrio>> = t.records.iter().map(|r| r.prio).collect();
        assert_eq!(prios, [Some(IoPrio::rt(0)), Some(IoPrio::be(4)), None]);
        assert_eq!(t.prios, [IoPrio::rt(0), IoPrio::be(4)]);
        assert_eq!(ioprio_of("idle,0,7"), Some(IoPrio::new(PrioClass::Idle, 7)));
        assert_eq!(ioprio_of("be,0,8"), None, "levels are 0..=7");
    }

    #[test]
    fn bad_lines_are_errors_naming_file_and_line() {
        let e = load("10 0 8 8 1\n20 0 x 8 1\n", None).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains(":2: start sector 'x' is not a number"), "{e}");
        let e = load("hello world\n", None).unwrap_err();
        assert!(
            e.to_string().contains(":1: cannot tell the trace's format from 'hello world'; set trace_format="),
            "{e}"
        );
        let e = load("0,1,512,x,0.1\n", Some(TraceFormat::Spc)).unwrap_err();
        assert!(e.message.contains("opcode 'x' is neither r nor w"), "{e}");
        let e = load("fio version 1 iolog\n", None).unwrap_err();
        assert!(e.message.contains("'fio version 2 iolog' or 'fio version 3 iolog'"), "{e}");
        let e = load("# only a comment\n", None).unwrap_err();
        assert!(e.message.contains("no records"), "{e}");
        let e = load("10 0 8 8 1\n", Some(TraceFormat::Spc)).unwrap_err();
        assert!(e.message.contains("no LBA; expected 'ASU,SECTOR,BYTES,OPCODE,SECONDS'"), "{e}");
    }

    #[test]
    fn out_of_order_unaligned_and_empty_records_are_counted_not_hidden() {
        let t = load("0,0,1000,r,0.5\n0,8,0,r,0.6\n0,16,4096,w,0.2\n", None).unwrap();
        assert_eq!((t.reordered, t.realigned, t.empty), (1, 1, 1));
        assert_eq!(t.records[0], rec(0, 0, Op::Read, 0, 1024), "1000 bytes widened to two sectors");
        assert_eq!(t.records[1].at_ns, 0, "earlier than its predecessor: replayed right after it");
        assert_eq!(t.extents_bytes, vec![8192 + 4096]);
    }

    #[test]
    fn a_replay_starts_at_each_devices_lowest_request() {
        // a file 100 GiB into one disk, and a second disk near its start
        let t = load("0 0 209715200 8 1\n1 0 209717248 8 0\n2 1 2048 8 1\n", None).unwrap();
        assert_eq!(t.lowest_bytes, vec![100 << 30, 1 << 20]);
        assert_eq!(t.needed_bytes(DeviceMapping::Split), 3 << 20, "2 MiB and 1 MiB, not 100 GiB");
        let spans = t.device_spans(DeviceMapping::Split, 3 << 20);
        assert_eq!(place(&t.records[1], spans[0], Outside::Drop), Placement::At(1 << 20));
        assert_eq!(place(&t.records[2], spans[1], Outside::Drop), Placement::At(2 << 20));
        // one space: the distance between the disks is kept
        assert_eq!(t.needed_bytes(DeviceMapping::Shared), (100 << 30) + (1 << 20));
    }

    #[test]
    fn devices_split_the_region_or_share_it() {
        let t = load("0 0 0 8 1\n1 1 1000 8 1\n2 0 8 8 1\n", None).unwrap();
        assert_eq!(t.devices, vec!["0", "1"]);
        assert_eq!(t.needed_bytes(DeviceMapping::Split), 2 << 20, "each device rounded up to 1 MiB");
        assert_eq!(t.needed_bytes(DeviceMapping::Shared), 1 << 20);
        let spans = t.device_spans(DeviceMapping::Split, 8 << 20);
        assert_eq!(spans[1], DeviceSpan { base_bytes: 1 << 20, len_bytes: 1 << 20, origin_bytes: 0 });
        let small = t.device_spans(DeviceMapping::Split, 1 << 20);
        assert_eq!(
            small[1],
            DeviceSpan { base_bytes: 512 << 10, len_bytes: 512 << 10, origin_bytes: 0 },
            "shrunk in proportion"
        );
        let r = rec(0, 1, Op::Read, 600 << 10, 4096);
        assert_eq!(place(&r, small[1], Outside::Drop), Placement::Dropped);
        assert_eq!(place(&r, small[1], Outside::Wrap), Placement::Wrapped((512 << 10) + (88 << 10)));
        assert_eq!(place(&r, spans[1], Outside::Drop), Placement::At((1 << 20) + (600 << 10)));
        let shared = t.device_spans(DeviceMapping::Shared, 8 << 20);
        assert!(shared.iter().all(|s| s.base_bytes == 0 && s.len_bytes == 8 << 20));
    }
}
