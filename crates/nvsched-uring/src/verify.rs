//! `verify=crc32c`: each written block starts with a header naming its offset, a
//! generation and a CRC32C of the header fields and the payload, so a read can tell
//! a torn, misplaced or corrupted block from a good one.

use std::collections::BTreeMap;

use nvsched_core::rng::mix64;

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

/// A block a clone wrote with a header: what a read of it must find.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub len: u32,
    pub generation: u64,
    /// Generations of earlier writes of the same block that were still in flight when
    /// this one was issued: the device may have completed them in either order, so any
    /// of them may be what the block holds.
    pub racing: Vec<u64>,
}

/// The blocks a clone wrote with verify headers, as the verify phase will check them.
///
/// A write replaces the blocks it overlaps (fio's rule, so variable block sizes and
/// `norandommap` check what was written last). A write issued while an earlier write of
/// the same block is in flight races it: either may land last, so both generations are
/// good. A write issued while one that overlaps it only in part is in flight may end up
/// torn between the two: it is not checked, and counted as unsettled
/// (`serialize_overlap=1` keeps such writes apart).
#[derive(Debug, Default)]
pub struct WrittenBlocks {
    blocks: BTreeMap<(u16, u64), Block>,
    /// Writes in flight: (file, offset, length, generation); at most `iodepth`.
    in_flight: Vec<(u16, u64, u32, u64)>,
    max_len: u32,
    unsettled: u64,
}

impl WrittenBlocks {
    /// A write of `len` bytes at `offset` of file `file`, header generation `generation`,
    /// is issued.
    pub fn issued(&mut self, file: u16, offset: u64, len: u32, generation: u64) {
        let end = offset + u64::from(len);
        let overlaps = |o: u64, l: u32| o < end && offset < o + u64::from(l);
        let mut racing = Vec::new();
        let mut torn = false;
        for &(f, o, l, g) in &self.in_flight {
            if f == file && overlaps(o, l) {
                if (o, l) == (offset, len) {
                    racing.push(g);
                } else {
                    torn = true;
                }
            }
        }
        let from = (file, offset.saturating_sub(u64::from(self.max_len.max(1)) - 1));
        let replaced: Vec<(u16, u64)> =
            (self.blocks.range(from..(file, end))).filter(|(&(_, o), b)| overlaps(o, b.len)).map(|(&k, _)| k).collect();
        for k in replaced {
            self.blocks.remove(&k);
        }
        if torn {
            self.unsettled += 1;
        } else {
            self.blocks.insert((file, offset), Block { len, generation, racing });
        }
        self.in_flight.push((file, offset, len, generation));
        self.max_len = self.max_len.max(len);
    }

    /// The write of `generation` at `offset` of file `file` completed (or failed).
    pub fn landed(&mut self, file: u16, offset: u64, generation: u64) {
        if let Some(i) = self.in_flight.iter().position(|&(f, o, _, g)| (f, o, g) == (file, offset, generation)) {
            self.in_flight.swap_remove(i);
        }
    }

    /// The blocks to check, in file and offset order.
    pub fn blocks(&self) -> impl Iterator<Item = (u16, u64, &Block)> {
        self.blocks.iter().map(|(&(f, o), b)| (f, o, b))
    }

    /// Writes left unchecked: a write overlapping them in part was in flight with them.
    pub fn unsettled(&self) -> u64 {
        self.unsettled
    }
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

    #[test]
    fn a_write_replaces_the_blocks_it_overlaps() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 16384, 1);
        w.landed(0, 0, 1);
        w.issued(0, 8192, 4096, 2);
        w.landed(0, 8192, 2);
        w.issued(1, 8192, 4096, 3); // another file: no overlap
        w.landed(1, 8192, 3);
        w.issued(0, 12288, 8192, 4); // touches nothing of 8192..12288
        w.landed(0, 12288, 4);
        let got: Vec<(u16, u64, u64)> = w.blocks().map(|(f, o, b)| (f, o, b.generation)).collect();
        assert_eq!(got, vec![(0, 8192, 2), (0, 12288, 4), (1, 8192, 3)]);
        assert_eq!(w.unsettled(), 0);
    }

    #[test]
    fn writes_in_flight_together_race() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 4096, 1);
        w.issued(0, 0, 4096, 2); // 1 still in flight: either may land last
        w.landed(0, 0, 2);
        w.issued(0, 0, 4096, 3); // 1 still in flight, 2 landed
        w.landed(0, 0, 1);
        w.landed(0, 0, 3);
        w.issued(0, 0, 4096, 4); // nothing in flight: only 4 is good
        let b = w.blocks().next().unwrap().2.clone();
        assert_eq!(b, Block { len: 4096, generation: 4, racing: vec![] });
        w.issued(0, 2048, 4096, 5); // overlaps 4 in part while it is in flight: may be torn
        assert_eq!(w.blocks().count(), 0);
        assert_eq!(w.unsettled(), 1);
    }

    #[test]
    fn racing_generations_are_remembered() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 4096, 1);
        w.issued(0, 0, 4096, 2);
        w.landed(0, 0, 2);
        w.issued(0, 0, 4096, 3);
        let b = w.blocks().next().unwrap().2;
        assert_eq!((b.generation, b.racing.clone()), (3, vec![1]));
    }
}
