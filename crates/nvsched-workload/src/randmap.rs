//! fio's random map for jobs whose I/Os can span several blocks (mixed block sizes, or
//! blocks larger than `blockalign`): a bit per block, so each pass touches every block
//! exactly once. An offset is drawn uniformly; a block already done moves on to the
//! next free one; an I/O is cut short at the first block already done (fio's
//! `get_next_rand_offset`, `axmap_next_free` and `mark_random_map`). Jobs with one block
//! size aligned to it use the O(1)-memory permutation instead, which visits blocks the
//! same way.

use nvsched_core::SimRng;

#[derive(Debug)]
pub struct RandomMap {
    /// Bit `b` of word `b / 64`: block `b` is done in this pass.
    done: Vec<u64>,
    blocks: u64,
    done_count: u64,
    /// Passes started after the first.
    pass: u64,
}

/// The largest map kept (bits): above it, the permutation stands in (as for a single
/// block size) and mixed sizes may overlap within a pass. 2^30 bits is 128 MiB.
pub const MAX_BLOCKS: u64 = 1 << 30;

impl RandomMap {
    pub fn new(blocks: u64) -> RandomMap {
        assert!(blocks > 0 && blocks <= MAX_BLOCKS, "random map of {blocks} blocks");
        RandomMap { done: vec![0; blocks.div_ceil(64) as usize], blocks, done_count: 0, pass: 0 }
    }

    pub fn pass(&self) -> u64 {
        self.pass
    }

    /// A block not yet done in this pass: a uniform draw, or the first free block after
    /// it (wrapping). When every block is done, a new pass starts with a clear map.
    #[inline]
    pub fn draw(&mut self, rng: &mut SimRng) -> u64 {
        if self.done_count == self.blocks {
            self.done.iter_mut().for_each(|w| *w = 0);
            self.done_count = 0;
            self.pass += 1;
        }
        let b = rng.below(self.blocks);
        if !self.is_done(b) {
            return b;
        }
        self.next_free(b).expect("a free block while the pass is not complete")
    }

    /// Marks the blocks an I/O of `blocks_wanted` blocks from `first` covers, stopping at
    /// the end or at a block already done; returns how many it covers (at least one:
    /// `first` comes from `draw`).
    #[inline]
    pub fn mark(&mut self, first: u64, blocks_wanted: u64) -> u64 {
        let mut n = 0;
        while n < blocks_wanted && first + n < self.blocks && !self.is_done(first + n) {
            self.done[((first + n) / 64) as usize] |= 1 << ((first + n) % 64);
            n += 1;
        }
        self.done_count += n;
        n
    }

    #[inline]
    fn is_done(&self, b: u64) -> bool {
        self.done[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    /// The first free block after `b`, wrapping to the start.
    fn next_free(&self, b: u64) -> Option<u64> {
        let words = self.done.len();
        let start = (b / 64) as usize;
        // the first word without the bits up to `b`, then every word, wrapping
        for i in 0..=words {
            let w = (start + i) % words;
            let mut free = !self.done[w];
            if i == 0 {
                free &= u64::MAX.checked_shl((b % 64) as u32 + 1).unwrap_or(0);
            }
            if free != 0 {
                let found = w as u64 * 64 + u64::from(free.trailing_zeros());
                if found < self.blocks {
                    return Some(found);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_covers_every_block_once_then_starts_over() {
        for blocks in [1u64, 63, 64, 65, 1000] {
            let mut map = RandomMap::new(blocks);
            let mut rng = SimRng::stream(7, 0);
            let mut seen = vec![0u32; blocks as usize];
            let mut covered = 0;
            while covered < blocks {
                let b = map.draw(&mut rng);
                // I/Os of up to 4 blocks, cut at the first done block
                let n = map.mark(b, 1 + rng.below(4));
                assert!(n >= 1);
                for k in b..b + n {
                    seen[k as usize] += 1;
                }
                covered += n;
            }
            assert!(seen.iter().all(|&s| s == 1), "{blocks}: {seen:?}");
            assert_eq!(map.pass(), 0);
            let b = map.draw(&mut rng);
            assert_eq!(map.pass(), 1, "{blocks}");
            assert_eq!(map.mark(b, 1), 1);
        }
    }

    #[test]
    fn a_done_block_moves_the_draw_to_the_next_free_one() {
        let mut map = RandomMap::new(130);
        assert_eq!(map.mark(0, 129), 129);
        assert_eq!(map.next_free(5), Some(129));
        assert_eq!(map.draw(&mut SimRng::stream(1, 0)), 129);
        // an I/O stops at the first done block
        let mut map = RandomMap::new(10);
        map.mark(6, 1);
        assert_eq!(map.mark(3, 8), 3);
        assert_eq!(map.mark(8, 8), 2, "and at the end");
        assert_eq!(map.next_free(9), Some(0), "wraps");
    }
}
