//! Which blocks a job's writes leave to be read back and checked (`verify`): a write
//! replaces the blocks it overlaps, writes of one block in flight together race, and a
//! write torn by a partly overlapping one in flight is left unchecked. Both engines' job
//! drivers list the blocks to read back from it; the io_uring engine also checks what each
//! read finds against it.

use std::collections::BTreeMap;

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

/// The generation [`WrittenBlocks`] gives a trim in flight: what overlaps it may read back
/// as its data or as zeros.
pub const TRIM_GENERATION: u64 = u64::MAX;

/// The blocks a clone wrote with verify headers, as its read-back will check them.
///
/// A write replaces the blocks it overlaps (fio's rule, so variable block sizes and
/// `norandommap` check what was written last). A write issued while an earlier write of
/// the same block is in flight races it: either may land last, so both generations are
/// good. A write issued while one that overlaps it only in part (or a trim of it) is in
/// flight may end up torn between the two: it is not checked, and counted as unsettled
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
                if (o, l) == (offset, len) && g != TRIM_GENERATION {
                    racing.push(g);
                } else {
                    torn = true;
                }
            }
        }
        self.forget_overlapping(file, offset, len);
        if torn {
            self.unsettled += 1;
        } else {
            self.blocks.insert((file, offset), Block { len, generation, racing });
        }
        self.in_flight.push((file, offset, len, generation));
        self.max_len = self.max_len.max(len);
    }

    /// A trim of `len` bytes at `offset` of file `file` is issued: the blocks it overlaps
    /// are no longer checked, and a write issued while it is in flight is torn.
    pub fn trimmed(&mut self, file: u16, offset: u64, len: u32) {
        self.forget_overlapping(file, offset, len);
        self.in_flight.push((file, offset, len, TRIM_GENERATION));
    }

    /// Drops the blocks that overlap `len` bytes at `offset` of file `file`: a later write
    /// or a trim replaced them. Blocks start at most `max_len` before the range.
    fn forget_overlapping(&mut self, file: u16, offset: u64, len: u32) {
        let end = offset + u64::from(len);
        let from = (file, offset.saturating_sub(u64::from(self.max_len.max(1)) - 1));
        let gone: Vec<(u16, u64)> = (self.blocks.range(from..(file, end)))
            .filter(|(&(_, o), b)| offset < o + u64::from(b.len))
            .map(|(&k, _)| k)
            .collect();
        for k in gone {
            self.blocks.remove(&k);
        }
    }

    /// The write of `len` bytes and `generation` (a trim: [`TRIM_GENERATION`]) at `offset`
    /// of file `file` completed (or failed).
    pub fn landed(&mut self, file: u16, offset: u64, len: u32, generation: u64) {
        // the length too: the driver's copy gives every write generation 0, and two writes
        // at one offset may differ in length
        let landed = (file, offset, len, generation);
        if let Some(i) = self.in_flight.iter().position(|&w| w == landed) {
            self.in_flight.swap_remove(i);
        }
    }

    /// The block written last at `offset` of file `file`, if it is to be checked.
    pub fn get(&self, file: u16, offset: u64) -> Option<&Block> {
        self.blocks.get(&(file, offset))
    }

    /// Removes the block at `offset` of file `file` from those left to check (it was read
    /// back already) and returns its length.
    pub fn take(&mut self, file: u16, offset: u64) -> Option<u32> {
        self.blocks.remove(&(file, offset)).map(|b| b.len)
    }

    /// Takes every block left to check, in file and offset order: (file, offset, length).
    pub fn take_all(&mut self) -> Vec<(u16, u64, u32)> {
        std::mem::take(&mut self.blocks).into_iter().map(|((f, o), b)| (f, o, b.len)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_blocks_it_overlaps() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 16384, 1);
        w.landed(0, 0, 16384, 1);
        w.issued(0, 8192, 4096, 2);
        w.landed(0, 8192, 4096, 2);
        w.issued(1, 8192, 4096, 3); // another file: no overlap
        w.landed(1, 8192, 4096, 3);
        w.issued(0, 12288, 8192, 4); // touches nothing of 8192..12288
        w.landed(0, 12288, 8192, 4);
        let got: Vec<(u16, u64, u64)> = w.blocks().map(|(f, o, b)| (f, o, b.generation)).collect();
        assert_eq!(got, vec![(0, 8192, 2), (0, 12288, 4), (1, 8192, 3)]);
        assert_eq!(w.unsettled(), 0);
    }

    #[test]
    fn writes_in_flight_together_race() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 4096, 1);
        w.issued(0, 0, 4096, 2); // 1 still in flight: either may land last
        w.landed(0, 0, 4096, 2);
        w.issued(0, 0, 4096, 3); // 1 still in flight, 2 landed
        w.landed(0, 0, 4096, 1);
        w.landed(0, 0, 4096, 3);
        w.issued(0, 0, 4096, 4); // nothing in flight: only 4 is good
        let b = w.blocks().next().unwrap().2.clone();
        assert_eq!(b, Block { len: 4096, generation: 4, racing: vec![] });
        w.issued(0, 2048, 4096, 5); // overlaps 4 in part while it is in flight: may be torn
        assert_eq!(w.blocks().count(), 0);
        assert_eq!(w.unsettled(), 1);
    }

    #[test]
    fn a_trim_removes_the_blocks_it_overlaps_and_tears_writes_issued_meanwhile() {
        let mut w = WrittenBlocks::default();
        for (o, g) in [(0, 1), (4096, 2), (8192, 3)] {
            w.issued(0, o, 4096, g);
            w.landed(0, o, 4096, g);
        }
        w.trimmed(0, 2048, 4096); // cuts into the first two
        assert_eq!(w.blocks().map(|(_, o, _)| o).collect::<Vec<_>>(), [8192]);
        w.issued(0, 2048, 4096, 4); // the trim is in flight: it may land after
        assert_eq!(w.unsettled(), 1);
        w.landed(0, 2048, 4096, TRIM_GENERATION);
        w.issued(0, 2048, 4096, 5);
        assert_eq!(w.blocks().map(|(_, o, b)| (o, b.generation)).collect::<Vec<_>>(), [(2048, 5), (8192, 3)]);
    }

    #[test]
    fn racing_generations_are_remembered() {
        let mut w = WrittenBlocks::default();
        w.issued(0, 0, 4096, 1);
        w.issued(0, 0, 4096, 2);
        w.landed(0, 0, 4096, 2);
        w.issued(0, 0, 4096, 3);
        let b = w.blocks().next().unwrap().2;
        assert_eq!((b.generation, b.racing.clone()), (3, vec![1]));
    }
}
