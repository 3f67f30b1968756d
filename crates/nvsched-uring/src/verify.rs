//! `verify=crc32c`: each written block starts with a header naming its offset, a
//! generation and a CRC32C of the header fields and the payload, so a read can tell
//! a torn, misplaced or corrupted block from a good one.

use nvsched_core::rng::mix64;
use nvsched_workload::written::Block;

pub const MAGIC: u32 = 0x4e56_5356; // "NVSV"
pub const HEADER_BYTES: usize = 32;

/// Fills `buf` (one block written at `offset`) with a payload and its header.
pub fn fill(buf: &mut [u8], offset: u64, generation: u64) {
    let mut x = mix64(offset ^ generation.rotate_left(32)) | 1;
    for chunk in buf[HEADER_BYTES..].chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    let len = buf.len() as u32;
    buf[4..8].copy_from_slice(&len.to_le_bytes());
    buf[8..16].copy_from_slice(&offset.to_le_bytes());
    buf[16..24].copy_from_slice(&generation.to_le_bytes());
    let crc = checksum(buf);
    buf[24..28].copy_from_slice(&crc.to_le_bytes());
}

fn checksum(buf: &[u8]) -> u32 {
    let c = crc32c::crc32c(&buf[0..24]);
    crc32c::crc32c_append(c, &buf[HEADER_BYTES..])
}

/// Checks a block read back from `offset`; `expected` when known (verify_only knows
/// only where blocks are).
pub fn check(buf: &[u8], offset: u64, expected: Option<&Block>) -> Result<(), String> {
    let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    if u32_at(0) != MAGIC {
        return Err(format!("block at offset {offset}: no verify header (magic {:#010x})", u32_at(0)));
    }
    if u32_at(4) as usize != buf.len() {
        return Err(format!("block at offset {offset}: header says {} bytes, block is {}", u32_at(4), buf.len()));
    }
    if u64_at(8) != offset {
        return Err(format!("block at offset {offset}: header belongs to offset {}", u64_at(8)));
    }
    let stored = u32_at(24);
    let actual = checksum(buf);
    if stored != actual {
        return Err(format!("block at offset {offset}: crc32c mismatch (header {stored:#010x}, data {actual:#010x})"));
    }
    if let Some(b) = expected {
        let found = u64_at(16);
        if found != b.generation && !b.racing.contains(&found) {
            let g = b.generation;
            return Err(format!("block at offset {offset}: stale data (generation {found} instead of {g})"));
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
        let mut b = vec![0u8; 4096];
        fill(&mut b, 8192, 3);
        assert!(check(&b, 8192, Some(&block(3, &[]))).is_ok());
        assert!(check(&b, 4096, Some(&block(3, &[]))).unwrap_err().contains("belongs to offset 8192"));
        assert!(check(&b, 8192, Some(&block(4, &[]))).unwrap_err().contains("stale"));
        // generation 3 was in flight when 4 was issued: either may have landed last
        assert!(check(&b, 8192, Some(&block(4, &[3]))).is_ok());
        assert!(check(&b, 8192, Some(&block(5, &[4]))).unwrap_err().contains("generation 3 instead of 5"));
        b[1000] ^= 1;
        assert!(check(&b, 8192, Some(&block(3, &[]))).unwrap_err().contains("crc32c mismatch"));
        let zeros = vec![0u8; 4096];
        assert!(check(&zeros, 0, None).unwrap_err().contains("no verify header"));
    }
}
