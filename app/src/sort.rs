//! One stable sort for the whole page. Each `slice::sort_by` with its own
//! closure instantiates the standard library's driftsort again (4 to 6 KB of
//! wasm each): the page's 47 were 214 KB of its code, 47 KB gzipped of a
//! first visit. Here the standard sort runs once, on indices with the
//! comparison behind `dyn`, and the order found is applied in place; the
//! result is the standard stable sort's, element for element.

use std::cmp::Ordering;

/// `v.sort_by(cmp)`, stable, through the one shared instantiation.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let order = stable_order(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(v, &order);
}

/// `v.sort_by_key(key)`, stable, through the one shared instantiation.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// The stable order of `0..n` under `cmp` (the only driftsort of the page).
#[inline(never)]
fn stable_order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Puts `v[order[i]]` at `i` for every `i`, following each cycle of the
/// permutation once (O(n) swaps).
fn permute<T>(v: &mut [T], order: &[usize]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        if done[start] {
            continue;
        }
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_standard_stable_sort() {
        // Ties, reversed runs and repeats: stability shows in the second field.
        let mut state = 0x2545_f491_u64;
        for n in [0usize, 1, 2, 3, 17, 64, 1000] {
            let items: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    ((state % 7) as u8, i)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_by_key(|p| p.0);
            let mut got = items.clone();
            sort_by_key(&mut got, |p| p.0);
            assert_eq!(got, expected, "n = {n}");
            let mut expected = items.clone();
            expected.sort_by(|a, b| b.0.cmp(&a.0));
            let mut got = items;
            sort_by(&mut got, |a, b| b.0.cmp(&a.0));
            assert_eq!(got, expected, "n = {n}, descending");
        }
    }
}
