//! What if: a remedy applied to one compiled module's buffers, followed by
//! the same heap replay that gives XProf's Memory Viewer numbers (issue 25).
//!
//! The input is a [`HeapProgram`] (the module's buffers, allocations,
//! heap-simulator events and entry parameters; `oomscope_xla` builds it
//! from an HloProto). A [`Change`] turns it into a [`Plan`] (new padded
//! sizes, allocations that leave the memory space, temporaries the
//! compiler adds), and [`replay`] gives the new curve. Each remedy follows
//! what XLA does:
//!
//! - donation: an output shares the allocation of a donated parameter of
//!   its element type and dimensions (`input_output_alias`; JAX pairs each
//!   output with the first donated argument of its shape), so the output's
//!   own allocation, counted at every point, disappears;
//! - bf16: f32 arrays become bf16 and their padded size is recomputed from
//!   the layout (`T(8,128)` becomes `T(8,128)(2,1)`); optimizer state stays f32;
//! - batch ÷ k: every array dimension that carries the batch (the data
//!   input's leading dimension, or it times another of the data's dimensions
//!   once flattened) is divided, sizes recomputed from the layouts;
//! - sharding over N: weights and optimizer state lose N−1 of N rows, and
//!   so do the all-reduced gradients (a reduce-scatter's shard once
//!   sharded); each weight is gathered whole (in bf16 when f32, as XLA:TPU
//!   feeds a default-precision dot) and kept from its first dot to its
//!   last, as XLA's SPMD partitioner and scheduler do;
//! - offload: the optimizer state and its new value leave the memory space;
//!   each state is in HBM from the optimizer's first read of any state to
//!   its own last reader, each new value only where it is written;
//! - padding: the padding view's fix for each shape, replayed;
//! - remat: see [`remat`].
//!
//! Every prediction is held to real same-program pairs (`tests/pairs.rs`).

pub mod entries;
pub mod facts;
pub mod remat;
pub mod replay;

use oomscope_layout::{suggest_fix, ArrayShape, ElementType, Tile};
use oomscope_report::program::HeapProgram;
pub use oomscope_report::whatif::ChangedBuffer;

pub use facts::{Facts, Role};
pub use replay::{replay, Curve, Extra, Plan, Share};

/// One remedy, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Donation(DonationScope),
    Bf16,
    /// Batch divided by k.
    Batch(u32),
    Remat,
    /// Over N devices.
    Sharding(u32, ShardScope),
    /// Optimizer state to host memory.
    Offload,
    Padding,
}

/// Which arguments a donation donates (the report's vocabulary: the
/// What-if panel's choice travels in links).
pub use oomscope_report::whatif::DonationScope;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardScope {
    /// Weights and optimizer state (FSDP).
    Parameters,
    /// The largest temporary (a tensor the program replicates).
    LargestBuffer,
}

/// Why a what-if gives no prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhatIfError {
    /// The remedy changes nothing in this program (the reason, in words).
    NotApplicable(String),
    /// The module cannot be replayed (truncated or inconsistent trace).
    CannotReplay(String),
}

/// The replayed program after the changes.
#[derive(Debug, Clone)]
pub struct Prediction {
    pub curve: Curve,
    /// What each change was applied to, in words.
    pub scope: Vec<String>,
    /// How each was modelled.
    pub how: Vec<String>,
    pub changed: Vec<ChangedBuffer>,
    /// Buffers that take the memory of an operand dying at them after the
    /// changes (XLA's heap simulator shares equal shapes): (buffer, operand).
    pub shared: Vec<(String, String)>,
}

/// The program as compiled, replayed (equal to the Memory Viewer's curve).
pub fn baseline(program: &HeapProgram) -> Result<Curve, WhatIfError> {
    replay(program, &Plan::identity(program)).map_err(WhatIfError::CannotReplay)
}

/// What every prediction on a program starts from, computed once per
/// program: its replay as compiled, the facts about its parameters, and
/// each buffer's shape parsed (the panel replays many remedies on one
/// program, and parsing is the cost of a large module).
pub struct Basis {
    pub before: Curve,
    pub facts: Facts,
    /// `None`: a tuple, a token or an unreadable shape.
    pub arrays: Vec<Option<ArrayShape>>,
}

impl Basis {
    pub fn of(program: &HeapProgram) -> Result<Basis, WhatIfError> {
        Ok(Basis {
            before: baseline(program)?,
            facts: Facts::of(program),
            arrays: program
                .buffers
                .iter()
                .map(|b| facts::array_of(&b.shape))
                .collect(),
        })
    }
}

/// A program with its [`Basis`] (shared: the page's worker keeps it between
/// replays of the same module).
pub struct Prepared<'a> {
    pub program: &'a HeapProgram,
    pub basis: std::sync::Arc<Basis>,
}

impl<'a> Prepared<'a> {
    pub fn new(program: &'a HeapProgram) -> Result<Self, WhatIfError> {
        Ok(Prepared {
            program,
            basis: std::sync::Arc::new(Basis::of(program)?),
        })
    }

    pub fn before(&self) -> &Curve {
        &self.basis.before
    }
}

/// Applies `changes` (in order, to one plan) and replays.
pub fn predict(program: &HeapProgram, changes: &[Change]) -> Result<Prediction, WhatIfError> {
    predict_on(&Prepared::new(program)?, changes)
}

