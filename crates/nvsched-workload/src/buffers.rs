//! What a job's writes carry: fio's buffer options (`zero_buffers`, `refill_buffers`,
//! `scramble_buffers`, `buffer_pattern`, `buffer_compress_percentage`,
//! `buffer_compress_chunk`, `dedupe_percentage`).
//!
//! Only real devices see the bytes: a drive that compresses or deduplicates (and a thin
//! virtual disk that skips zeros) writes less for compressible or repeated data, so the
//! content changes what is measured. The simulated drives store neither, and ignore it.

use nvsched_core::SimRng;

/// fio's scramble works on 512-byte sectors.
const SECTOR_BYTES: usize = 512;

/// The buffer options of one job, with fio's implications applied by [`settle`].
///
/// [`settle`]: BufferSpec::settle
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    /// `zero_buffers`: writes carry zeros.
    pub zero: bool,
    /// `refill_buffers`: every write gets fresh content. Otherwise a buffer is filled once
    /// (and again after a read lands in it) and reused.
    pub refill: bool,
    /// `scramble_buffers` (fio's default): a reused buffer gets the write's offset and a
    /// time stamp in each 512-byte sector, so no two writes are identical.
    pub scramble: bool,
    /// `buffer_pattern`: the bytes repeated over the buffer (or over its compressible
    /// share, with `buffer_compress_percentage`).
    pub pattern: Vec<u8>,
    /// `buffer_compress_percentage`: the share of each piece that is zeros (or the
    /// pattern); the rest is random.
    pub compress_percentage: u8,
    /// `buffer_compress_chunk`: the piece the percentage applies to; 0: the job's smallest
    /// write.
    pub compress_chunk_bytes: u32,
    /// `dedupe_percentage`: the share of pieces that repeat an earlier piece.
    pub dedupe_percentage: u8,
}

impl Default for BufferSpec {
    fn default() -> BufferSpec {
        BufferSpec {
            zero: false,
            refill: false,
            scramble: true,
            pattern: Vec::new(),
            compress_percentage: 0,
            compress_chunk_bytes: 0,
            dedupe_percentage: 0,
        }
    }
}

impl BufferSpec {
    /// Applies what fio derives from the options once they are all read; `set` says
    /// whether the job (or `[global]`) set an option explicitly.
    pub fn settle(&mut self, set: impl Fn(&str) -> bool) {
        let mixed = self.compress_percentage > 0 || self.dedupe_percentage > 0;
        if self.compress_percentage == 100 {
            // all compressible: zeros (or the pattern), filled once
            self.compress_percentage = 0;
            if self.pattern.is_empty() {
                self.zero = true;
            }
        } else if mixed && !set("refill_buffers") {
            self.refill = true;
        }
        if !set("scramble_buffers") && (!self.pattern.is_empty() || (self.zero && set("zero_buffers"))) {
            self.scramble = false;
        }
        if mixed {
            // the share of compressible or repeated data is the point: no scrambling it
            self.scramble = false;
        }
    }
}

