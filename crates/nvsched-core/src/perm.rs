//! A keyed pseudo-random permutation of `[0, n)` in O(1) memory: fio's random map
//! (every block once per pass) and preconditioning both use it.

use crate::rng::mix64;

/// A keyed pseudo-random permutation of `[0, n)`: a 4-round Feistel network on the
/// smallest even-width bit domain covering `n`, with cycle walking. Each pass uses new
/// keys, so passes visit blocks in different orders.
#[derive(Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    index: u64,
    pass: u64,
    seed: u64,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        assert!(n > 0, "empty permutation");
        let bits = 64 - (n - 1).max(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut p = Permutation { n, half_bits, index: 0, pass: 0, seed, keys: [0; 4] };
        p.rekey();
        p
    }

    fn rekey(&mut self) {
        for (i, k) in self.keys.iter_mut().enumerate() {
            *k = mix64(self.seed ^ mix64(self.pass * 4 + i as u64 + 1));
        }
    }

    #[inline]
    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// Passes started after the first.
    pub fn pass(&self) -> u64 {
        self.pass
    }

    /// The next element of the current pass; a new pass starts after `n` elements.
    #[inline]
    pub fn next_index(&mut self) -> u64 {
        if self.index == self.n {
            self.index = 0;
            self.pass += 1;
            self.rekey();
        }
        let mut x = self.index;
        self.index += 1;
        loop {
            x = self.permute(x);
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn permutation_visits_every_block_once_per_pass() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let mut p = Permutation::new(n, 42);
            let first: Vec<u64> = (0..n).map(|_| p.next_index()).collect();
            let set: HashSet<u64> = first.iter().copied().collect();
            assert_eq!(set.len() as u64, n);
            assert!(first.iter().all(|&x| x < n));
            let second: Vec<u64> = (0..n).map(|_| p.next_index()).collect();
            assert_eq!(second.iter().copied().collect::<HashSet<_>>().len() as u64, n);
            if n > 10 {
                assert_ne!(first, second, "passes use different orders");
            }
        }
    }
}
