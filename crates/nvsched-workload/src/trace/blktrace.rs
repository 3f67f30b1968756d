//! blktrace's binary events (`struct blk_io_trace`, version 7): what `blktrace -o NAME`
//! writes per CPU, and `blkparse -d FILE` merged into one file in time order, the form
//! fio's `read_iolog` replays. Each event is 48 bytes in the capturing machine's byte
//! order, then `pdu_len` bytes of payload (a process name, a remap), skipped here.

use std::io::{self, Read};

/// Bytes of one event before its payload.
pub const EVENT_BYTES: usize = 48;
/// `BLK_IO_TRACE_MAGIC`, in the top 24 bits of an event's first word.
const MAGIC: u32 = 0x6561_7400;
/// The only version fio 3.33 reads (Linux's `BLK_IO_TRACE_VERSION`).
const VERSION: u32 = 0x07;

/// The category bits (`BLK_TC_*`), in an action's top 16 bits.
const TC_SHIFT: u32 = 16;
const TC_READ: u32 = 1 << 0;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_PC: u32 = 1 << 9;
const TC_NOTIFY: u32 = 1 << 10;
const TC_DISCARD: u32 = 1 << 13;
/// `__BLK_TA_CGROUP`: the event's payload starts with a cgroup id; not part of the action.
const TA_CGROUP: u32 = 1 << 8;

/// The byte order an event file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ByteOrder {
    Little,
    Big,
}

impl ByteOrder {
    /// Which order a file's first word is a blktrace magic in, if either (fio tries both).
    pub(super) fn of_magic(first: [u8; 4]) -> Option<ByteOrder> {
        [ByteOrder::Little, ByteOrder::Big].into_iter().find(|o| o.u32(first) & 0xffff_ff00 == MAGIC)
    }

    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        }
    }

    fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            ByteOrder::Little => u64::from_le_bytes(b),
            ByteOrder::Big => u64::from_be_bytes(b),
        }
    }

    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        }
    }
}

/// What an event records, of what a replay cares about (the low 16 bits, `__BLK_TA_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// `Q`: a request reaches the block layer; these are the trace's requests.
    Queue,
    /// `M`, `F`: merged into one already queued.
    Merge,
    /// `C`
    Complete,
    Other,
}

/// One event, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Event {
    /// Since the capture started.
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    action: u32,
    /// The kernel's `dev_t`: major in the top 12 bits, minor in the low 20.
    device: u32,
    /// Kept to be written out again by a merge.
    sequence: u32,
    pid: u32,
    cpu: u32,
    error: u16,
}

impl Event {
    pub fn action(&self) -> Action {
        match self.action & 0xffff & !TA_CGROUP {
            1 => Action::Queue,
            2 | 3 => Action::Merge,
            8 => Action::Complete,
            _ => Action::Other,
        }
    }

    fn category(&self) -> u32 {
        self.action >> TC_SHIFT
    }

    /// A message (process name, time stamp), not an I/O.
    pub fn is_notify(&self) -> bool {
        self.category() & TC_NOTIFY != 0
    }

    /// A passthrough command (SCSI/NVMe), not a read or write of the device's blocks.
    pub fn is_passthrough(&self) -> bool {
        self.category() & TC_PC != 0
    }

    /// The request's RWBS as blkparse prints it, up to its main letter: whether a
    /// pre-flush comes first (`F`), then `D`iscard, `W`rite, `R`ead (bytes without the
    /// write bit) or `N`othing.
    pub fn rwbs(&self) -> (bool, char) {
        let category = self.category();
        let main = if category & TC_DISCARD != 0 {
            'D'
        } else if category & TC_WRITE != 0 {
            'W'
        } else if self.bytes > 0 {
            'R'
        } else {
            'N'
        };
        (category & TC_FLUSH != 0, main)
    }

    /// `MAJOR,MINOR`, as blkparse names the device.
    pub fn device_name(&self) -> String {
        format!("{},{}", self.device >> 20, self.device & 0xf_ffff)
    }

    /// What fio's merge keeps: queue events of a read, write or discard.
    fn is_request(&self) -> bool {
        self.action() == Action::Queue && self.category() & (TC_READ | TC_WRITE | TC_DISCARD) != 0
    }

