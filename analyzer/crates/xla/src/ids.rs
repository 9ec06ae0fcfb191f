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
        if let Some(len) = dense_len(ids.clone()) {
            let mut table = vec![NONE; len];
            for (i, id) in ids.enumerate() {
                if let Some(slot) = usize::try_from(id).ok().and_then(|id| table.get_mut(id)) {
                    *slot = i as u32;
                }
            }
            IdIndex::Dense(table)
        } else {
            let mut map =
                FastMap::with_capacity_and_hasher(ids.clone().count(), Default::default());
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

/// The table length (`max + 1`) for `ids` when they are dense enough for
/// one: at most a few times as many slots as ids (plus a little), so
/// hostile or odd numbering (negative, huge, sparse ids) falls back to
/// hashing.
fn dense_len(ids: impl Iterator<Item = i64>) -> Option<usize> {
    let (count, max, min) = ids.fold((0usize, i64::MIN, i64::MAX), |(n, hi, lo), id| {
        (n + 1, hi.max(id), lo.min(id))
    });
    let dense = count > 0
        && min >= 0
        && count < NONE as usize
        && usize::try_from(max).is_ok_and(|m| m <= 4 * count + 1024);
    dense.then(|| usize::try_from(max).unwrap_or(0) + 1)
}

/// A map keyed by XLA id, with the lookups of a hash map: a table indexed by
/// the id over the range the module's own ids fill densely (sized once,
/// from them), and a hash map for any other key. The what-if program's
/// tables by instruction id (instructions, users, schedule places,
/// dimension classes) were an eighth of its time hashed.
pub(crate) struct IdMap<V> {
    dense: Vec<Option<V>>,
    sparse: FastMap<i64, V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            dense: Vec::new(),
            sparse: FastMap::default(),
        }
    }
}

impl<V> IdMap<V> {
    /// An empty map whose table covers `ids` when they are dense.
    pub(crate) fn for_ids(ids: impl Iterator<Item = i64>) -> Self {
        let mut map = IdMap::default();
        if let Some(len) = dense_len(ids) {
            map.dense.resize_with(len, || None);
        }
        map
    }

    /// An empty map whose table covers the same ids as `other`'s (the
    /// module's ids counted once for all its tables).
    pub(crate) fn sized_as<U>(other: &IdMap<U>) -> Self {
        let mut map = IdMap::default();
        map.dense.resize_with(other.dense.len(), || None);
        map
    }

    #[inline]
    fn slot(&self, id: i64) -> Option<usize> {
        usize::try_from(id).ok().filter(|&k| k < self.dense.len())
    }

    #[inline]
    pub(crate) fn get(&self, id: &i64) -> Option<&V> {
        match self.slot(*id) {
            Some(k) => self.dense.get(k)?.as_ref(),
            None => self.sparse.get(id),
        }
    }

    #[inline]
    pub(crate) fn contains_key(&self, id: &i64) -> bool {
        self.get(id).is_some()
    }

    /// Sets `id`'s value, returning the one it replaces.
    pub(crate) fn insert(&mut self, id: i64, value: V) -> Option<V> {
        match self.slot(id) {
            Some(k) => self.dense.get_mut(k)?.replace(value),
            None => self.sparse.insert(id, value),
        }
    }

    /// `id`'s value, set to the default first when it has none.
    pub(crate) fn entry_or_default(&mut self, id: i64) -> &mut V
    where
        V: Default,
    {
        match self.slot(id) {
            Some(k) => self.dense[k].get_or_insert_with(V::default),
            None => self.sparse.entry(id).or_default(),
        }
    }
}

/// A map of these pairs (a repeated id keeps its last value), its table
/// sized from their ids.
impl<V> FromIterator<(i64, V)> for IdMap<V> {
    fn from_iter<I: IntoIterator<Item = (i64, V)>>(pairs: I) -> Self {
        let pairs: Vec<(i64, V)> = pairs.into_iter().collect();
        let mut map = IdMap::for_ids(pairs.iter().map(|&(id, _)| id));
        for (id, value) in pairs {
            map.insert(id, value);
        }
        map
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

    #[test]
    fn an_id_map_answers_as_a_hash_map_inside_and_outside_its_table() {
        // Ids 0..100 dense; keys outside the table (negative, past its end,
        // huge) land in the hash map with the same answers.
        let mut map: IdMap<Vec<i64>> = IdMap::for_ids(0..100);
        let mut reference: HashMap<i64, Vec<i64>> = HashMap::new();
        let keys = [0, 5, 99, 100, 5000, -3, i64::MAX, i64::MIN, 5, -3, 99];
        for (n, &k) in keys.iter().enumerate() {
            map.entry_or_default(k).push(n as i64);
            reference.entry(k).or_default().push(n as i64);
        }
        assert_eq!(map.insert(7, vec![1]), reference.insert(7, vec![1]));
        assert_eq!(map.insert(7, vec![2]), reference.insert(7, vec![2]));
        assert_eq!(map.insert(-7, vec![2]), reference.insert(-7, vec![2]));
        for probe in [0, 5, 7, 99, 100, 5000, -3, -7, 1, i64::MAX, i64::MIN] {
            assert_eq!(map.get(&probe), reference.get(&probe), "id {probe}");
            assert_eq!(map.contains_key(&probe), reference.contains_key(&probe));
        }
        assert!(map.dense.len() == 100);
        let same: IdMap<u8> = IdMap::sized_as(&map);
        assert_eq!(same.dense.len(), 100);
        assert_eq!(same.get(&5), None);
        let collected: IdMap<i64> = [(3, 1), (-1, 2), (3, 4)].into_iter().collect();
        assert_eq!(
            [3, -1, 0].map(|k| collected.get(&k).copied()),
            [Some(4), Some(2), None]
        );
        // Sparse ids: no table at all, every key hashed.
        let sparse: IdMap<()> = IdMap::for_ids([1, 1 << 40].into_iter());
        assert!(sparse.dense.is_empty());
    }
}
