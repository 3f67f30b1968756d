//! Metrics the papers define over a run's per-job results.

/// MTS-CFQ's distribution error: the mean over tenants other than the lowest-weight one
/// (TVM) of |(BW_i / BW_TVM) - (w_i / w_TVM)| / (w_i / w_TVM). `tenants` holds
/// (weight, bandwidth). None with fewer than two tenants or a TVM without bandwidth.
pub fn distribution_error(tenants: &[(f64, f64)]) -> Option<f64> {
    let (tvm_idx, &(w_tvm, bw_tvm)) = tenants.iter().enumerate().min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    if tenants.len() < 2 || bw_tvm <= 0.0 {
        return None;
    }
    let errors: Vec<f64> = tenants
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != tvm_idx)
        .map(|(_, &(w, bw))| {
            let ideal = w / w_tvm;
            ((bw / bw_tvm) - ideal).abs() / ideal
        })
        .collect();
    Some(errors.iter().sum::<f64>() / errors.len() as f64)
}

/// TABS's fairness factor: min over max of BW_t / Fair_t for reads and FUA writes, with
/// Fair_t = Max_t * N_t / (N_read + N_FUA) and Max_t = N_t * the per-job alone bandwidth.
pub fn fairness_factor(
    read_bw: f64,
    fua_bw: f64,
    n_read: usize,
    n_fua: usize,
    read_alone: f64,
    fua_alone: f64,
) -> Option<f64> {
    nvsched_policy::policies::tabs::Tabs::fairness(read_bw, fua_bw, n_read, n_fua, read_alone, fua_alone)
}

/// Geometric mean of the ratios between consecutive values (e.g. runtimes ordered by
/// nice value).
pub fn mean_adjacent_ratio(values: &[f64]) -> Option<f64> {
    if values.len() < 2 || values.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let logs: f64 = values.windows(2).map(|w| (w[1] / w[0]).ln()).sum();
    Some((logs / (values.len() - 1) as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_error_is_zero_when_shares_follow_weights() {
        assert_eq!(distribution_error(&[(10.0, 100.0), (7.0, 70.0), (4.0, 40.0), (1.0, 10.0)]), Some(0.0));
        let e = distribution_error(&[(2.0, 150.0), (1.0, 100.0)]).unwrap();
        assert!((e - 0.25).abs() < 1e-12);
        assert!(distribution_error(&[(1.0, 1.0)]).is_none());
    }

    #[test]
    fn adjacent_ratio() {
        assert!((mean_adjacent_ratio(&[1.0, 1.1, 1.21]).unwrap() - 1.1).abs() < 1e-12);
    }
}