    /// The event as a little-endian blktrace writes it, without its payload.
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend((MAGIC | VERSION).to_le_bytes());
        out.extend(self.sequence.to_le_bytes());
        out.extend(self.time_ns.to_le_bytes());
        out.extend(self.sector.to_le_bytes());
        out.extend(self.bytes.to_le_bytes());
        out.extend(self.action.to_le_bytes());
        out.extend(self.pid.to_le_bytes());
        out.extend(self.device.to_le_bytes());
        out.extend(self.cpu.to_le_bytes());
        out.extend(self.error.to_le_bytes());
        out.extend(0u16.to_le_bytes()); // no payload
    }
}

/// Reads events one by one; the position of the one being read goes into errors.
pub(super) struct Events<R> {
    reader: R,
    order: ByteOrder,
    /// Events read so far.
    pub count: u64,
    /// Bytes read so far.
    pub offset_bytes: u64,
}

/// Why reading stopped short of a clean end.
#[derive(Debug)]
pub(super) enum Stop {
    /// The file ends inside an event (a capture cut off): what was read stands.
    CutOff {
        event_bytes: u64,
    },
    Invalid(String),
    Io(io::Error),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::CutOff { event_bytes } => write!(f, "the file ends {event_bytes} bytes into an event"),
            Stop::Invalid(why) => f.write_str(why),
            Stop::Io(e) => write!(f, "cannot read trace: {e}"),
        }
    }
}

impl<R: Read> Events<R> {
    pub fn new(reader: R, order: ByteOrder) -> Events<R> {
        Events { reader, order, count: 0, offset_bytes: 0 }
    }

    /// The next event, `Ok(None)` at the end of the file.
    pub fn next_event(&mut self) -> Result<Option<Event>, Stop> {
        let mut raw = [0u8; EVENT_BYTES];
        let got = read_full(&mut self.reader, &mut raw).map_err(Stop::Io)?;
        if got == 0 {
            return Ok(None);
        }
        if got < EVENT_BYTES {
            return Err(Stop::CutOff { event_bytes: got as u64 });
        }
        let o = self.order;
        let word = |at: usize| o.u32(raw[at..at + 4].try_into().expect("4 bytes"));
        let magic = word(0);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(Stop::Invalid(format!(
                "event {} (byte {}): magic {magic:#010x} is not blktrace's ({:#010x}); the file is damaged or not one blktrace file",
                self.count + 1,
                self.offset_bytes,
                MAGIC | VERSION
            )));
        }
        if magic & 0xff != VERSION {
            return Err(Stop::Invalid(format!(
                "blktrace version {} is not read (version {VERSION} is, as by fio 3.33); capture with a blktrace that writes version {VERSION}",
                magic & 0xff
            )));
        }
        let event = Event {
            time_ns: o.u64(raw[8..16].try_into().expect("8 bytes")),
            sector: o.u64(raw[16..24].try_into().expect("8 bytes")),
            bytes: word(24),
            action: word(28),
            device: word(36),
            sequence: word(4),
            pid: word(32),
            cpu: word(40),
            error: o.u16(raw[44..46].try_into().expect("2 bytes")),
        };
        let pdu_len = u64::from(o.u16(raw[46..48].try_into().expect("2 bytes")));
        let skipped = io::copy(&mut (&mut self.reader).take(pdu_len), &mut io::sink()).map_err(Stop::Io)?;
        if skipped < pdu_len {
            return Err(Stop::CutOff { event_bytes: EVENT_BYTES as u64 + skipped });
        }
        self.count += 1;
        self.offset_bytes += EVENT_BYTES as u64 + pdu_len;
        Ok(Some(event))
    }
}

/// One input of a merge: its requests, with its times scaled and repeated.
pub(super) struct MergeInput<R> {
    pub events: Events<R>,
    /// `merge_blktrace_scalars`: times are multiplied by this percentage (a whole
    /// number, as fio takes it).
    pub scalar_pct: u64,
    /// `merge_blktrace_iters`: the trace is laid end to end this many times.
    pub iterations: u32,
}

