//! blktrace's binary events (`struct blk_io_trace`, version 7): what `blktrace -o NAME`
//! writes per CPU, and `blkparse -d FILE` merged into one file in time order, the form
//! fio's `read_iolog` replays. Each event is 48 bytes in the capturing machine's byte
//! order, then `pdu_len` bytes of payload (a process name, a remap), skipped here.

use std::io::{self, Read};

/// Bytes of one event before its payload.
pub(super) const EVENT_BYTES: usize = 48;
/// `BLK_IO_TRACE_MAGIC`, in the top 24 bits of an event's first word.
const MAGIC: u32 = 0x6561_7400;
/// The only version fio 3.33 reads (Linux's `BLK_IO_TRACE_VERSION`).
const VERSION: u32 = 0x07;

/// The category bits (`BLK_TC_*`), in an action's top 16 bits.
const TC_SHIFT: u32 = 16;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Event {
    /// Since the capture started.
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    action: u32,
    /// The kernel's `dev_t`: major in the top 12 bits, minor in the low 20.
    device: u32,
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
        let rwbs = |action, bytes| Event { time_ns: 0, sector: 0, bytes, action, device: 0 }.rwbs();
        assert_eq!(rwbs(READ | QUEUE, 4096), (false, 'R'));
        assert_eq!(rwbs(WRITE | DISCARD | QUEUE, 4096), (false, 'D'), "a discard carries the write bit");
        assert_eq!(rwbs(WRITE | FLUSH | QUEUE, 0), (true, 'W'), "an empty flush");
        assert_eq!(rwbs(QUEUE, 0), (false, 'N'));
        let cgroup = Event { time_ns: 0, sector: 0, bytes: 8, action: READ | QUEUE | TA_CGROUP, device: 0 };
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
