//! What the remedies need to know of a program's entry: which parameter
//! each output could alias (as JAX pairs donated arguments with outputs and
//! XLA's `input_output_alias` then lets them share an allocation), which
//! parameters are optimizer state, weights or data, and the batch size.

use std::collections::{HashMap, VecDeque};

use oomscope_layout::{parse_shape, ArrayShape, ElementType, Shape};
use oomscope_report::program::HeapProgram;

/// An entry parameter's role, as the remedies scope it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reaches a contraction and is updated (has an output of its shape): a weight.
    Weight,
    /// Updated but never reaches a contraction: optimizer state (Adam's m and v).
    OptimizerState,
    /// Read only (no output of its shape).
    Input,
}

/// One entry parameter leaf with an allocation in this memory space.
#[derive(Debug, Clone)]
pub struct Param {
    /// Index into `HeapProgram::parameters`.
    pub index: usize,
    pub allocation: usize,
    pub array: Option<ArrayShape>,
    pub role: Role,
    /// The output allocation it would alias when donated (index into allocations).
    pub output: Option<usize>,
    /// Already donated: its allocation is also maybe-live-out.
    pub donated: bool,
}

#[derive(Debug, Clone)]
pub struct Facts {
    pub params: Vec<Param>,
    /// (parameter position in `params`, batch size): the data input whose
    /// leading dimension is the batch.
    pub batch: Option<(usize, i64)>,
}

pub fn array_of(shape: &str) -> Option<ArrayShape> {
    match parse_shape(shape).ok()? {
        Shape::Array(a) => Some(a),
        _ => None,
    }
}

/// Element type and dimensions: what must match for an alias.
fn key(a: &ArrayShape) -> (ElementType, Vec<i64>) {
    (a.element_type, a.dims.clone())
}

impl Facts {
    pub fn of(program: &HeapProgram) -> Facts {
        let mut params: Vec<Param> = program
            .parameters
            .iter()
            .enumerate()
            .filter_map(|(index, p)| {
                let allocation = p.allocation?;
                let a = program.allocations.get(allocation)?;
                Some(Param {
                    index,
                    allocation,
                    array: array_of(&p.shape),
                    role: Role::Input,
                    output: None,
                    donated: a.maybe_live_out,
                })
            })
            .collect();
        // Outputs not already sharing a parameter's allocation, in output order.
        let mut outputs: Vec<(usize, Option<Vec<i64>>, ArrayShape)> = program
            .allocations
            .iter()
            .enumerate()
            .filter(|(_, a)| a.maybe_live_out && a.parameter_number.is_none())
            .filter_map(|(i, a)| {
                let rep = program.buffers.get(a.representative?)?;
                Some((i, a.output_index.clone(), array_of(&rep.shape)?))
            })
            .collect();
        outputs.sort_by(|a, b| match (&a.1, &b.1) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.0.cmp(&b.0),
        });
        // Each output takes the first parameter of its element type and
        // dimensions not yet taken (JAX's pairing of donated arguments).
        // (Parameters free for an output, per key, first first: a deep model
        // has tens of thousands of each, so no scan per output.)
        let mut free: HashMap<(ElementType, Vec<i64>), VecDeque<usize>> = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            if let (false, Some(a)) = (p.donated, p.array.as_ref()) {
                free.entry(key(a)).or_default().push_back(i);
            }
        }
        for (allocation, _, shape) in &outputs {
            if let Some(i) = free.get_mut(&key(shape)).and_then(VecDeque::pop_front) {
                params[i].output = Some(*allocation);
            }
        }
        for p in &mut params {
            let feeds = program
                .parameters
                .get(p.index)
                .is_some_and(|e| e.feeds_contraction);
            let updated = p.output.is_some() || p.donated;
            p.role = match (updated, feeds) {
                (true, true) => Role::Weight,
                (true, false) => Role::OptimizerState,
                (false, _) => Role::Input,
            };
        }
        let batch = find_batch(&params);
        Facts { params, batch }
    }
}

/// The data input and its batch size: among read-only parameters of rank
/// at least 1, integer inputs (token ids) first, then the one whose leading
/// dimension occurs in the fewest other parameters (a weight's leading
/// dimension is its neighbours' width; the batch is the data's own).
fn find_batch(params: &[Param]) -> Option<(usize, i64)> {
    let dims_of = |p: &Param| p.array.as_ref().map(|a| a.dims.clone()).unwrap_or_default();
    let mut best: Option<(bool, usize, usize, i64)> = None;
    for (i, p) in params.iter().enumerate() {
        if p.role != Role::Input {
            continue;
        }
        let Some(a) = &p.array else { continue };
        let Some(&b) = a.dims.first() else { continue };
        if b <= 1 {
            continue;
        }
        let integer = matches!(
            a.element_type,
            ElementType::S32
                | ElementType::S64
                | ElementType::U32
                | ElementType::S16
                | ElementType::U16
        );
        let occurrences = params
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .filter(|(_, q)| dims_of(q).contains(&b))
            .count();
        let candidate = (!integer, occurrences, i, b);
        if best.is_none_or(|(bi, bo, bj, _)| (candidate.0, candidate.1, candidate.2) < (bi, bo, bj))
        {
            best = Some(candidate);
        }
    }
    best.map(|(_, _, i, b)| (i, b))
}
