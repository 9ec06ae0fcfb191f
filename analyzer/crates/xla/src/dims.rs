//! Which dimensions of a module's values are one dimension followed through
//! the program (issue 25's "batch ÷ k": the batch is the data's leading
//! dimension, followed through the program's shapes, not every dimension
//! that happens to have its size). A union-find over (instruction, tuple
//! leaf, dimension): each instruction joins the dimensions of its operands
//! and result that XLA's semantics make the same (an elementwise operation
//! all of them, a dot its batch and free dimensions, a convolution its batch
//! and feature dimensions, a gather its index dimensions, a reshape the
//! dimensions whose prefix products agree, a fusion or a loop its operands
//! with its computation's parameters and its result with the root). A
//! dimension a dot or a convolution contracts does not reach the result:
//! a weight's gradient, contracted over the batch, is not joined to it even
//! when its size equals the batch.

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use crate::dataflow_proto::{HloInstructionProto, HloModuleProto, ShapeProto};

/// At most this many dimension nodes per module (a bound whatever the input).
const MAX_NODES: usize = 20_000_000;

/// At most this many tuple index and extent entries per module (a tuple
/// nested deep gives each leaf a long index, whatever its dimensions).
const MAX_POOL: usize = 100_000_000;

pub(crate) struct DimClasses {
    parent: Vec<u32>,
    /// Every leaf's tuple index and extents, one after another ([`Leaf`]
    /// holds ranges of it: two lists allocated per leaf were most of the
    /// time taken to build and drop this table).
    pool: Vec<i64>,
    /// Every instruction's array leaves, each instruction's in one run, in
    /// tuple index order.
    all: Vec<Leaf>,
    /// Instruction id → its run in `all` (start, length); the start is
    /// [`REPEATED`] for an id in `repeated`.
    leaves: crate::ids::IdMap<(u32, u32)>,
    /// Ids given to more than one instruction (malformed input): the leaves
    /// of each in turn, not in one tuple's order, so they are scanned.
    repeated: HashMap<i64, Vec<Leaf>>,
    /// (repeated id, tuple index) → its place in `repeated` when it has
    /// more than 8 leaves (the last leaf of an index kept).
    places: HashMap<i64, HashMap<Vec<i64>, usize>>,
}

/// The start of a run whose leaves are in [`DimClasses::repeated`].
const REPEATED: u32 = u32::MAX;

/// One array leaf of an instruction's shape: its tuple index and extents
/// (start and length in [`DimClasses::pool`]) and its first dimension node.
#[derive(Clone, Copy)]
struct Leaf {
    index: (u32, u32),
    first: u32,
    dims: (u32, u32),
}

/// A run of elements as they lie in memory: `extent` elements of logical
/// dimension `dim` (all of it, or a tiled layout's outer or inner part of it),
/// whose whole extent is `logical`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Atom {
    dim: usize,
    extent: i64,
    logical: i64,
    /// The dimension's most major part: all of it, a tile's outer part, or
    /// its inner part when the outer one is a single tile. Only such a part
    /// stands for its dimension: the inner part of a flattened batch ×
    /// sequence is the sequence's, not the batch's.
    leading: bool,
}

/// A shape's memory order from major to minor, its first tile applied (XLA's
/// tiled layout: the tile covers the most minor dimensions; the tiled shape is
/// the outer dimensions, each divided by its tile rounded up, then the tile).
/// `None` without a layout, or with one this does not follow.
fn memory_atoms(shape: &ShapeProto) -> Option<Vec<Atom>> {
    let layout = shape.layout.as_ref()?;
    let dims = &shape.dimensions;
    let order: Vec<usize> = layout
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d < dims.len()))
        .collect::<Option<_>>()?;
    let mut seen = vec![false; dims.len()];
    if order.len() != dims.len() || order.iter().any(|&d| std::mem::replace(&mut seen[d], true)) {
        return None;
    }
    let atom = |d: usize, extent: i64| Atom {
        dim: d,
        extent,
        logical: dims[d],
        leading: true,
    };
    let Some(tile) = layout.tiles.first().map(|t| &t.dimensions) else {
        return Some(order.iter().map(|&d| atom(d, dims[d])).collect());
    };
    if tile.len() > order.len() || tile.iter().any(|&t| t <= 0) {
        return None;
    }
    let untiled = order.len() - tile.len();
    let mut atoms: Vec<Atom> = order[..untiled].iter().map(|&d| atom(d, dims[d])).collect();
    let tiled = &order[untiled..];
    atoms.extend(
        tiled
            .iter()
            .zip(tile)
            .map(|(&d, &t)| atom(d, (dims[d] + t - 1) / t)),
    );
    atoms.extend(tiled.iter().zip(tile).map(|(&d, &t)| Atom {
        leading: (dims[d] + t - 1) / t == 1,
        ..atom(d, t)
    }));
    Some(atoms)
}

