//! The bounds both halves of a link share (the report's and the run-time
//! sections'): text shortened to a length, a series downsampled with its
//! peak kept, a list refused past the decoder's item limit.

use crate::LinkError;

/// Largest number of items in any list of a valid link.
const MAX_ITEMS: usize = 100_000;

/// Shortens `s` to at most `max_chars` characters, the last one `…`.
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Indices of at most `max_points` points of `values` that keep the shape:
/// the first, the last, the maximum (exactly) and the maximum of each bucket.
pub(crate) fn downsample_indices(values: &[u64], max_points: usize) -> Vec<usize> {
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

/// Refuses a list longer than a link may carry.
pub(crate) fn check_len<T>(what: &str, v: &[T]) -> Result<(), LinkError> {
    if v.len() > MAX_ITEMS {
        return Err(LinkError::Invalid(format!("{what} has {} items", v.len())));
    }
    Ok(())
}