/// [`predict`] on a prepared program.
pub fn predict_on(prepared: &Prepared, changes: &[Change]) -> Result<Prediction, WhatIfError> {
    let (program, before) = (prepared.program, prepared.before());
    let mut work = Work {
        program,
        facts: &prepared.basis.facts,
        plan: Plan::identity(program),
        base_arrays: &prepared.basis.arrays,
        resized: std::collections::HashMap::new(),
        changed: Vec::new(),
        members: std::cell::OnceCell::new(),
    };
    let mut scope = Vec::new();
    let mut how = Vec::new();
    for &change in changes {
        let (s, h) = work.apply(change, before)?;
        scope.push(s);
        how.push(h);
    }
    let curve = replay(program, &work.plan).map_err(WhatIfError::CannotReplay)?;
    let name = |b: usize| {
        program
            .buffers
            .get(b)
            .map(|x| x.name.clone())
            .unwrap_or_default()
    };
    let shared = work
        .plan
        .shares
        .iter()
        .filter_map(|s| Some((name(program.events.get(s.at)?.buffer?), name(s.operand))))
        .collect();
    Ok(Prediction {
        curve,
        scope,
        how,
        changed: work.changed,
        shared,
    })
}

/// A plan being built, with the shapes the buffers have now.
pub(crate) struct Work<'a> {
    pub program: &'a HeapProgram,
    pub facts: &'a Facts,
    pub plan: Plan,
    /// Each buffer's shape as compiled, parsed once per program
    /// ([`Basis::arrays`]: parsing is the cost of a large module).
    pub base_arrays: &'a [Option<ArrayShape>],
    /// The buffers a change resized: their shape now, and its text.
    pub resized: std::collections::HashMap<usize, (ArrayShape, String)>,
    pub changed: Vec<ChangedBuffer>,
    /// The buffers of each allocation, by index (built when first asked).
    pub members: std::cell::OnceCell<Vec<Vec<usize>>>,
}

/// The padded size of `array` after `edit`, scaled from the compiler's own
/// size: the layout model gives the ratio (exact when the model reproduces
/// the compiler's size, as it does for every tiled array of the fixtures).
fn resized(size: u64, before: &ArrayShape, after: &ArrayShape) -> u64 {
    let old = before.tpu_padded_bytes();
    let new = after.tpu_padded_bytes();
    if old == size || old == 0 {
        return new;
    }
    u64::try_from(u128::from(size) * u128::from(new) / u128::from(old)).unwrap_or(u64::MAX)
}

/// bf16's layout for an f32 array: the same tiles, with the (2,1) tile
/// that packs two 16-bit elements per 32-bit word (a 1-D `T(n)` becomes
/// `T(2n)`), as XLA:TPU lays out bf16 arrays.
pub(crate) fn to_bf16(a: &ArrayShape) -> ArrayShape {
    let mut b = a.clone();
    b.element_type = ElementType::BF16;
    if let Some(layout) = b.layout.as_mut() {
        if layout.element_size_in_bits == 32 {
            layout.element_size_in_bits = 16;
        }
        match layout.tiles.as_slice() {
            [only] if only.dims.len() == 1 => {
                layout.tiles = vec![Tile {
                    dims: vec![only.dims[0].saturating_mul(2)],
                }];
            }
            [_] => layout.tiles.push(Tile { dims: vec![2, 1] }),
            _ => {}
        }
    }
    b
}