/// Parses fio's `buffer_pattern`: a sequence of `0x`-prefixed hex strings (bytes in the
/// order written), quoted strings, and decimal integers (stored little-endian in as few
/// bytes as they need, 0 as one zero byte), optionally separated by spaces or `|`.
pub fn parse_pattern(raw: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = raw.trim();
    if rest.is_empty() {
        return Err("an empty pattern".into());
    }
    while !rest.is_empty() {
        let c = rest.as_bytes()[0];
        if c == b' ' || c == b'|' || c == b'\t' {
            rest = &rest[1..];
        } else if c == b'"' || c == b'\'' {
            let body = &rest[1..];
            let Some(end) = body.find(c as char) else {
                return Err(format!("unterminated string in pattern '{raw}'"));
            };
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else if rest.len() > 2 && (rest.starts_with("0x") || rest.starts_with("0X")) {
            let hex = &rest[2..];
            let mut n = hex.bytes().take_while(u8::is_ascii_hexdigit).count();
            if n == 0 {
                return Err(format!("'0x' without hex digits in pattern '{raw}'"));
            }
            // "0xff0x14" is two numbers: the digit before the next "0x" belongs to it
            if n < hex.len() && n > 0 && (hex.as_bytes()[n] == b'x' || hex.as_bytes()[n] == b'X') {
                n -= 1;
            }
            let digits = &hex[..n];
            let (head, tail) = digits.split_at(digits.len() % 2);
            if !head.is_empty() {
                out.push(u8::from_str_radix(head, 16).expect("hex digit"));
            }
            for pair in tail.as_bytes().chunks(2) {
                let s = std::str::from_utf8(pair).expect("ascii");
                out.push(u8::from_str_radix(s, 16).expect("hex digits"));
            }
            rest = &hex[n..];
        } else if c.is_ascii_digit() || c == b'-' {
            let sign = usize::from(c == b'-');
            let n = sign + rest[sign..].bytes().take_while(u8::is_ascii_digit).count();
            // a decimal ends where a "0x" begins ("10x" is not a number here)
            let end = rest[..n].find("0x").filter(|&i| i > 0).unwrap_or(n);
            let value: i64 =
                rest[..end].parse().map_err(|_| format!("'{}' is not a number in pattern '{raw}'", &rest[..end]))?;
            let value = i32::try_from(value)
                .map_err(|_| format!("{value} is out of range (a 32-bit integer) in pattern '{raw}'"))?;
            let mut v = value as u32;
            if v == 0 {
                out.push(0);
            }
            while v != 0 {
                out.push(v as u8);
                v >>= 8;
            }
            rest = &rest[end..];
        } else if c == b'%' {
            return Err(format!(
                "'{raw}': pattern format specifiers (such as %o, the offset) are not supported; give the bytes"
            ));
        } else {
            return Err(format!("'{raw}' is not a pattern: give 0x-prefixed hex, a decimal number or a quoted string"));
        }
    }
    Ok(out)
}

/// The content of one job clone's write buffers, as fio makes it.
#[derive(Clone, Debug)]
pub struct BufferFiller {
    spec: BufferSpec,
    /// The smallest write: the piece compression and dedupe work on (with the chunk).
    piece_bytes: usize,
    /// The largest write: what a buffer filled for reuse must cover.
    max_write_bytes: usize,
    seeds: SimRng,
    dedupe: SimRng,
    last_seed: Option<u64>,
}

impl BufferFiller {
    pub fn new(spec: &BufferSpec, min_write_bytes: u32, max_write_bytes: u32, seed: u64) -> BufferFiller {
        let chunk = spec.compress_chunk_bytes;
        let piece = if chunk == 0 { min_write_bytes } else { chunk.min(min_write_bytes.max(1)) };
        BufferFiller {
            spec: spec.clone(),
            piece_bytes: piece.max(1) as usize,
            max_write_bytes: max_write_bytes as usize,
            seeds: SimRng::stream(seed, 0xb0ff_e125),
            dedupe: SimRng::stream(seed, 0xdede_0915),
            last_seed: None,
        }
    }

    /// Every write gets fresh content (`refill_buffers`, or implied).
    pub fn refills(&self) -> bool {
        self.spec.refill
    }

    /// A reused buffer is scrambled before it is written again.
    pub fn scrambles(&self) -> bool {
        self.spec.scramble
    }

    fn next_seed(&mut self) -> u64 {
        let pct = u64::from(self.spec.dedupe_percentage);
        if let Some(last) = self.last_seed {
            if pct > 0 && self.dedupe.below(100) < pct {
                return last;
            }
        }
        let seed = self.seeds.next_u64();
        self.last_seed = Some(seed);
        seed
    }

    /// Fills `buf` with fresh content for a write.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let spec = &self.spec;
        if spec.compress_percentage > 0 || spec.dedupe_percentage > 0 {
            let random_share = 100 - usize::from(spec.compress_percentage);
            let piece_bytes = self.piece_bytes;
            for piece in buf.chunks_mut(piece_bytes) {
                let seed = self.next_seed();
                let random_len = piece.len() * random_share / 100;
                let (random, fixed) = piece.split_at_mut(random_len);
                fill_random(random, &mut SimRng::seed_from(seed));
                fill_fixed(fixed, &self.spec.pattern);
            }
        } else if !spec.pattern.is_empty() || spec.zero {
            fill_fixed(buf, &spec.pattern);
        } else {
            let seed = self.next_seed();
            fill_random(buf, &mut SimRng::seed_from(seed));
        }
    }

    /// Fills the start of `buf` that the largest write uses, for reuse.
    pub fn fill_for_reuse(&mut self, buf: &mut [u8]) {
        let len = buf.len().min(self.max_write_bytes);
        self.fill(&mut buf[..len]);
    }

    /// Makes a reused buffer differ from every other write, as fio's scramble does: the
    /// write's byte offset in the first 8 bytes of each 512-byte sector and `stamp` (the
    /// issue time) in its last 8. fio moves the offset's spot with the clock, which over
    /// many writes replaces more and more of the random data with offsets; fixed spots
    /// keep the rest of the buffer as it was filled.
    pub fn scramble(buf: &mut [u8], offset_bytes: u64, stamp: u64) {
        let mut sector_offset = offset_bytes;
        for sector in buf.chunks_exact_mut(SECTOR_BYTES) {
            sector[..8].copy_from_slice(&sector_offset.to_le_bytes());
            sector[SECTOR_BYTES - 8..].copy_from_slice(&stamp.to_le_bytes());
            sector_offset += SECTOR_BYTES as u64;
        }
    }
}

