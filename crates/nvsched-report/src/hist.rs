//! fio's log-linear latency histogram (`stat.h`: `FIO_IO_U_PLAT_BITS = 6`): values below
//! 128 ns are exact; above, each power of two is split into 64 buckets, so a reported
//! value (the bucket's middle) is within 1/128 (< 0.8%) of every sample in the bucket.
//! Using fio's own buckets means percentiles and `json+` bins mean exactly what fio's
//! do, with bounded memory. fio stops at 29 groups (~17 s); nvsched keeps the same
//! buckets up to 36 groups (~36 min) so long simulated stalls stay within 1% too.

const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: usize = 36;
/// Number of buckets.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// Counts of latency samples (nanoseconds) in fio's buckets. The buckets (18 KiB) are
/// allocated with the first sample, so the directions a job never uses cost nothing.
#[derive(Clone, Default)]
pub struct FioHistogram {
    /// Empty until the first sample, then `PLAT_NR` counts.
    buckets: Box<[u64]>,
    total: u64,
}

impl PartialEq for FioHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total && self.bins().eq(other.bins())
    }
}

impl Eq for FioHistogram {}

impl std::fmt::Debug for FioHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FioHistogram {{ total: {} }}", self.total)
    }
}

/// Bucket index of a value (fio's `plat_val_to_idx`).
#[inline]
pub fn value_to_index(value: u64) -> usize {
    let msb = if value == 0 { 0 } else { 63 - value.leading_zeros() };
    if msb <= PLAT_BITS {
        return value as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as usize + 1) << PLAT_BITS;
    let offset = ((value >> error_bits) & (PLAT_VAL - 1)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio reports for a bucket: its middle (fio's `plat_idx_to_val`).
#[inline]
pub fn index_to_value(index: usize) -> u64 {
    if index < (PLAT_VAL as usize) << 1 {
        return index as u64;
    }
    let error_bits = (index >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (index as u64) % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

impl FioHistogram {
    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        if self.buckets.is_empty() {
            self.allocate();
        }
        self.buckets[value_to_index(value_ns)] += 1;
        self.total += 1;
    }

    #[cold]
    fn allocate(&mut self) {
        self.buckets = vec![0; PLAT_NR].into_boxed_slice();
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn merge(&mut self, other: &FioHistogram) {
        if other.buckets.is_empty() {
            return;
        }
        if self.buckets.is_empty() {
            self.allocate();
        }
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.total += other.total;
    }

    /// Percentiles the way fio computes them: walk the buckets, the answer for `p` is the
    /// first bucket where the running count reaches `p/100 * N`. `list` need not be
    /// sorted; results come back in its order. Empty histogram → zeros.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let mut order: Vec<usize> = (0..list.len()).collect();
        order.sort_by(|&a, &b| list[a].total_cmp(&list[b]));
        let mut out = vec![0u64; list.len()];
        if self.total == 0 {
            return out;
        }
        let n = self.total as f64;
        let mut sum = 0u64;
        let mut j = 0;
        for (i, &count) in self.buckets.iter().enumerate() {
            sum += count;
            while j < order.len() && sum as f64 >= list[order[j]] / 100.0 * n {
                out[order[j]] = index_to_value(i);
                j += 1;
            }
            if j == order.len() {
                break;
            }
        }
        while j < order.len() {
            out[order[j]] = index_to_value(PLAT_NR - 1);
            j += 1;
        }
        out
    }

    pub fn percentile(&self, p: f64) -> u64 {
        self.percentiles(&[p])[0]
    }

    /// Non-empty buckets as (bucket value in ns, count), for `json+`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (index_to_value(i), *c))
    }

    /// Fraction of samples with value at most `limit_ns` (by bucket value).
    pub fn fraction_at_most(&self, limit_ns: u64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let below: u64 = self.bins().take_while(|(v, _)| *v <= limit_ns).map(|(_, c)| c).sum();
        below as f64 / self.total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_fio_bucket_values() {
        // values seen in fio's own output (../shared/reference/workloads.md §2.4)
        assert_eq!(index_to_value(value_to_index(211)), 211);
        assert_eq!(index_to_value(value_to_index(342)), 342);
        for v in 0..128 {
            assert_eq!(index_to_value(value_to_index(v)), v, "exact below 128");
        }
    }

    #[test]
    fn relative_error_is_below_one_percent() {
        let mut v = 128u64;
        while v < 1 << 41 {
            let back = index_to_value(value_to_index(v));
            let err = (back as f64 - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 128.0 + 1e-12, "{v} -> {back}: {err}");
            v = v * 17 / 16 + 1;
        }
    }

    #[test]
    fn percentiles_walk_buckets() {
        let mut h = FioHistogram::default();
        for v in 1..=100u64 {
            h.record(v);
        }
        assert_eq!(h.percentiles(&[50.0, 99.0, 1.0]), vec![50, 99, 1]);
        assert_eq!(h.percentile(100.0), 100);
        let empty = FioHistogram::default();
        assert_eq!(empty.percentile(99.9), 0);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = FioHistogram::default();
        let mut b = FioHistogram::default();
        a.record(1000);
        b.record(1000);
        b.record(5_000_000);
        a.merge(&b);
        assert_eq!(a.total(), 3);
        assert_eq!(a.bins().count(), 2);
    }

    #[test]
    fn buckets_are_allocated_with_the_first_sample_and_an_empty_histogram_merges_as_none() {
        let mut unused = FioHistogram::default();
        assert!(unused.buckets.is_empty());
        unused.merge(&FioHistogram::default());
        assert!(unused.buckets.is_empty(), "merging nothing allocates nothing");
        let mut one = FioHistogram::default();
        one.record(7);
        assert_eq!(one.buckets.len(), PLAT_NR);
        unused.merge(&one);
        assert_eq!((unused.total(), unused.percentile(50.0)), (1, 7));
        assert_eq!(unused, one);
        // equal by their samples, allocated or not
        let mut zero_counts = FioHistogram::default();
        zero_counts.allocate();
        assert_eq!(zero_counts, FioHistogram::default());
        assert_ne!(one, FioHistogram::default());
    }
}