/// A bitcast's operand and result dimensions as they lie in memory
/// ([`memory_atoms`]), in that order.
type BitcastOrders = (Vec<Atom>, Vec<Atom>);

/// Whether two tuple indices are equal: compared inline, element by
/// element (they are a few elements long; the slice comparison called
/// `memcmp` for each, a tenth of the what-if program's time).
#[inline]
fn same(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl DimClasses {
    /// The classes of `module`, whose instructions by id are `instructions`,
    /// parameter k of computation c `parameters[(c, k)]` and whose roots by
    /// computation are `roots` (the program's tables, shared).
    pub(crate) fn of(
        module: &HloModuleProto,
        instructions: &crate::ids::IdMap<&HloInstructionProto>,
        parameters: &HashMap<(i64, i64), i64>,
        roots: &HashMap<i64, i64>,
    ) -> DimClasses {
        let mut classes = DimClasses {
            parent: Vec::new(),
            pool: Vec::new(),
            all: Vec::new(),
            // Indexed by id over the module's instruction ids.
            leaves: crate::ids::IdMap::sized_as(instructions),
            repeated: HashMap::default(),
            places: HashMap::default(),
        };
        let mut index = Vec::new();
        for c in &module.computations {
            for i in &c.instructions {
                let Some(shape) = &i.shape else { continue };
                let start = classes.all.len();
                let complete = classes.add_leaves(shape, &mut index);
                classes.list_leaves(i.id, start);
                if !complete {
                    classes.index_places();
                    return classes;
                }
            }
        }
        classes.index_places();
        let parameter = |c: i64, k: i64| parameters.get(&(c, k)).copied();
        let root = |c: i64| roots.get(&c).copied();
        // The computation an asynchronous update or done runs: its start's.
        let called = |i: &HloInstructionProto| -> Option<i64> {
            let mut x = i;
            for _ in 0..64 {
                if let Some(&c) = x.called_computation_ids.first() {
                    return Some(c);
                }
                x = instructions.get(x.operand_ids.first()?)?;
            }
            None
        };
        // A bitcast reinterprets its operand's bytes: its dimensions meet
        // its operand's in the order they lie in memory, tiles included.
        let bitcast_orders = |i: &HloInstructionProto| -> Option<BitcastOrders> {
            let operand = instructions.get(i.operand_ids.first()?)?;
            Some((
                memory_atoms(operand.shape.as_ref()?)?,
                memory_atoms(i.shape.as_ref()?)?,
            ))
        };
        for c in &module.computations {
            for i in &c.instructions {
                classes.join_instruction(i, &parameter, &root, &called, &bitcast_orders);
            }
        }
        classes
    }

    /// Appends the array leaves of `shape` (under tuple index `index`) to
    /// `all`, in index order, with a node per dimension; false when the
    /// module has more than [`MAX_NODES`] (the leaf that would pass it is
    /// not added).
    fn add_leaves(&mut self, shape: &ShapeProto, index: &mut Vec<i64>) -> bool {
        if shape.tuple_shapes.is_empty() {
            let dims = &shape.dimensions;
            let first = self.parent.len();
            if first + dims.len() > MAX_NODES || self.pool.len() > MAX_POOL {
                return false;
            }
            self.parent
                .extend((first..first + dims.len()).map(|n| n as u32));
            let at = self.pool.len() as u32;
            self.pool.extend_from_slice(index);
            self.pool.extend_from_slice(dims);
            self.all.push(Leaf {
                index: (at, index.len() as u32),
                first: first as u32,
                dims: (at + index.len() as u32, dims.len() as u32),
            });
            return true;
        }
        for (k, t) in shape.tuple_shapes.iter().enumerate() {
            index.push(k as i64);
            let complete = self.add_leaves(t, index);
            index.pop();
            if !complete {
                return false;
            }
        }
        true
    }

    /// Lists the leaves `all[start..]` as those of instruction `id`, after
    /// those of an earlier instruction with the same id (malformed input).
    fn list_leaves(&mut self, id: i64, start: usize) {
        let added = self.all.len() - start;
        if added == 0 {
            return;
        }
        match self.leaves.get(&id).copied() {
            None => {
                self.leaves.insert(id, (start as u32, added as u32));
            }
            Some((first, len)) => {
                let mut list = match first {
                    REPEATED => self.repeated.remove(&id).unwrap_or_default(),
                    _ => self.all[first as usize..][..len as usize].to_vec(),
                };
                list.extend_from_slice(&self.all[start..]);
                self.leaves.insert(id, (REPEATED, list.len() as u32));
                self.repeated.insert(id, list);
            }
        }
    }

    /// Indexes the leaves of the repeated ids of more than 8 leaves (the
    /// others are scanned, or found by bisection in their tuple's order).
    fn index_places(&mut self) {
        for (&id, list) in self.repeated.iter().filter(|(_, l)| l.len() > 8) {
            let mut places: HashMap<Vec<i64>, usize> = HashMap::default();
            places.reserve(list.len());
            for (k, leaf) in list.iter().enumerate() {
                // The last leaf of an index is kept.
                places.insert(self.tuple_index(leaf).to_vec(), k);
            }
            self.places.insert(id, places);
        }
    }

    fn tuple_index(&self, leaf: &Leaf) -> &[i64] {
        let (at, len) = leaf.index;
        self.pool
            .get(at as usize..(at + len) as usize)
            .unwrap_or(&[])
    }

    fn extents_of(&self, leaf: &Leaf) -> &[i64] {
        let (at, len) = leaf.dims;
        self.pool
            .get(at as usize..(at + len) as usize)
            .unwrap_or(&[])
    }

    /// The leaves of instruction `id`, and whether its id is repeated.
    fn list(&self, id: i64) -> (&[Leaf], bool) {
        match self.leaves.get(&id) {
            None => (&[], false),
            Some(&(REPEATED, _)) => (self.repeated.get(&id).map_or(&[][..], Vec::as_slice), true),
            Some(&(start, len)) => (
                self.all
                    .get(start as usize..(start + len) as usize)
                    .unwrap_or(&[]),
                false,
            ),
        }
    }

    fn find(&mut self, mut n: u32) -> u32 {
        while let Some(&p) = self.parent.get(n as usize) {
            if p == n {
                break;
            }
            let grand = self.parent[p as usize];
            self.parent[n as usize] = grand;
            n = grand;
        }
        n
    }

    fn unite(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            self.parent[hi as usize] = lo;
        }
    }

    fn leaf(&self, id: i64, index: &[i64]) -> Option<(u32, &[i64])> {
        let (list, repeated) = self.list(id);
        // A few leaves are scanned, the last match kept as the index keeps
        // it (no key to build and hash: this is the analysis's most
        // frequent lookup); a wide tuple's found by bisection (its leaves
        // are in index order), a repeated id's indexed.
        let at = if list.len() <= 8 {
            list.iter()
                .rposition(|l| same(self.tuple_index(l), index))?
        } else if repeated {
            *self.places.get(&id)?.get(index)?
        } else {
            list.partition_point(|l| self.tuple_index(l) < index)
        };
        list.get(at)
            .filter(|l| same(self.tuple_index(l), index))
            .map(|l| (l.first, self.extents_of(l)))
    }

    fn node(&self, id: i64, index: &[i64], d: i64) -> Option<(u32, i64)> {
        let (first, dims) = self.leaf(id, index)?;
        let extent = *dims.get(usize::try_from(d).ok()?)?;
        Some((first + d as u32, extent))
    }

    /// Joins dimension `da` of `(a, ia)` with `db` of `(b, ib)` when both
    /// exist and have the same extent.
    fn join(&mut self, a: i64, ia: &[i64], da: i64, b: i64, ib: &[i64], db: i64) {
        if let (Some((x, ex)), Some((y, ey))) = (self.node(a, ia, da), self.node(b, ib, db)) {
            if ex == ey {
                self.unite(x, y);
            }
        }
    }

    /// Joins every dimension of every array leaf under `ia` of `a` with the
    /// same leaf under `ib` of `b` (values of one shape: a tuple element, a
    /// loop's state, a fusion's operand and parameter).
    fn join_value(&mut self, a: i64, ia: &[i64], b: i64, ib: &[i64]) {
        // An array leaf itself (the common case): no scan of a wide tuple.
        if self.leaf(a, ia).is_some() {
            self.join_leaves(a, ia, b, ib);
            return;
        }
        let (list, repeated) = self.list(a);
        // A tuple's leaves are listed in index order, so those under `ia`
        // are one run found by bisection (a tuple of thousands of pairs,
        // each read by its get-tuple-element, is not scanned per element).
        let start = if repeated {
            0
        } else {
            list.partition_point(|l| self.tuple_index(l) < ia)
        };
        let under: Vec<Leaf> = list
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .take_while(|l| repeated || self.tuple_index(l).starts_with(ia))
            .filter(|l| self.tuple_index(l).starts_with(ia))
            .copied()
            .collect();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for leaf in under {
            x.clear();
            x.extend_from_slice(self.tuple_index(&leaf));
            y.clear();
            y.extend_from_slice(ib);
            y.extend_from_slice(&x[ia.len()..]);
            self.join_leaves(a, &x, b, &y);
        }
    }

    /// Joins each dimension of the array leaf `(a, ia)` with the same
    /// dimension of `(b, ib)` where their extents agree (what [`Self::join`]
    /// does dimension by dimension, with each leaf looked up once).
    fn join_leaves(&mut self, a: i64, ia: &[i64], b: i64, ib: &[i64]) {
        let (Some((x, xs)), Some((y, ys))) = (self.leaf(a, ia), self.leaf(b, ib)) else {
            return;
        };
        let rank = xs.len().min(ys.len());
        if rank <= 64 {
            // The dimensions of equal extent as bits: no list allocated per
            // pair of leaves (this runs for every operand of every
            // instruction).
            let agree = (0..rank)
                .filter(|&d| xs[d] == ys[d])
                .fold(0u64, |m, d| m | 1 << d);
            for d in (0..rank as u32).filter(|&d| agree & (1 << d) != 0) {
                self.unite(x + d, y + d);
            }
            return;
        }
        let agree: Vec<u32> = (0..rank as u32)
            .filter(|&d| xs.get(d as usize) == ys.get(d as usize))
            .collect();
        for d in agree {
            self.unite(x + d, y + d);
        }
    }

    fn rank(&self, id: i64, index: &[i64]) -> usize {
        self.leaf(id, index).map_or(0, |(_, d)| d.len())
    }

    fn extents(&self, id: i64) -> Vec<i64> {
        self.leaf(id, &[])
            .map(|(_, d)| d.to_vec())
            .unwrap_or_default()
    }

    fn join_instruction(
        &mut self,
        i: &HloInstructionProto,
        parameter: &dyn Fn(i64, i64) -> Option<i64>,
        root: &dyn Fn(i64) -> Option<i64>,
        called: &dyn Fn(&HloInstructionProto) -> Option<i64>,
        bitcast_orders: &dyn Fn(&HloInstructionProto) -> Option<BitcastOrders>,
    ) {
        let id = i.id;
        let operands = &i.operand_ids;
        let op = |k: usize| operands.get(k).copied().unwrap_or(-1);
        let rank = self.rank(id, &[]) as i64;
        match i.opcode.as_str() {
            "tuple" => {
                for (k, &o) in operands.iter().enumerate() {
                    self.join_value(id, &[k as i64], o, &[]);
                }
            }
            "get-tuple-element" => self.join_value(id, &[], op(0), &[i.tuple_index]),
            "copy-start" => {
                self.join_value(id, &[0], op(0), &[]);
                self.join_value(id, &[1], op(0), &[]);
            }
            "copy-done" => self.join_value(id, &[], op(0), &[0]),
            "broadcast" => {
                for (k, &d) in i.dimensions.iter().enumerate() {
                    self.join(id, &[], d, op(0), &[], k as i64);
                }
            }
            "transpose" => {
                for (k, &d) in i.dimensions.iter().enumerate() {
                    self.join(id, &[], k as i64, op(0), &[], d);
                }
            }
            "reshape" | "bitcast" => {
                let logical = |id: i64| -> Vec<Atom> {
                    self.extents(id)
                        .iter()
                        .enumerate()
                        .map(|(d, &e)| Atom {
                            dim: d,
                            extent: e,
                            logical: e,
                            leading: true,
                        })
                        .collect()
                };
                let (input, output) = match i.opcode.as_str() {
                    "bitcast" => bitcast_orders(i),
                    _ => None,
                }
                .unwrap_or_else(|| (logical(op(0)), logical(id)));
                self.join_reshape(id, &output, op(0), &input);
            }
            "reduce" => {
                // Operands: the inputs, then as many initial values.
                let inputs = operands.len() / 2;
                let kept: Vec<i64> = (0..self.rank(op(0), &[]) as i64)
                    .filter(|d| !i.dimensions.contains(d))
                    .collect();
                for k in 0..inputs {
                    let out: Vec<i64> = if inputs > 1 {
                        vec![k as i64]
                    } else {
                        Vec::new()
                    };
                    for (j, &d) in kept.iter().enumerate() {
                        self.join(id, &out, j as i64, op(k), &[], d);
                    }
                }
            }
            "dot" => {
                let Some(n) = &i.dot_dimension_numbers else {
                    return;
                };
                let free = |rank: usize, batch: &[i64], contracting: &[i64]| -> Vec<i64> {
                    (0..rank as i64)
                        .filter(|d| !batch.contains(d) && !contracting.contains(d))
                        .collect()
                };
                let lhs_free = free(
                    self.rank(op(0), &[]),
                    &n.lhs_batch_dimensions,
                    &n.lhs_contracting_dimensions,
                );
                let rhs_free = free(
                    self.rank(op(1), &[]),
                    &n.rhs_batch_dimensions,
                    &n.rhs_contracting_dimensions,
                );
                let mut out = 0i64;
                for (&l, &r) in n.lhs_batch_dimensions.iter().zip(&n.rhs_batch_dimensions) {
                    self.join(id, &[], out, op(0), &[], l);
                    self.join(id, &[], out, op(1), &[], r);
                    out += 1;
                }
                for d in lhs_free {
                    self.join(id, &[], out, op(0), &[], d);
                    out += 1;
                }
                for d in rhs_free {
                    self.join(id, &[], out, op(1), &[], d);
                    out += 1;
                }
                for (&l, &r) in n
                    .lhs_contracting_dimensions
                    .iter()
                    .zip(&n.rhs_contracting_dimensions)
                {
                    self.join(op(0), &[], l, op(1), &[], r);
                }
            }
            "convolution" => {
                let Some(n) = &i.convolution_dimension_numbers else {
                    return;
                };
                self.join(
                    id,
                    &[],
                    n.output_batch_dimension,
                    op(0),
                    &[],
                    n.input_batch_dimension,
                );
                self.join(
                    id,
                    &[],
                    n.output_feature_dimension,
                    op(1),
                    &[],
                    n.kernel_output_feature_dimension,
                );
                self.join(
                    op(0),
                    &[],
                    n.input_feature_dimension,
                    op(1),
                    &[],
                    n.kernel_input_feature_dimension,
                );
                for (&o, &x) in n
                    .output_spatial_dimensions
                    .iter()
                    .zip(&n.input_spatial_dimensions)
                {
                    self.join(id, &[], o, op(0), &[], x);
                }
            }
            "gather" => {
                let Some(n) = &i.gather_dimension_numbers else {
                    return;
                };
                let indices_rank = self.rank(op(1), &[]) as i64;
                let index_dims: Vec<i64> = (0..indices_rank)
                    .filter(|&d| d != n.index_vector_dim)
                    .collect();
                let out_batch: Vec<i64> =
                    (0..rank).filter(|d| !n.offset_dims.contains(d)).collect();
                for (&o, &x) in out_batch.iter().zip(&index_dims) {
                    self.join(id, &[], o, op(1), &[], x);
                }
                let operand_offset: Vec<i64> = (0..self.rank(op(0), &[]) as i64)
                    .filter(|d| {
                        !n.collapsed_slice_dims.contains(d) && !n.operand_batching_dims.contains(d)
                    })
                    .collect();
                for (&o, &x) in n.offset_dims.iter().zip(&operand_offset) {
                    self.join(id, &[], o, op(0), &[], x);
                }
            }
            "concatenate" => {
                let along = i.dimensions.first().copied().unwrap_or(-1);
                for &o in operands {
                    for d in (0..rank).filter(|&d| d != along) {
                        self.join(id, &[], d, o, &[], d);
                    }
                }
            }
            "dynamic-update-slice"
            | "scatter"
            | "slice"
            | "dynamic-slice"
            | "pad"
            | "reverse"
            | "reduce-window"
            | "select-and-scatter"
            | "all-gather"
            | "reduce-scatter"
            | "all-to-all"
            | "collective-permute" => {
                // Dimension by dimension, where the extents agree (a slice or
                // an update keeps the batch whole).
                let arrays = if i.opcode == "dynamic-update-slice" {
                    2
                } else {
                    1
                };
                for &o in operands.iter().take(arrays) {
                    for d in 0..rank {
                        self.join(id, &[], d, o, &[], d);
                    }
                }
            }
            "sort" | "all-reduce" | "all-reduce-start" | "optimization-barrier" => {
                if self.leaf(id, &[]).is_some() {
                    for &o in operands {
                        self.join_value(id, &[], o, &[]);
                    }
                } else {
                    for (k, &o) in operands.iter().enumerate() {
                        self.join_value(id, &[k as i64], o, &[]);
                    }
                }
            }
            "all-reduce-done" => self.join_value(id, &[], op(0), &[]),
            // A custom call's semantics are its target's: its result's
            // dimensions are joined with its operands' at the same position
            // and of the same extent (a gather offload's rows with its
            // indices, a matmul's rows with its left operand's).
            "custom-call" => {
                for &o in operands {
                    for d in 0..rank.min(self.rank(o, &[]) as i64) {
                        self.join(id, &[], d, o, &[], d);
                    }
                }
            }
            // Operands passed to a running asynchronous computation.
            "async-update" => {
                self.join_value(id, &[], op(0), &[]);
                if let Some(c) = called(i) {
                    for (k, &o) in operands.iter().enumerate().skip(1) {
                        if let Some(p) = parameter(c, k as i64 - 1) {
                            self.join_value(p, &[], o, &[]);
                        }
                    }
                }
            }
            // An asynchronous computation's result is its root's value (the
            // start's tuple holds it at {1}).
            "async-done" => {
                if let Some(r) = called(i).and_then(root) {
                    self.join_value(id, &[], r, &[]);
                }
                self.join_value(id, &[], op(0), &[1]);
            }
            "fusion" | "call" | "async-start" => {
                let Some(&c) = i.called_computation_ids.first() else {
                    return;
                };
                for (k, &o) in operands.iter().enumerate() {
                    if let Some(p) = parameter(c, k as i64) {
                        self.join_value(p, &[], o, &[]);
                    }
                }
                if let Some(r) = root(c) {
                    let at: &[i64] = if i.opcode == "async-start" { &[1] } else { &[] };
                    self.join_value(id, at, r, &[]);
                }
            }
            "while" => {
                for &c in &i.called_computation_ids {
                    if let Some(p) = parameter(c, 0) {
                        self.join_value(p, &[], op(0), &[]);
                    }
                    // The body's root is the next state; a condition's
                    // root (a predicate) has no leaf to join.
                    if let Some(r) = root(c) {
                        self.join_value(id, &[], r, &[]);
                    }
                }
                self.join_value(id, &[], op(0), &[]);
            }
            op_code if crate::program::is_elementwise(op_code) => {
                for &o in operands {
                    if self.rank(o, &[]) as i64 == rank {
                        self.join_value(id, &[], o, &[]);
                    }
                }
            }
            _ => {}
        }
    }

    /// A reshape: runs of input and output dimensions whose products agree
    /// are one dimension; inside a run that merges or splits dimensions,
    /// the most major dimension of more than one element stands for it (the
    /// batch flattened with the sequence stays the batch).
    ///
    /// Each side is a list of [`Atom`]s from major to minor: the logical
    /// dimensions for a reshape, the memory order with tiles for a bitcast.
    fn join_reshape(&mut self, out: i64, b: &[Atom], input: i64, a: &[Atom]) {
        let (mut i, mut j) = (0usize, 0usize);
        while i < a.len() && j < b.len() {
            let (si, sj) = (i, j);
            let (mut pa, mut pb) = (a[i].extent.max(1), b[j].extent.max(1));
            i += 1;
            j += 1;
            let mut guard = 0;
            while pa != pb && guard < 256 {
                guard += 1;
                if pa < pb && i < a.len() {
                    pa = pa.saturating_mul(a[i].extent.max(1));
                    i += 1;
                } else if j < b.len() {
                    pb = pb.saturating_mul(b[j].extent.max(1));
                    j += 1;
                } else {
                    break;
                }
            }
            if pa != pb {
                return;
            }
            // A tile's padding is not a dimension: an atom stands for its
            // dimension only when both have more than one element.
            let major = |atoms: &[Atom]| {
                atoms
                    .iter()
                    .find(|x| x.extent > 1 && x.logical > 1 && x.leading)
                    .map(|x| x.dim)
            };
            if let (Some(x), Some(y)) = (major(&a[si..i]), major(&b[sj..j])) {
                if let (Some((nx, _)), Some((ny, _))) = (
                    self.node(input, &[], x as i64),
                    self.node(out, &[], y as i64),
                ) {
                    self.unite(nx, ny);
                }
            }
        }
    }

    /// The class of each dimension of `(instruction, shape index)`.
    pub(crate) fn classes(&mut self, id: i64, index: &[i64]) -> Vec<u32> {
        let Some((first, rank)) = self.leaf(id, index).map(|(f, d)| (f, d.len() as u32)) else {
            return Vec::new();
        };
        (0..rank).map(|d| self.find(first + d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflow_proto::HloComputationProto;
    use oomscope_proto::xla::DotDimensionNumbers;

    fn classes_of(module: &HloModuleProto) -> DimClasses {
        let instructions = module
            .computations
            .iter()
            .flat_map(|c| &c.instructions)
            .map(|i| (i.id, i))
            .collect();
        let parameters = module
            .computations
            .iter()
            .flat_map(|c| {
                c.instructions
                    .iter()
                    .filter(|i| i.opcode == "parameter")
                    .map(move |i| ((c.id, i.parameter_number), i.id))
            })
            .collect();
        let roots = module
            .computations
            .iter()
            .map(|c| (c.id, c.root_id))
            .collect();
        DimClasses::of(module, &instructions, &parameters, &roots)
    }

    fn array(dims: &[i64]) -> Option<ShapeProto> {
        Some(ShapeProto {
            dimensions: dims.to_vec(),
            ..Default::default()
        })
    }

    fn instruction(id: i64, opcode: &str, dims: &[i64], operands: &[i64]) -> HloInstructionProto {
        HloInstructionProto {
            id,
            name: format!("i{id}"),
            opcode: opcode.into(),
            shape: array(dims),
            operand_ids: operands.to_vec(),
            parameter_number: id - 1,
            ..Default::default()
        }
    }

    /// A batch as wide as the layer: x[4,4] · w[4,4] → y[4,4], y reshaped to
    /// [2,2,4], and w's gradient xᵀ · y contracted over the batch.
    fn module() -> HloModuleProto {
        let mut dot = instruction(3, "dot", &[4, 4], &[1, 2]);
        dot.dot_dimension_numbers = Some(DotDimensionNumbers {
            lhs_contracting_dimensions: vec![1],
            rhs_contracting_dimensions: vec![0],
            ..Default::default()
        });
        let mut gradient = instruction(5, "dot", &[4, 4], &[1, 3]);
        gradient.dot_dimension_numbers = Some(DotDimensionNumbers {
            lhs_contracting_dimensions: vec![0],
            rhs_contracting_dimensions: vec![0],
            ..Default::default()
        });
        HloModuleProto {
            entry_computation_id: 1,
            computations: vec![HloComputationProto {
                id: 1,
                root_id: 5,
                instructions: vec![
                    instruction(1, "parameter", &[4, 4], &[]),
                    instruction(2, "parameter", &[4, 4], &[]),
                    dot,
                    instruction(4, "reshape", &[2, 2, 4], &[3]),
                    gradient,
                ],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_batch_is_joined_through_a_dot_and_not_to_a_contracted_weight() {
        let mut c = classes_of(&module());
        let (x, w, y) = (c.classes(1, &[]), c.classes(2, &[]), c.classes(3, &[]));
        let (split, gradient) = (c.classes(4, &[]), c.classes(5, &[]));
        // The batch: x's rows are y's rows, and the reshape's major split.
        assert_eq!(x[0], y[0]);
        assert_eq!(split[0], x[0]);
        // The width: x's columns are contracted with w's rows.
        assert_eq!(x[1], w[0]);
        assert_eq!(w[1], y[1]);
        // Same size, other dimension: no weight carries the batch, nor
        // its gradient (contracted over the batch).
        assert!(!w.contains(&x[0]));
        assert!(!gradient.contains(&x[0]));
        assert_eq!(gradient, vec![x[1], y[1]]);
    }

    fn tiled(
        mut i: HloInstructionProto,
        minor_to_major: &[i64],
        tile: &[i64],
    ) -> HloInstructionProto {
        if let Some(shape) = i.shape.as_mut() {
            shape.layout = Some(crate::dataflow_proto::LayoutProto {
                minor_to_major: minor_to_major.to_vec(),
                tiles: (!tile.is_empty())
                    .then(|| crate::dataflow_proto::TileProto {
                        dimensions: tile.to_vec(),
                    })
                    .into_iter()
                    .collect(),
            });
        }
        i
    }

    /// The classes of a parameter (dimensions, minor-to-major, tile) and of
    /// its bitcast, the module's only two instructions.
    fn bitcast_classes(
        dims: &[i64],
        layout: &[i64],
        tile: &[i64],
        to_dims: &[i64],
        to_layout: &[i64],
        to_tile: &[i64],
    ) -> (Vec<u32>, Vec<u32>) {
        let module = HloModuleProto {
            entry_computation_id: 1,
            computations: vec![HloComputationProto {
                id: 1,
                root_id: 2,
                instructions: vec![
                    tiled(instruction(1, "parameter", dims, &[]), layout, tile),
                    tiled(instruction(2, "bitcast", to_dims, &[1]), to_layout, to_tile),
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut c = classes_of(&module);
        (c.classes(1, &[]), c.classes(2, &[]))
    }

    /// A bitcast between tiled layouts, as XLA:TPU writes them (seen in a
    /// real transformer step): tokens s32[8,1024]{1,0:T(8,128)} are the
    /// tiles s32[1,8,8,128]{3,2,1,0:T(8,128)}, the second dimension the
    /// 1024 columns' eight tiles, the third the 8 rows. Matched without the
    /// tiles, the batch would be joined with the sequence's tiles.
    #[test]
    fn a_bitcast_of_tiles_meets_its_operand_tile_by_tile() {
        let (tokens, tiles) = bitcast_classes(
            &[8, 1024],
            &[1, 0],
            &[8, 128],
            &[1, 8, 8, 128],
            &[3, 2, 1, 0],
            &[8, 128],
        );
        assert_eq!(tiles[2], tokens[0], "the rows are the batch");
        assert_eq!(tiles[1], tokens[1], "the column tiles are the sequence");
        assert_ne!(
            tiles[3], tokens[0],
            "the columns within a tile are not the batch"
        );
        assert_ne!(tokens[0], tokens[1]);
    }

    /// A bitcast that is a transpose in logical terms (the layouts differ):
    /// p f32[4,6,8]{2,1,0} and b f32[4,8,6]{1,2,0} hold the same bytes, so
    /// b's 6 is p's 6 and b's 8 is p's 8. Matched in logical order, p's 6
    /// would be joined with b's 8 (both the major of a run of 48), and a
    /// mixture of experts' batch with its expert dimension (pair-moe-batch
    /// predicted 38 % below the compiler before this).
    #[test]
    fn a_bitcast_meets_its_operand_in_memory_order() {
        let (p, b) = bitcast_classes(&[4, 6, 8], &[2, 1, 0], &[], &[4, 8, 6], &[1, 2, 0], &[]);
        assert_eq!(b[0], p[0]);
        assert_eq!(b[1], p[2]);
        assert_eq!(b[2], p[1]);
        assert_ne!(b[1], p[1]);
    }

    /// A flattened batch × sequence f32[8192,1024]{1,0:T(8,128)} bitcast to
    /// f32[8,1024,1024]{2,1,0:T(8,128)} (a real transformer step): the
    /// 8192 rows' inner tile of 8 lies where the sequence's inner tile lies.
    /// Only a dimension's leading part stands for it, so the batch is not
    /// joined with the sequence through it.
    #[test]
    fn a_flattened_batch_is_not_joined_to_the_sequence_through_its_tiles() {
        let (flat, split) = bitcast_classes(
            &[8192, 1024],
            &[1, 0],
            &[8, 128],
            &[8, 1024, 1024],
            &[2, 1, 0],
            &[8, 128],
        );
        assert_eq!(split[0], flat[0], "the batch stands for the flattened rows");
        assert_eq!(split[2], flat[1], "the width");
        assert_ne!(split[1], split[0], "the sequence is not the batch");
    }
}
