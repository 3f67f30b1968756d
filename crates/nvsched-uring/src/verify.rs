//! `verify=crc32c`: each written block starts with a header naming its offset, a
//! generation and a CRC32C of the header fields and the payload, so a read can tell
//! a torn, misplaced or corrupted block from a good one. `verify_interval` puts a header
//! at the start of each interval of the block instead; `verify_pattern` fills the block
//! with a pattern under its headers; `verify=pattern` writes the pattern alone and checks
//! every byte of it.

use nvsched_core::rng::mix64;
use nvsched_workload::buffers::fill_fixed;
use nvsched_workload::written::Block;
use nvsched_workload::VerifyFormat;

pub const MAGIC: u32 = 0x4e56_5356; // "NVSV"
pub const HEADER_BYTES: usize = 32;

/// The byte ranges of `len` bytes that each carry a header: `interval` bytes each (0:
/// one for the whole block); a tail shorter than an interval joins the last one.
fn header_ranges(len: usize, interval: u32) -> impl Iterator<Item = std::ops::Range<usize>> {
    let step = match interval as usize {
        0 => len.max(1),
        n => n.min(len.max(1)),
    };
    let count = (len / step).max(1);
    (0..count).map(move |k| k * step..if k + 1 == count { len } else { (k + 1) * step })
}

/// Fills `buf` (one block written at `offset`) with a payload and its headers.
pub fn fill(buf: &mut [u8], offset: u64, generation: u64, format: &VerifyFormat) {
    if !format.pattern.is_empty() {
        fill_fixed(buf, &format.pattern);
    }
    if format.pattern_only {
        return;
    }
    for range in header_ranges(buf.len(), format.interval) {
        let at = offset + range.start as u64;
        let chunk = &mut buf[range];
        if format.pattern.is_empty() {
            let mut x = mix64(at ^ generation.rotate_left(32)) | 1;
            for word in chunk[HEADER_BYTES..].chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                word.copy_from_slice(&x.to_le_bytes()[..word.len()]);
            }
        }
        chunk[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        let len = chunk.len() as u32;
        chunk[4..8].copy_from_slice(&len.to_le_bytes());
        chunk[8..16].copy_from_slice(&at.to_le_bytes());
        chunk[16..24].copy_from_slice(&generation.to_le_bytes());
        let crc = checksum(chunk);
        chunk[24..28].copy_from_slice(&crc.to_le_bytes());
    }
}

fn checksum(buf: &[u8]) -> u32 {
    let c = crc32c::crc32c(&buf[0..24]);
    crc32c::crc32c_append(c, &buf[HEADER_BYTES..])
}

/// Checks a block read back from `offset`; `expected` when known (verify_only knows
/// only where blocks are).
pub fn check(buf: &[u8], offset: u64, expected: Option<&Block>, format: &VerifyFormat) -> Result<(), String> {
    if format.pretend {
        return Ok(());
    }
    if format.pattern_only {
        let pattern = format.pattern.iter().cycle();
        return match buf.iter().zip(pattern).position(|(b, p)| b != p) {
            None => Ok(()),
            Some(i) => Err(format!(
                "block at offset {offset}: byte {i} is {:#04x} where the pattern has {:#04x}",
                buf[i],
                format.pattern[i % format.pattern.len()]
            )),
        };
    }
    for range in header_ranges(buf.len(), format.interval) {
        let at = offset + range.start as u64;
        check_header(&buf[range], at, expected).map_err(|e| match at == offset {
            true => format!("block at offset {offset}: {e}"),
            false => format!("block at offset {offset}, header at {at}: {e}"),
        })?;
    }
    Ok(())
}

