//! Long series shortened for display and links.

/// Indices of at most `max_points` points of `values` that keep the shape:
/// the first, the last, the maximum (exactly) and the maximum of each bucket.
pub fn downsample_indices(values: &[u64], max_points: usize) -> Vec<usize> {
    let n = values.len();
    if n <= max_points || max_points < 3 {
        return (0..n).collect();
    }
    let peak = values
        .iter()
        .enumerate()
        .max_by_key(|(i, v)| (**v, std::cmp::Reverse(*i)))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let buckets = max_points - 2;
    let mut keep = vec![0, n - 1, peak];
    for b in 0..buckets {
        let lo = 1 + b * (n - 2) / buckets;
        let hi = (1 + (b + 1) * (n - 2) / buckets).min(n - 1);
        if lo >= hi {
            continue;
        }
        if let Some((i, _)) = values[lo..hi].iter().enumerate().max_by_key(|(_, v)| **v) {
            keep.push(lo + i);
        }
    }
    keep.sort_unstable();
    keep.dedup();
    keep
}