/// fio's `merge_blktrace_file`: the inputs' requests (queue events of reads, writes and
/// discards; the rest, and payloads, left out) in one blktrace, earliest first (the
/// earlier input first on a tie). Iteration `k` of an input comes `k` times its span
/// (its last event's time, of any kind, as fio takes it) after the first; then times
/// are scaled. The merge holds no completions, so a replay of it probes a depth of 1, as
/// fio's does.
///
/// `reopen` gives an input's events again from its start, for its next iteration.
pub(super) fn merge<R: Read>(
    inputs: &mut [MergeInput<R>],
    mut reopen: impl FnMut(usize) -> Result<Events<R>, Stop>,
) -> Result<Vec<u8>, (usize, Stop)> {
    // which iteration each input is in, and the span of its first
    let mut iteration = vec![0u32; inputs.len()];
    let mut span_ns = vec![0u64; inputs.len()];
    let next = |i: usize, inputs: &mut [MergeInput<R>], iteration: &mut [u32], span_ns: &mut [u64]| loop {
        match inputs[i].events.next_event() {
            Ok(Some(e)) if iteration[i] == 0 && !e.is_request() => span_ns[i] = e.time_ns,
            Ok(Some(e)) if e.is_request() => {
                if iteration[i] == 0 {
                    span_ns[i] = e.time_ns;
                }
                let unscaled = u128::from(e.time_ns) + u128::from(iteration[i]) * u128::from(span_ns[i]);
                let due = unscaled * u128::from(inputs[i].scalar_pct) / 100;
                return Ok(Some((u64::try_from(due).unwrap_or(u64::MAX), e)));
            }
            Ok(Some(_)) => continue,
            // a cut-off last event ends the input, as it ends a replay
            Ok(None) | Err(Stop::CutOff { .. }) => return Ok(None),
            Err(stop) => return Err(stop),
        }
    };
    let mut out = Vec::new();
    // each input's next request: (due time, event)
    let mut heads = (0..inputs.len())
        .map(|i| next(i, inputs, &mut iteration, &mut span_ns).map_err(|s| (i, s)))
        .collect::<Result<Vec<Option<(u64, Event)>>, _>>()?;
    while let Some(i) = (0..inputs.len()).filter(|i| heads[*i].is_some()).min_by_key(|i| heads[*i].map(|(t, _)| t)) {
        let (due_ns, event) = heads[i].take().expect("a head");
        Event { time_ns: due_ns, ..event }.encode(&mut out);
        heads[i] = next(i, inputs, &mut iteration, &mut span_ns).map_err(|s| (i, s))?;
        while heads[i].is_none() && iteration[i] + 1 < inputs[i].iterations {
            iteration[i] += 1;
            inputs[i].events = reopen(i).map_err(|s| (i, s))?;
            heads[i] = next(i, inputs, &mut iteration, &mut span_ns).map_err(|s| (i, s))?;
            if heads[i].is_none() {
                break; // no requests at all
            }
        }
    }
    Ok(out)
}

/// Fills `buf` unless the reader ends first; how many bytes it holds.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// fio's guess at the depth a blktrace was captured at: per direction, the requests
/// queued (less those merged) since the last completion, at its deepest; the deepest
/// direction, 1 to 1024.
#[derive(Clone, Debug, Default)]
pub(super) struct DepthProbe {
    /// Signed: a merge into a request queued before the last completion takes one off
    /// a count that was reset, as in fio.
    queued: [i64; 3],
    deepest: [i64; 3],
}

/// fio caps the probe: stacked devices may never report completions.
const MAX_PROBED_DEPTH: i64 = 1024;

impl DepthProbe {
    /// Counts an event whose RWBS main letter is `main`.
    pub fn note(&mut self, action: Action, main: char) {
        let Some(dir) = ['R', 'W', 'D'].iter().position(|c| *c == main) else { return };
        match action {
            Action::Queue => self.queued[dir] += 1,
            Action::Merge => self.queued[dir] -= 1,
            Action::Complete => {
                self.deepest[dir] = self.deepest[dir].max(self.queued[dir]);
                self.queued[dir] = 0;
            }
            Action::Other => {}
        }
    }