/// Fills `buf` with the generator's bytes.
pub fn fill_random(buf: &mut [u8], rng: &mut SimRng) {
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let tail = words.into_remainder();
    let last = rng.next_u64().to_le_bytes();
    tail.copy_from_slice(&last[..tail.len()]);
}

/// Zeros, or `pattern` repeated from the start of `buf` (write buffers, and verified
/// blocks under their headers).
pub fn fill_fixed(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        buf.fill(0);
    } else {
        for (b, p) in buf.iter_mut().zip(pattern.iter().cycle()) {
            *b = *p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(f: impl FnOnce(&mut BufferSpec), set: &[&str]) -> BufferSpec {
        let mut s = BufferSpec::default();
        f(&mut s);
        s.settle(|o| set.contains(&o));
        s
    }

    #[test]
    fn patterns_parse_as_fio_reads_them() {
        assert_eq!(parse_pattern("0xdeadbeef").unwrap(), vec![0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(parse_pattern("0xabc").unwrap(), vec![0x0a, 0xbc]);
        assert_eq!(parse_pattern("0xff0x14").unwrap(), vec![0xff, 0x14]);
        assert_eq!(parse_pattern("\"abc\"").unwrap(), b"abc".to_vec());
        assert_eq!(parse_pattern("1234").unwrap(), vec![0xd2, 0x04]);
        assert_eq!(parse_pattern("0").unwrap(), vec![0]);
        assert_eq!(parse_pattern("-1").unwrap(), vec![0xff; 4]);
        assert_eq!(parse_pattern("0xaa|\"b\" 7").unwrap(), vec![0xaa, b'b', 7]);
        for bad in ["", "\"abc", "zz", "%o", "0x", "99999999999"] {
            assert!(parse_pattern(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn no_pattern_text_panics() {
        let alphabet: Vec<char> = "0x19aF\"' |%-éz".chars().collect();
        let mut rng = SimRng::seed_from(11);
        for _ in 0..20_000 {
            let len = rng.below(12) as usize;
            let text: String = (0..len).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect();
            let _ = parse_pattern(&text);
        }
    }

    #[test]
    fn options_imply_what_fio_implies() {
        let d = settled(|_| {}, &[]);
        assert!(d.scramble && !d.refill && !d.zero && d == BufferSpec::default());
        let z = settled(|s| s.zero = true, &["zero_buffers"]);
        assert!(z.zero && !z.scramble, "explicit zero_buffers turns the default scramble off");
        let c = settled(|s| s.compress_percentage = 50, &["buffer_compress_percentage"]);
        assert!(c.refill && !c.scramble);
        let c_norefill = settled(|s| s.compress_percentage = 50, &["refill_buffers"]);
        assert!(!c_norefill.refill, "an explicit refill_buffers=0 wins");
        let all = settled(|s| s.compress_percentage = 100, &[]);
        assert!(all.zero && all.compress_percentage == 0 && !all.refill);
        let p = settled(|s| s.pattern = vec![1, 2], &["buffer_pattern"]);
        assert!(!p.scramble && !p.refill);
        let d2 = settled(|s| s.dedupe_percentage = 30, &[]);
        assert!(d2.refill && !d2.scramble);
    }

    #[test]
    fn compressible_pieces_are_random_then_fixed() {
        let spec = settled(
            |s| {
                s.compress_percentage = 25;
                s.compress_chunk_bytes = 1024;
                s.pattern = vec![0xab];
            },
            &[],
        );
        let mut f = BufferFiller::new(&spec, 4096, 4096, 1);
        let mut buf = vec![0u8; 4096];
        f.fill(&mut buf);
        for piece in buf.chunks(1024) {
            assert!(piece[768..].iter().all(|&b| b == 0xab), "the last quarter is the pattern");
            assert!(piece[..768].iter().filter(|&&b| b == 0xab).count() < 20, "the rest is random");
        }
        assert_ne!(&buf[..768], &buf[1024..1792], "each piece has its own random part");
    }

    #[test]
    fn dedupe_repeats_that_share_of_pieces() {
        let spec = settled(|s| s.dedupe_percentage = 40, &[]);
        let mut f = BufferFiller::new(&spec, 4096, 4096, 7);
        let mut seen = std::collections::HashSet::new();
        let n = 5000;
        let mut buf = vec![0u8; 4096];
        for _ in 0..n {
            f.fill(&mut buf);
            seen.insert(buf.clone());
        }
        let repeated = 1.0 - seen.len() as f64 / f64::from(n);
        assert!((repeated - 0.40).abs() < 0.03, "{repeated} of the buffers repeat an earlier one");
    }

    #[test]
    fn default_content_is_random_and_scramble_makes_writes_differ() {
        let spec = settled(|_| {}, &[]);
        let mut f = BufferFiller::new(&spec, 4096, 4096, 3);
        let mut a = vec![0u8; 4096];
        f.fill(&mut a);
        let zeros = a.iter().filter(|&&b| b == 0).count();
        assert!(zeros < 64, "random data has few zero bytes ({zeros})");
        let mut b = a.clone();
        BufferFiller::scramble(&mut a, 0, 1_000);
        BufferFiller::scramble(&mut b, 4096, 1_000);
        assert_ne!(a, b, "the same buffer written at two offsets differs");
        let changed = a.iter().zip(b.iter()).filter(|(x, y)| x != y).count();
        assert!(changed <= 8 * 8, "the two differ in their offsets only ({changed} bytes)");
        let mut c = a.clone();
        for stamp in 0..1000 {
            BufferFiller::scramble(&mut c, 0, stamp * 7919);
        }
        let kept = a.iter().zip(c.iter()).filter(|(x, y)| x == y).count();
        assert!(kept >= 4096 - 8 * 16, "a thousand scrambles keep the rest of the data ({kept} bytes kept)");
        let mut zeros = vec![0u8; 4096];
        let spec = settled(|s| s.zero = true, &["zero_buffers"]);
        BufferFiller::new(&spec, 4096, 4096, 3).fill(&mut zeros);
        assert!(zeros.iter().all(|&b| b == 0));
    }

    #[test]
    fn pattern_fills_repeat_it_from_the_start() {
        let spec = settled(|s| s.pattern = vec![1, 2, 3], &["buffer_pattern"]);
        let mut buf = vec![0u8; 10];
        BufferFiller::new(&spec, 4096, 4096, 0).fill(&mut buf);
        assert_eq!(buf, vec![1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);
    }
}
