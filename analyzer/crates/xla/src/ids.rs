//! Positions by XLA id (instruction ids, logical buffer ids): a table
//! indexed by the id when the ids are small and dense, as XLA numbers them
//! (0 up, one per instruction or buffer of the module), else a hash map.
//! The Memory Viewer looks an id up for every assigned buffer and every
//! heap event; hashing each (SipHash) was a tenth of its time.

use std::collections::HashMap;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Unset slot of the table.
const NONE: u32 = u32::MAX;

pub(crate) enum IdIndex {
    /// `table[id]`: the position, or [`NONE`].
    Dense(Vec<u32>),
    Sparse(FastMap<i64, u32>),
}

impl IdIndex {
    /// The index of `ids`, each mapped to its position in the iteration; a
    /// repeated id keeps its last position (as `HashMap::insert` does).
    pub(crate) fn new(ids: impl Iterator<Item = i64> + Clone) -> Self {
        let (count, max, min) = ids
            .clone()
            .fold((0usize, i64::MIN, i64::MAX), |(n, hi, lo), id| {
                (n + 1, hi.max(id), lo.min(id))
            });
        // A table of at most a few times the ids (plus a little): hostile or
        // odd numbering (negative, huge, sparse ids) falls back to hashing.
        let dense = count > 0
            && min >= 0
            && count < NONE as usize
            && usize::try_from(max).is_ok_and(|m| m <= 4 * count + 1024);
        if dense {
            let len = usize::try_from(max).unwrap_or(0) + 1;
            let mut table = vec![NONE; len];
            for (i, id) in ids.enumerate() {
                if let Some(slot) = usize::try_from(id).ok().and_then(|id| table.get_mut(id)) {
                    *slot = i as u32;
                }
            }
            IdIndex::Dense(table)
        } else {
            let mut map = FastMap::with_capacity_and_hasher(count, Default::default());
            for (i, id) in ids.enumerate() {
                map.insert(id, u32::try_from(i).unwrap_or(NONE));
            }
            IdIndex::Sparse(map)
        }
    }

    #[inline]
    pub(crate) fn get(&self, id: i64) -> Option<usize> {
        let position = match self {
            IdIndex::Dense(table) => *usize::try_from(id).ok().and_then(|id| table.get(id))?,
            IdIndex::Sparse(map) => *map.get(&id)?,
        };
        (position != NONE).then_some(position as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookups(ids: &[i64], probes: &[i64]) -> Vec<Option<usize>> {
        let index = IdIndex::new(ids.iter().copied());
        probes.iter().map(|&id| index.get(id)).collect()
    }

    #[test]
    fn dense_and_sparse_ids_give_the_last_position_of_each() {
        let dense = lookups(&[3, 0, 7, 3], &[0, 3, 7, 1, -1, 8, i64::MAX]);
        assert_eq!(
            dense,
            vec![Some(1), Some(3), Some(2), None, None, None, None]
        );
        // Negative and huge ids: the same answers from the hash map.
        let sparse = lookups(&[3, -5, i64::MAX, 3], &[-5, 3, i64::MAX, 0, i64::MIN]);
        assert_eq!(sparse, vec![Some(1), Some(3), Some(2), None, None]);
        assert!(matches!(
            IdIndex::new([1, 2].into_iter()),
            IdIndex::Dense(_)
        ));
        assert!(matches!(
            IdIndex::new([1, 1 << 40].into_iter()),
            IdIndex::Sparse(_)
        ));
        assert_eq!(lookups(&[], &[0]), vec![None]);
    }
}