    pub fn depth(&self) -> u32 {
        self.deepest.iter().map(|d| (*d).clamp(1, MAX_PROBED_DEPTH)).max().unwrap_or(1) as u32
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Category bits for [`event_bytes`].
    pub const READ: u32 = 1 << 16;
    pub const WRITE: u32 = TC_WRITE << TC_SHIFT;
    pub const FLUSH: u32 = TC_FLUSH << TC_SHIFT;
    pub const DISCARD: u32 = TC_DISCARD << TC_SHIFT;
    pub const NOTIFY: u32 = TC_NOTIFY << TC_SHIFT;
    pub const PC: u32 = TC_PC << TC_SHIFT;
    pub const QUEUE: u32 = 1;
    pub const BACKMERGE: u32 = 2;
    pub const ISSUE: u32 = 7;
    pub const COMPLETE: u32 = 8;

    /// One event as the kernel writes it on a little-endian machine (device 8,16).
    pub fn event_bytes(time_ns: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(EVENT_BYTES + pdu.len());
        v.extend((MAGIC | VERSION).to_le_bytes());
        v.extend(0u32.to_le_bytes()); // sequence
        v.extend(time_ns.to_le_bytes());
        v.extend(sector.to_le_bytes());
        v.extend(bytes.to_le_bytes());
        v.extend(action.to_le_bytes());
        v.extend(4321u32.to_le_bytes()); // pid
        v.extend(((8u32 << 20) | 16).to_le_bytes());
        v.extend(0u32.to_le_bytes()); // cpu
        v.extend(0u16.to_le_bytes()); // error
        v.extend((pdu.len() as u16).to_le_bytes());
        v.extend(pdu);
        v
    }

    /// The same event in the other byte order.
    fn swapped(le: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for (at, len) in
            [(0, 4), (4, 4), (8, 8), (16, 8), (24, 4), (28, 4), (32, 4), (36, 4), (40, 4), (44, 2), (46, 2)]
        {
            v.extend(le[at..at + len].iter().rev());
        }
        v
    }

    #[test]
    fn events_decode_in_either_byte_order_and_skip_their_payload() {
        let mut file = event_bytes(0, 0, 0, NOTIFY, b"fio\0");
        file.extend(event_bytes(1500, 2048, 4096, WRITE | FLUSH | QUEUE, &[]));
        let order = ByteOrder::of_magic(file[..4].try_into().unwrap()).unwrap();
        assert_eq!(order, ByteOrder::Little);
        let mut events = Events::new(file.as_slice(), order);
        assert!(events.next_event().unwrap().unwrap().is_notify());
        let e = events.next_event().unwrap().unwrap();
        assert_eq!(
            (e.time_ns, e.sector, e.bytes, e.action(), e.rwbs()),
            (1500, 2048, 4096, Action::Queue, (true, 'W'))
        );
        assert_eq!(e.device_name(), "8,16");
        assert!(events.next_event().unwrap().is_none());
        assert_eq!((events.count, events.offset_bytes), (2, 2 * EVENT_BYTES as u64 + 4));

        let big = swapped(&event_bytes(1500, 2048, 4096, WRITE | QUEUE, &[]));
        let order = ByteOrder::of_magic(big[..4].try_into().unwrap()).unwrap();
        assert_eq!(order, ByteOrder::Big);
        let e = Events::new(big.as_slice(), order).next_event().unwrap().unwrap();
        assert_eq!((e.time_ns, e.sector, e.bytes, e.rwbs()), (1500, 2048, 4096, (false, 'W')));
        assert_eq!(ByteOrder::of_magic(*b"fio "), None);
    }

    #[test]
    fn rwbs_follows_blkparse() {
        let rwbs = |action, bytes| Event { bytes, action, ..Event::default() }.rwbs();
        assert_eq!(rwbs(READ | QUEUE, 4096), (false, 'R'));
        assert_eq!(rwbs(WRITE | DISCARD | QUEUE, 4096), (false, 'D'), "a discard carries the write bit");
        assert_eq!(rwbs(WRITE | FLUSH | QUEUE, 0), (true, 'W'), "an empty flush");
        assert_eq!(rwbs(QUEUE, 0), (false, 'N'));
        let cgroup = Event { bytes: 8, action: READ | QUEUE | TA_CGROUP, ..Event::default() };
        assert_eq!(cgroup.action(), Action::Queue, "a cgroup id in the payload does not change the action");
    }

    #[test]
    fn a_cut_off_event_and_a_wrong_version_are_told_apart() {
        let mut file = event_bytes(0, 8, 4096, READ | QUEUE, &[]);
        file.extend(&event_bytes(1, 16, 4096, READ | QUEUE, &[])[..20]);
        let mut events = Events::new(file.as_slice(), ByteOrder::Little);
        assert!(events.next_event().unwrap().is_some());
        assert!(matches!(events.next_event(), Err(Stop::CutOff { event_bytes: 20 })));

        let mut v8 = event_bytes(0, 8, 4096, READ | QUEUE, &[]);
        v8[0] = 0x08;
        let Err(Stop::Invalid(why)) = Events::new(v8.as_slice(), ByteOrder::Little).next_event() else { panic!() };
        assert!(why.contains("blktrace version 8 is not read"), "{why}");

        let mut junk = event_bytes(0, 8, 4096, READ | QUEUE, &[]);
        junk.extend([0u8; EVENT_BYTES]);
        let mut events = Events::new(junk.as_slice(), ByteOrder::Little);
        events.next_event().unwrap();
        let Err(Stop::Invalid(why)) = events.next_event() else { panic!() };
        assert!(why.starts_with("event 2 (byte 48): magic 0x00000000"), "{why}");
    }

    #[test]
    fn a_merge_interleaves_the_inputs_requests_by_time_scaled_and_repeated() {
        let a: Vec<u8> = [
            event_bytes(0, 0, 0, NOTIFY, b"fio\0"),
            event_bytes(100, 8, 4096, READ | QUEUE, &[]),
            event_bytes(101, 8, 4096, READ | ISSUE, &[]),
            event_bytes(300, 16, 4096, WRITE | QUEUE, b"payload!"),
            event_bytes(400, 16, 4096, WRITE | COMPLETE, &[]),
        ]
        .concat();
        let b: Vec<u8> = [event_bytes(100, 1000, 512, READ | QUEUE, &[]), event_bytes(500, 0, 0, QUEUE, &[])].concat();
        let inputs = [a.as_slice(), b.as_slice()];
        let merged = |scalars: [u64; 2], iterations: [u32; 2]| {
            let mut ins: Vec<MergeInput<&[u8]>> = (0..2)
                .map(|i| MergeInput {
                    events: Events::new(inputs[i], ByteOrder::Little),
                    scalar_pct: scalars[i],
                    iterations: iterations[i],
                })
                .collect();
            let out = merge(&mut ins, |i| Ok(Events::new(inputs[i], ByteOrder::Little))).unwrap();
            let mut events = Events::new(out.as_slice(), ByteOrder::Little);
            let mut got = Vec::new();
            while let Some(e) = events.next_event().unwrap() {
                got.push((e.time_ns, e.sector, e.action()));
            }
            got
        };
        use Action::Queue;
        // the requests alone; a tie goes to the earlier input; b's event without a
        // direction is left out
        assert_eq!(merged([100, 100], [1, 1]), [(100, 8, Queue), (100, 1000, Queue), (300, 16, Queue)]);
        assert_eq!(merged([100, 50], [1, 1]), [(50, 1000, Queue), (100, 8, Queue), (300, 16, Queue)]);
        // a again after its span, its last event (the completion at 400)
        assert_eq!(
            merged([100, 100], [2, 1]),
            [(100, 8, Queue), (100, 1000, Queue), (300, 16, Queue), (500, 8, Queue), (700, 16, Queue)]
        );
    }

    #[test]
    fn the_depth_probe_counts_queued_less_merged_between_completions() {
        let mut p = DepthProbe::default();
        for _ in 0..8 {
            p.note(Action::Queue, 'R');
        }
        p.note(Action::Merge, 'R');
        p.note(Action::Complete, 'R');
        for _ in 0..3 {
            p.note(Action::Queue, 'W');
        }
        p.note(Action::Complete, 'W');
        p.note(Action::Queue, 'N');
        assert_eq!(p.depth(), 7);
        assert_eq!(DepthProbe::default().depth(), 1, "no completions: depth 1");
    }
}