/// Checks one header and the bytes it covers, read back from `offset`.
fn check_header(buf: &[u8], offset: u64, expected: Option<&Block>) -> Result<(), String> {
    let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    if u32_at(0) != MAGIC {
        return Err(format!("no verify header (magic {:#010x})", u32_at(0)));
    }
    if u32_at(4) as usize != buf.len() {
        return Err(format!("header says {} bytes, it covers {}", u32_at(4), buf.len()));
    }
    if u64_at(8) != offset {
        return Err(format!("header belongs to offset {}", u64_at(8)));
    }
    let stored = u32_at(24);
    let actual = checksum(buf);
    if stored != actual {
        return Err(format!("crc32c mismatch (header {stored:#010x}, data {actual:#010x})"));
    }
    if let Some(b) = expected {
        let found = u64_at(16);
        if found != b.generation && !b.racing.contains(&found) {
            let g = b.generation;
            return Err(format!("stale data (generation {found} instead of {g})"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(generation: u64, racing: &[u64]) -> Block {
        Block { len: 4096, generation, racing: racing.to_vec() }
    }

    #[test]
    fn good_blocks_pass_and_damage_is_found() {
        let whole = VerifyFormat::default();
        let mut b = vec![0u8; 4096];
        fill(&mut b, 8192, 3, &whole);
        assert!(check(&b, 8192, Some(&block(3, &[])), &whole).is_ok());
        assert!(check(&b, 4096, Some(&block(3, &[])), &whole).unwrap_err().contains("belongs to offset 8192"));
        assert!(check(&b, 8192, Some(&block(4, &[])), &whole).unwrap_err().contains("stale"));
        // generation 3 was in flight when 4 was issued: either may have landed last
        assert!(check(&b, 8192, Some(&block(4, &[3])), &whole).is_ok());
        assert!(check(&b, 8192, Some(&block(5, &[4])), &whole).unwrap_err().contains("generation 3 instead of 5"));
        b[1000] ^= 1;
        assert!(check(&b, 8192, Some(&block(3, &[])), &whole).unwrap_err().contains("crc32c mismatch"));
        let zeros = vec![0u8; 4096];
        assert!(check(&zeros, 0, None, &whole).unwrap_err().contains("no verify header"));
    }

    #[test]
    fn intervals_carry_a_header_each_and_patterns_fill_the_rest() {
        let format = VerifyFormat { interval: 512, pattern: vec![0xaa, 0x55, 0x5a, 0xa5], ..VerifyFormat::default() };
        let mut b = vec![0u8; 4096];
        fill(&mut b, 8192, 3, &format);
        for k in 0..8u64 {
            let at = k as usize * 512;
            assert_eq!(b[at..at + 4], MAGIC.to_le_bytes());
            assert_eq!(u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()), 8192 + k * 512);
            assert_eq!(b[at + 32..at + 36], [0xaa, 0x55, 0x5a, 0xa5], "the pattern under the header");
        }
        assert!(check(&b, 8192, Some(&block(3, &[])), &format).is_ok());
        b[3000] ^= 1;
        let e = check(&b, 8192, Some(&block(3, &[])), &format).unwrap_err();
        assert!(e.contains("block at offset 8192, header at 10752: crc32c mismatch"), "{e}");
        // a tail shorter than an interval joins the last one
        let mut b = vec![0u8; 1300];
        fill(&mut b, 0, 1, &format);
        assert_eq!(u32::from_le_bytes(b[516..520].try_into().unwrap()), 1300 - 512);
        assert!(check(&b, 0, None, &format).is_ok());
    }

    #[test]
    fn a_strict_pattern_is_checked_byte_by_byte() {
        let format =
            VerifyFormat { interval: 0, pattern: b"abc".to_vec(), pattern_only: true, ..VerifyFormat::default() };
        let mut b = vec![0u8; 4096];
        fill(&mut b, 0, 1, &format);
        assert_eq!(&b[..7], b"abcabca");
        assert!(check(&b, 4096, None, &format).is_ok(), "no header: any offset, any generation");
        b[4000] = b'x';
        let e = check(&b, 4096, None, &format).unwrap_err();
        assert!(e.contains("byte 4000 is 0x78 where the pattern has 0x62"), "{e}");
    }
}