impl Work<'_> {
    /// Buffer `b`'s array shape now (after the changes so far).
    pub(crate) fn array(&self, b: usize) -> Option<&ArrayShape> {
        match self.resized.get(&b) {
            Some((a, _)) => Some(a),
            None => self.base_arrays.get(b).and_then(Option::as_ref),
        }
    }

    /// Buffer `b`'s shape text now.
    pub(crate) fn shape_text(&self, b: usize) -> Option<&str> {
        match self.resized.get(&b) {
            Some((_, t)) => Some(t.as_str()),
            None => self.program.buffers.get(b).map(|x| x.shape.as_str()),
        }
    }

    /// Sets buffer `b`'s shape to `after` (sizes from the layouts).
    pub(crate) fn resize_buffer(
        &mut self,
        b: usize,
        edit: &dyn Fn(&ArrayShape) -> Option<ArrayShape>,
    ) {
        let size = self.plan.buffer_bytes.get(b).copied().unwrap_or(0);
        let Some((after, new)) = self.array(b).and_then(|before| {
            let after = edit(before)?;
            let new = resized(size, before, &after);
            Some((after, new))
        }) else {
            return;
        };
        if new == size {
            return;
        }
        let shape = self.shape_text(b).unwrap_or_default().to_string();
        if let Some(slot) = self.plan.buffer_bytes.get_mut(b) {
            *slot = new;
        }
        let text = after.to_string();
        if let Some(name) = self.program.buffers.get(b).map(|x| x.name.clone()) {
            self.changed.push(ChangedBuffer {
                name,
                shape_before: shape.clone(),
                shape_after: text.clone(),
                bytes_before: size,
                bytes_after: new,
            });
        }
        self.resized.insert(b, (after, text));
    }

    /// Resizes an indefinite allocation by its representative buffer.
    fn resize_allocation(&mut self, a: usize, edit: &dyn Fn(&ArrayShape) -> Option<ArrayShape>) {
        let Some(rep) = self
            .program
            .allocations
            .get(a)
            .and_then(|x| x.representative)
        else {
            return;
        };
        let before = self.plan.buffer_bytes.get(rep).copied().unwrap_or(0);
        self.resize_buffer(rep, edit);
        let after = self.plan.buffer_bytes.get(rep).copied().unwrap_or(0);
        // An allocation an earlier change removed (a donated output, state
        // offloaded) stays removed: resizing its buffer must not bring it back.
        if let Some(slot) = self.plan.allocation_bytes.get_mut(a).filter(|s| **s > 0) {
            *slot = slot.saturating_sub(before).saturating_add(after);
        }
    }

    /// Gives each of `buffers` memory of its own where the trace has it
    /// share an operand's that is now larger than it.
    fn own_smaller_shares(&mut self, buffers: &[usize]) {
        use oomscope_report::program::HeapEventKind;
        let size = |w: &Self, b: usize| w.plan.buffer_bytes.get(b).copied().unwrap_or(0);
        // A flag per buffer, not a scan of `buffers` per event: a deep
        // model has thousands of sharded gradients and 10^5 events.
        let mut listed = vec![false; self.program.buffers.len()];
        for &b in buffers {
            if let Some(flag) = listed.get_mut(b) {
                *flag = true;
            }
        }
        for (i, e) in self.program.events.iter().enumerate() {
            if let (HeapEventKind::ShareWith(c), Some(b)) = (e.kind, e.buffer) {
                if listed.get(b) == Some(&true) && size(self, b) < size(self, c) {
                    self.plan.own.push(i);
                }
            }
        }
    }

    /// The largest of allocation `a`'s other buffers (not its
    /// representative), each at the size `size_of` gives it (from its size
    /// now). An allocation is as large as the largest value it
    /// holds: an older compiler (libtpu 0.0.23) puts activations and
    /// gradients in the output allocations, and a remedy that shrinks or
    /// moves the output leaves them their memory.
    fn other_members(&self, a: usize, size_of: &dyn Fn(&Self, usize, u64) -> u64) -> u64 {
        let rep = self
            .program
            .allocations
            .get(a)
            .and_then(|x| x.representative);
        let members = self.members.get_or_init(|| {
            let mut m = vec![Vec::new(); self.program.allocations.len()];
            for (b, buffer) in self.program.buffers.iter().enumerate() {
                if let Some(list) = m.get_mut(buffer.allocation) {
                    list.push(b);
                }
            }
            m
        });
        // Buffers that only carry a value (a loop's or a call's copy of a
        // parameter, a tuple's element, a copy) follow the representative;
        // a buffer an instruction computes is a value of its own.
        let carries = |b: usize| {
            self.program.buffers.get(b).is_some_and(|x| {
                matches!(
                    x.opcode.as_str(),
                    "parameter"
                        | "while"
                        | "conditional"
                        | "call"
                        | "tuple"
                        | "get-tuple-element"
                        | "bitcast"
                        | "copy"
                        | "copy-start"
                        | "copy-done"
                        | "optimization-barrier"
                )
            })
        };
        members
            .get(a)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|&&b| Some(b) != rep && !carries(b))
            .map(|&b| size_of(self, b, self.plan.buffer_bytes.get(b).copied().unwrap_or(0)))
            .max()
            .unwrap_or(0)
    }

    /// Removes allocation `a` from this memory space.
    fn remove_allocation(&mut self, a: usize) {
        let Some(allocation) = self.program.allocations.get(a) else {
            return;
        };
        let bytes = self.plan.allocation_bytes.get(a).copied().unwrap_or(0);
        if bytes == 0 {
            return;
        }
        if let Some(slot) = self.plan.allocation_bytes.get_mut(a) {
            *slot = 0;
        }
        let rep = allocation
            .representative
            .and_then(|r| self.program.buffers.get(r));
        self.changed.push(ChangedBuffer {
            name: rep.map_or_else(
                || format!("allocation {}", allocation.index),
                |b| b.name.clone(),
            ),
            shape_before: rep.map(|b| b.shape.clone()).unwrap_or_default(),
            shape_after: String::new(),
            bytes_before: bytes,
            bytes_after: 0,
        });
    }

    /// Follows XLA's heap simulator after a remedy changed shapes: a buffer
    /// takes the memory of an operand that dies at its definition when the
    /// two shapes (element type, dimensions, layout) are now equal and were
    /// not as compiled (`HeapSimulator::RunComputation` shares only equal
    /// shapes: `CanShareOperandBufferWithUser`). In f32, a fusion writing a
    /// bf16 copy of its f32 operand cannot reuse it; with both bf16 it does.
    /// Pairs already equal as compiled keep the compiler's own decision.
    /// Returns how many buffers now share.
    fn share_equal_operands(&mut self) -> usize {
        use oomscope_report::program::HeapEventKind;
        let program = self.program;
        let n = program.buffers.len();
        let mut alloc_at = vec![None; n];
        let mut free_at = vec![None; n];
        // Buffers whose memory the trace already shares, or that it frees or
        // allocates more than once: left as the compiler traced them.
        let mut plain = vec![true; n];
        for (i, e) in program.events.iter().enumerate() {
            let Some(b) = e.buffer.filter(|&b| b < n) else {
                continue;
            };
            let slot = match e.kind {
                HeapEventKind::Alloc => &mut alloc_at[b],
                HeapEventKind::Free => &mut free_at[b],
                HeapEventKind::ShareWith(c) => {
                    plain[b] = false;
                    if let Some(p) = plain.get_mut(c) {
                        *p = false;
                    }
                    continue;
                }
            };
            if slot.replace(i).is_some() {
                plain[b] = false;
            }
        }
        let indefinite = |b: usize| {
            program
                .buffers
                .get(b)
                .and_then(|x| program.allocations.get(x.allocation))
                .is_none_or(|a| a.indefinite)
        };
        let mut taken = vec![false; n];
        for s in &self.plan.shares {
            if let Some(t) = taken.get_mut(s.operand) {
                *t = true;
            }
        }
        let mut shares = Vec::new();
        for (v, buffer) in program.buffers.iter().enumerate() {
            let (Some(at), true) = (alloc_at[v], plain[v]) else {
                continue;
            };
            if indefinite(v) || buffer.dying_operands.is_empty() {
                continue;
            }
            let Some(now) = self.array(v) else { continue };
            for &o in &buffer.dying_operands {
                let Some(free) = free_at.get(o).copied().flatten() else {
                    continue;
                };
                let ok = o < n
                    && plain[o]
                    && !taken[o]
                    && free > at
                    && alloc_at[o].is_some_and(|a| a < at)
                    && !indefinite(o)
                    && self.plan.buffer_bytes.get(o) == self.plan.buffer_bytes.get(v)
                    && self.array(o).is_some_and(|a| same_shape(a, now))
                    && !matches!(
                        (self.base_arrays.get(o), self.base_arrays.get(v)),
                        (Some(Some(a)), Some(Some(b))) if same_shape(a, b)
                    );
                if ok {
                    taken[o] = true;
                    shares.push(Share {
                        at,
                        operand: o,
                        free,
                    });
                    break;
                }
            }
        }
        let count = shares.len();
        self.plan.shares.extend(shares);
        count
    }

    /// Buffers traced by the heap simulator (temporaries), by index.
    fn traced(&self) -> Vec<usize> {
        let mut seen = vec![false; self.program.buffers.len()];
        for e in &self.program.events {
            if let Some(b) = e.buffer {
                if let Some(s) = seen.get_mut(b) {
                    *s = true;
                }
            }
        }
        (0..seen.len()).filter(|&i| seen[i]).collect()
    }

    /// Indefinite allocations (parameters, outputs, constants) by index.
    fn indefinite(&self) -> Vec<usize> {
        (0..self.program.allocations.len())
            .filter(|&i| {
                self.program
                    .allocations
                    .get(i)
                    .is_some_and(|a| a.indefinite && a.representative.is_some())
            })
            .collect()
    }

    /// Allocations of the parameters with these roles and of the outputs they pair with.
    fn role_allocations(&self, roles: &[Role]) -> Vec<usize> {
        let mut out = Vec::new();
        for p in &self.facts.params {
            if roles.contains(&p.role) {
                out.push(p.allocation);
                out.extend(p.output);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn apply(&mut self, change: Change, before: &Curve) -> Result<(String, String), WhatIfError> {
        match change {
            Change::Donation(scope) => self.donation(scope),
            Change::Bf16 => self.bf16(),
            Change::Batch(k) => self.batch(k),
            Change::Sharding(n, scope) => self.sharding(n, scope, before),
            Change::Offload => self.offload(),
            Change::Padding => self.padding(),
            Change::Remat => remat::apply(self, before),
        }
    }

    fn donation(&mut self, scope: DonationScope) -> Result<(String, String), WhatIfError> {
        let mut count = 0usize;
        let mut bytes = 0u64;
        let pairs: Vec<(usize, Role, usize)> = self
            .facts
            .params
            .iter()
            .filter(|p| !p.donated)
            .filter_map(|p| Some((p.index, p.role, p.output?)))
            .collect();
        let mut copies = 0u64;
        for (param, role, output) in pairs {
            if scope == DonationScope::OptimizerState && role != Role::OptimizerState {
                continue;
            }
            let size = self.plan.allocation_bytes.get(output).copied().unwrap_or(0);
            bytes += size;
            // The output moves into its parameter's allocation; other values
            // the compiler had put in the output's allocation (libtpu 0.0.23
            // places activations there) still need that memory.
            // (Values of the output's own shape are its versions, an
            // in-place update chain, and move with it.)
            let own = self
                .program
                .allocations
                .get(output)
                .and_then(|a| a.representative)
                .and_then(|r| self.base_arrays.get(r).and_then(Option::as_ref))
                .map(|a| (a.element_type, a.dims.clone()));
            // They count at their compiled sizes over the whole program,
            // whatever other remedy comes before or after.
            let others = self.other_members(output, &|w, b, _| {
                let version = own.as_ref().is_some_and(|(t, d)| {
                    w.base_arrays
                        .get(b)
                        .and_then(Option::as_ref)
                        .is_some_and(|x| x.element_type == *t && x.dims == *d)
                });
                match w.program.buffers.get(b) {
                    Some(x) if !version => x.size_bytes,
                    _ => 0,
                }
            });
            self.remove_allocation(output);
            if others > 0 {
                self.plan.extra.push(Extra {
                    from: 0,
                    to: self.program.events.len(),
                    bytes: others,
                });
            }
            count += 1;
            // The new value is written while the old one is still read: XLA's
            // copy insertion keeps both for that span.
            let defined = self
                .program
                .allocations
                .get(output)
                .and_then(|a| a.defined_at);
            let last_use = self.program.parameters.get(param).and_then(|p| p.last_use);
            if let (Some(from), Some(to)) = (defined, last_use) {
                if to > from {
                    copies += size;
                    self.plan.extra.push(Extra {
                        from,
                        to: to + 1,
                        bytes: size,
                    });
                }
            }
        }
        if count == 0 {
            return Err(WhatIfError::NotApplicable(match scope {
                DonationScope::All => "no output has the element type and dimensions of a parameter not already donated: nothing XLA could alias".into(),
                DonationScope::OptimizerState => "no optimizer state (an updated parameter that feeds no dot or convolution) is left to donate".into(),
            }));
        }
        let what = match scope {
            DonationScope::All => "every parameter XLA could alias",
            DonationScope::OptimizerState => "the optimizer state only",
        };
        Ok((
            format!("donate_argnums on {what}: {count} output{} alias a parameter", plural(count)),
            format!(
                "each output shares the allocation of the first donated parameter of its element type and dimensions (input_output_alias), so its own {} leave every point of the replay; where the schedule writes an output before the last read of its parameter, a copy is kept for that span ({} in all)",
                units(bytes),
                units(copies)
            ),
        ))
    }

    fn bf16(&mut self) -> Result<(String, String), WhatIfError> {
        let is_f32 = |a: &ArrayShape| a.element_type == ElementType::F32;
        let edit = |a: &ArrayShape| is_f32(a).then(|| to_bf16(a));
        let kept = self.role_allocations(&[Role::OptimizerState]);
        let mut cast = 0usize;
        for a in self.indefinite() {
            if kept.contains(&a) {
                continue;
            }
            let n = self.changed.len();
            self.resize_allocation(a, &edit);
            cast += self.changed.len() - n;
        }
        // A softmax's input stays f32, as mixed precision computes softmax
        // and log-softmax (attention weights, the loss) in f32.
        let mut softmax = 0usize;
        for b in self.traced() {
            let keep = self.program.buffers.get(b).is_some_and(|x| x.softmax)
                && self.array(b).is_some_and(is_f32);
            if keep {
                softmax += 1;
                continue;
            }
            let n = self.changed.len();
            self.resize_buffer(b, &edit);
            cast += self.changed.len() - n;
        }
        if cast == 0 {
            return Err(WhatIfError::NotApplicable(
                "no f32 buffer outside the optimizer state".into(),
            ));
        }
        let shared = self.share_equal_operands();
        // Buffers the f32 program already writes in bf16: its converts for
        // the matrix units (a dot reads bf16 at default precision).
        let converts = self
            .traced()
            .into_iter()
            .filter(|&b| {
                self.base_arrays
                    .get(b)
                    .and_then(Option::as_ref)
                    .is_some_and(|a| a.element_type == ElementType::BF16)
            })
            .count();
        let mut kept_f32 = Vec::new();
        if !kept.is_empty() {
            kept_f32.push(format!(
                "{} optimizer-state allocation{}",
                kept.len(),
                plural(kept.len())
            ));
        }
        if softmax > 0 {
            kept_f32.push(format!("{softmax} softmax buffer{}", plural(softmax)));
        }
        Ok((
            format!(
                "{cast} f32 buffer{} cast to bf16 (parameters, activations, gradients){}",
                plural(cast),
                if kept_f32.is_empty() { String::new() } else { format!("; kept f32: {}", kept_f32.join(", ")) }
            ),
            format!(
                "padded sizes recomputed from each layout with bf16's tile (T(8,128) → T(8,128)(2,1)); converts that disappear: the f32 program writes {converts} buffer{} in bf16 (its casts for the matrix units), and {shared} of them now take the memory of the operand that dies at them, now of their shape (XLA's heap simulator shares an operand of equal shape); converts that appear: between the f32 optimizer state and the bf16 parameters (fused into the update, no buffer) and before each softmax, computed in f32 as mixed precision does (a program that keeps softmax in bf16 is predicted high by those buffers)",
                plural(converts)
            ),
        ))
    }

    fn batch(&mut self, k: u32) -> Result<(String, String), WhatIfError> {
        let Some((data, b)) = self.facts.batch else {
            return Err(WhatIfError::NotApplicable(
                "no data input with a leading batch dimension found among the read-only parameters"
                    .into(),
            ));
        };
        if b < 2 {
            return Err(WhatIfError::NotApplicable(format!(
                "the batch is {b} per device (the token ids' leading dimension): it cannot be divided"
            )));
        }
        let k = i64::from(k.max(2));
        let data_dims: Vec<i64> = self
            .facts
            .params
            .get(data)
            .and_then(|p| p.array.as_ref())
            .map(|a| a.dims.clone())
            .unwrap_or_default();
        // The batch, and the batch flattened with each other dimension of the data.
        let mut carriers = vec![b];
        let mut product = b;
        for &d in data_dims.iter().skip(1) {
            carriers.push(b.saturating_mul(d));
            product = product.saturating_mul(d);
            carriers.push(product);
        }
        carriers.sort_unstable();
        carriers.dedup();
        // The batch's class: the data's leading dimension followed through
        // the program (dots, convolutions, reshapes, loops), when known.
        let class = self
            .facts
            .params
            .get(data)
            .and_then(|p| self.program.parameters.get(p.index))
            .and_then(|e| e.dim_classes.first().copied());
        let followed = class.is_some();
        let program = self.program;
        let carriers: &[i64] = &carriers;
        // The batch's size names it too when no parameter has a dimension of
        // that size outside the batch's class (no weight is as wide as the
        // batch): then a buffer the dataflow does not reach (a loop's stacked
        // residuals, allocated by an operand-less custom call and filled in
        // the body) is divided where a dimension has the batch's size. Each
        // size is judged alone: a recommender's tables have as many rows as
        // the batch times its features (pair-embed-batch) and are no batch.
        let by_size_carriers: Vec<i64> = match class {
            Some(c) => carriers
                .iter()
                .copied()
                .filter(|&size| {
                    self.facts.params.iter().enumerate().all(|(j, p)| {
                        j == data
                            || program.parameters.get(p.index).is_none_or(|e| {
                                p.array.as_ref().is_none_or(|a| {
                                    a.dims.iter().enumerate().all(|(d, &n)| {
                                        n != size || e.dim_classes.get(d) == Some(&c)
                                    })
                                })
                            })
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        let unambiguous = by_size_carriers.contains(&b);
        let by_size_carriers: &[i64] = &by_size_carriers;
        // The dimensions of buffer `x` that carry the batch.
        let carried = move |x: usize, a: &ArrayShape| -> Vec<usize> {
            let classes = program
                .buffers
                .get(x)
                .map_or(&[][..], |b| b.dim_classes.as_slice());
            let by_size = |sizes: &[i64]| {
                a.dims
                    .iter()
                    .position(|d| sizes.contains(d))
                    .into_iter()
                    .collect()
            };
            match class {
                Some(c) if classes.len() == a.dims.len() => {
                    let followed: Vec<usize> =
                        (0..classes.len()).filter(|&i| classes[i] == c).collect();
                    if followed.is_empty() && unambiguous {
                        by_size(by_size_carriers)
                    } else {
                        followed
                    }
                }
                Some(_) => Vec::new(),
                None => by_size(carriers),
            }
        };
        let divide = move |x: usize| {
            move |a: &ArrayShape| {
                let dims = carried(x, a);
                if dims.is_empty() {
                    return None;
                }
                let mut n = a.clone();
                for i in dims {
                    n.dims[i] = (a.dims[i] + k - 1) / k;
                }
                Some(n)
            }
        };
        // Every allocation holding a buffer that carries the batch (a KV
        // cache does, as the data does): its size is its largest buffer's,
        // so one that also holds a weight-shaped output keeps that size.
        let mut members: std::collections::HashMap<usize, Vec<usize>> = Default::default();
        for (x, buffer) in program.buffers.iter().enumerate() {
            members.entry(buffer.allocation).or_default().push(x);
        }
        let mut carrying = 0usize;
        for a in self.indefinite() {
            let inside = members.get(&a).cloned().unwrap_or_default();
            let largest = |w: &Work| {
                inside
                    .iter()
                    .map(|&x| w.plan.buffer_bytes.get(x).copied().unwrap_or(0))
                    .max()
                    .unwrap_or(0)
            };
            let before = largest(self);
            let n = self.changed.len();
            for &x in &inside {
                self.resize_buffer(x, &divide(x));
            }
            carrying += self.changed.len() - n;
            let after = largest(self);
            if let Some(slot) = self.plan.allocation_bytes.get_mut(a).filter(|s| **s > 0) {
                *slot = slot.saturating_sub(before).saturating_add(after);
            }
        }
        for t in self.traced() {
            let n = self.changed.len();
            self.resize_buffer(t, &divide(t));
            carrying += self.changed.len() - n;
        }
        let _ = self.share_equal_operands();
        let name = self
            .facts
            .params
            .get(data)
            .and_then(|p| self.program.parameters.get(p.index))
            .map(|p| format!("parameter {} {}", p.number, p.shape))
            .unwrap_or_default();
        Ok((
            format!("batch {b} → {} (÷{k}), from the leading dimension of {name}: {carrying} buffer{} carry it", (b + k - 1) / k, plural(carrying)),
            if followed {
                "the data's leading dimension followed through the program (elementwise operations, broadcasts, reshapes, the batch and free dimensions of dots and convolutions, gathers, fusions and loops) and divided wherever it goes; a dimension a dot or a convolution contracts (a weight's gradient) keeps its size even when it equals the batch; padded sizes recomputed from the layouts"
            } else {
                "every array dimension equal to the batch (or the batch flattened with the data's other dimensions) divided; padded sizes recomputed from the layouts"
            }
            .into(),
        ))
    }

    fn sharding(
        &mut self,
        n: u32,
        scope: ShardScope,
        before: &Curve,
    ) -> Result<(String, String), WhatIfError> {
        let n = i64::from(n.max(2));
        let divide = move |a: &ArrayShape| {
            let i = a.dims.iter().position(|&d| d >= n)?;
            let mut s = a.clone();
            s.dims[i] = (a.dims[i] + n - 1) / n;
            Some(s)
        };
        match scope {
            ShardScope::Parameters => {
                let allocations = self.role_allocations(&[Role::Weight, Role::OptimizerState]);
                if allocations.is_empty() {
                    return Err(WhatIfError::NotApplicable(
                        "no updated parameter (weight or optimizer state) to shard".into(),
                    ));
                }
                // Sets, not scans: a deep model has tens of thousands of parameters.
                let keys: std::collections::HashSet<(ElementType, Vec<i64>)> = self
                    .facts
                    .params
                    .iter()
                    .filter(|p| matches!(p.role, Role::Weight | Role::OptimizerState))
                    .filter_map(|p| p.array.as_ref().map(|a| (a.element_type, a.dims.clone())))
                    .collect();
                // Each weight's gathered copy, before its allocation shrinks.
                let gathers: Vec<(usize, usize, u64)> = self
                    .facts
                    .params
                    .iter()
                    .filter(|p| p.role == Role::Weight)
                    .filter_map(|p| {
                        let entry = self.program.parameters.get(p.index)?;
                        let (from, to) =
                            (entry.first_contraction_use?, entry.last_contraction_use?);
                        let full = self
                            .plan
                            .allocation_bytes
                            .get(p.allocation)
                            .copied()
                            .unwrap_or(0);
                        let a = p.array.as_ref();
                        // XLA:TPU feeds an f32 dot at default precision in
                        // bf16 and moves that convert before the all-gather.
                        let mut bytes = if a.is_some_and(|a| a.element_type == ElementType::F32) {
                            full / 2
                        } else {
                            full
                        };
                        // A loop (a scan over stacked layers) gathers one
                        // step's slice at a time.
                        if entry.contraction_in_loop {
                            let steps = a.and_then(|a| a.dims.first().copied()).unwrap_or(1).max(1);
                            bytes /= steps as u64;
                        }
                        Some((from, to, bytes))
                    })
                    .collect();
                // Gradients: a data-parallel program sums each weight's
                // gradient over the devices with an all-reduce; sharded,
                // that sum is a reduce-scatter whose result is the shard.
                // (The local gradient before it is whole in both, and an
                // activation of a weight's shape is not a gradient.)
                let gradient = |w: &Self, t: usize| {
                    let summed = w.program.buffers.get(t).is_some_and(|b| {
                        b.opcode.starts_with("all-reduce") || b.name.starts_with("all-reduce")
                    });
                    summed
                        && w.array(t)
                            .is_some_and(|a| keys.contains(&(a.element_type, a.dims.clone())))
                };
                for &a in &allocations {
                    let others = self.other_members(a, &|w, b, size| match w
                        .array(b)
                        .filter(|_| gradient(w, b))
                    {
                        Some(before) => {
                            divide(before).map_or(size, |after| resized(size, before, &after))
                        }
                        None => size,
                    });
                    self.resize_allocation(a, &divide);
                    if let Some(slot) = self.plan.allocation_bytes.get_mut(a).filter(|s| **s > 0) {
                        *slot = (*slot).max(others);
                    }
                }
                let mut shards = Vec::new();
                for t in self.traced() {
                    if gradient(self, t) {
                        self.resize_buffer(t, &divide);
                        shards.push(t);
                    }
                }
                // A data-parallel all-reduce sums in place, in its operand's
                // memory (the trace's SHARE_WITH); a reduce-scatter's shard is
                // a buffer of its own, and the whole local gradient dies at it
                // (pair-embed-shard: the four tables' gradients were kept
                // whole to the update).
                self.own_smaller_shares(&shards);
                // FSDP's all-gather: XLA keeps a weight's gathered copy from
                // its first dot to its last (the forward's copy serves the
                // backward), so it is live over that span.
                let mut gathered = 0u64;
                for (from, to, bytes) in gathers {
                    gathered = gathered.saturating_add(bytes);
                    self.plan.extra.push(Extra {
                        from,
                        to: to + 1,
                        bytes,
                    });
                }
                Ok((
                    format!("weights and optimizer state ({} allocations) sharded over {n} devices", allocations.len()),
                    format!("their first dimension divisible by {n} divided, with the all-reduced gradients of their shapes (a reduce-scatter's shard once sharded); each weight gathered whole (in bf16 when f32, as XLA:TPU feeds a default-precision dot; one step's slice when a loop reads it) from its first dot to its last ({} gathered in all)", units(gathered)),
                ))
            }
            ShardScope::LargestBuffer => {
                let peak_live = live_at(self.program, before.peak_position);
                let Some(&largest) = peak_live
                    .iter()
                    .max_by_key(|&&b| self.plan.buffer_bytes.get(b).copied().unwrap_or(0))
                else {
                    return Err(WhatIfError::NotApplicable(
                        "no temporary is live at the peak".into(),
                    ));
                };
                let key = self
                    .array(largest)
                    .map(|a| (a.element_type, a.dims.clone()));
                let Some(key) = key else {
                    return Err(WhatIfError::NotApplicable(
                        "the largest buffer at the peak is not an array".into(),
                    ));
                };
                let name = self
                    .program
                    .buffers
                    .get(largest)
                    .map(|b| b.name.clone())
                    .unwrap_or_default();
                for t in self.traced() {
                    let same = self
                        .array(t)
                        .is_some_and(|a| a.element_type == key.0 && a.dims == key.1);
                    if same {
                        self.resize_buffer(t, &divide);
                    }
                }
                Ok((
                    format!("the largest buffer at the peak ({name}) and the temporaries of its shape sharded over {n} devices"),
                    format!("its first dimension of at least {n} divided by {n}, size recomputed from its layout"),
                ))
            }
        }
    }

    fn offload(&mut self) -> Result<(String, String), WhatIfError> {
        let allocations = self.role_allocations(&[Role::OptimizerState]);
        if allocations.is_empty() {
            return Err(WhatIfError::NotApplicable("no optimizer state (an updated parameter that feeds no dot or convolution) to offload".into()));
        }
        // (first reader, last reader, allocation, the new value's allocation)
        type State = (Option<usize>, Option<usize>, usize, Option<usize>);
        let states: Vec<State> = self
            .facts
            .params
            .iter()
            .filter(|p| p.role == Role::OptimizerState)
            .map(|p| {
                let entry = self.program.parameters.get(p.index);
                (
                    entry.and_then(|e| e.first_use),
                    entry.and_then(|e| e.last_use),
                    p.allocation,
                    p.output,
                )
            })
            .collect();
        // The optimizer's work begins at the first reader of any state:
        // XLA's scheduler has the host-to-HBM copies in flight from there
        // (on the real pairs they start no later, often earlier).
        let optimizer_starts = states.iter().filter_map(|s| s.0).min();
        for (first, last, allocation, output) in states {
            let size = self
                .plan
                .allocation_bytes
                .get(allocation)
                .copied()
                .unwrap_or(0);
            self.remove_allocation(allocation);
            // Copied into HBM when the optimizer begins, kept to its last reader.
            if let (Some(from), Some(to)) = (optimizer_starts.or(first), last) {
                self.plan.extra.push(Extra {
                    from,
                    to: to + 1,
                    bytes: size,
                });
            }
            // The new value is computed in HBM and copied out to the host
            // as soon as it is written (its HBM buffer is not an output).
            if let Some(o) = output {
                let size = self.plan.allocation_bytes.get(o).copied().unwrap_or(0);
                let from = self
                    .program
                    .allocations
                    .get(o)
                    .and_then(|a| a.defined_at)
                    .unwrap_or(0);
                self.remove_allocation(o);
                self.plan.extra.push(Extra {
                    from,
                    to: from + 1,
                    bytes: size,
                });
            }
        }
        Ok((
            format!("optimizer state and its new value ({} allocations) in pinned_host memory", allocations.len()),
            "their allocations leave HBM; each state is copied into HBM when the optimizer's work begins (the first reader of any state) and kept to its last reader, and each new value is copied out as soon as it is written".into(),
        ))
    }

    fn padding(&mut self) -> Result<(String, String), WhatIfError> {
        let edit = |a: &ArrayShape| facts::array_of(&suggest_fix(a)?.new_shape);
        let n = self.changed.len();
        for a in self.indefinite() {
            self.resize_allocation(a, &edit);
        }
        for t in self.traced() {
            self.resize_buffer(t, &edit);
        }
        let count = self.changed.len() - n;
        if count == 0 {
            return Err(WhatIfError::NotApplicable(
                "the padding model proposes no fix for any buffer".into(),
            ));
        }
        Ok((
            format!("the padding view's fix applied to {count} buffer{}", plural(count)),
            "each shape changed as the padding view proposes (a dimension to a tile multiple, or a transpose), padded sizes from the layout model".into(),
        ))
    }
}

/// Traced buffers live at `position` (allocated, not yet freed), by index
/// (one pass, linear in the events).
pub(crate) fn live_at(program: &HeapProgram, position: u64) -> Vec<usize> {
    use oomscope_report::program::HeapEventKind;
    let mut live = vec![false; program.buffers.len()];
    for (i, e) in program.events.iter().enumerate() {
        if i as u64 > position {
            break;
        }
        let Some(slot) = e.buffer.and_then(|b| live.get_mut(b)) else {
            continue;
        };
        // A sharer (a loop's result reusing its input's memory) is live as
        // the buffer it shares with is.
        *slot = !matches!(e.kind, HeapEventKind::Free);
    }
    (0..live.len()).filter(|&b| live[b]).collect()
}

/// The buffer whose memory each buffer uses (SHARE_WITH followed to its
/// root), for every buffer at once: one pass over the events, and each
/// chain walk bounded by the number of buffers.
pub(crate) fn memory_roots(program: &HeapProgram) -> Vec<usize> {
    use oomscope_report::program::HeapEventKind;
    let n = program.buffers.len();
    let mut canonical: Vec<Option<usize>> = vec![None; n];
    for e in &program.events {
        if let (HeapEventKind::ShareWith(c), Some(x)) = (e.kind, e.buffer) {
            if let Some(slot) = canonical.get_mut(x) {
                *slot = Some(c);
            }
        }
    }
    let mut roots: Vec<Option<usize>> = vec![None; n];
    for b in 0..n {
        let mut path = Vec::new();
        let mut r = b;
        while let Some(c) = canonical.get(r).copied().flatten() {
            if let Some(known) = roots.get(r).copied().flatten() {
                r = known;
                break;
            }
            if c == r || path.len() > n {
                break;
            }
            path.push(r);
            r = c;
        }
        let root = roots.get(r).copied().flatten().unwrap_or(r);
        for p in path {
            roots[p] = Some(root);
        }
        roots[b] = Some(root);
    }
    roots
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or(i))
        .collect()
}

/// Equal as XLA's `ShapeUtil::Equal` sees a buffer: element type,
/// dimensions, layout order, tiles and memory space.
fn same_shape(a: &ArrayShape, b: &ArrayShape) -> bool {
    let layout = |x: &ArrayShape| {
        x.layout
            .as_ref()
            .map(|l| (l.minor_to_major.clone(), l.tiles.clone(), l.memory_space))
    };
    a.element_type == b.element_type && a.dims == b.dims && layout(a) == layout(b)
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(crate) fn units(bytes: u64) -> String {
    oomscope_report::units::format_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(text: &str) -> ArrayShape {
        facts::array_of(text).unwrap()
    }

    #[test]
    fn bf16_takes_the_packed_tile_and_its_padded_size() {
        // The layouts XLA:TPU gives the same arrays in bf16 (fixtures/pair-dtype).
        let b = to_bf16(&array("f32[129,1024]{1,0:T(8,128)}"));
        assert_eq!(b.to_string(), "bf16[129,1024]{1,0:T(8,128)(2,1)}");
        assert_eq!(b.tpu_padded_bytes(), 136 * 1024 * 2);
        let one = to_bf16(&array("f32[100]{0:T(128)}"));
        assert_eq!(one.to_string(), "bf16[100]{0:T(256)}");
        assert_eq!(one.tpu_padded_bytes(), 512);
    }

    #[test]
    fn a_size_the_model_does_not_reproduce_is_scaled_by_the_model() {
        let before = array("f32[1024,1024]{1,0:T(8,128)}");
        let after = to_bf16(&before);
        // The compiler's own size wins; the layout model gives the ratio.
        assert_eq!(resized(4 << 20, &before, &after), 2 << 20);
        assert_eq!(resized(5 << 20, &before, &after), (5 << 20) / 2);
    }
}
