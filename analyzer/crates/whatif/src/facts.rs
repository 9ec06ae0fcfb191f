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
        let classes: Vec<Vec<u32>> = params
            .iter()
            .map(|p| {
                program
                    .parameters
                    .get(p.index)
                    .map(|e| e.dim_classes.clone())
                    .unwrap_or_default()
            })
            .collect();
        // The distinct dimension lists among the buffers carrying each class.
        let mut shapes: HashMap<u32, std::collections::HashSet<Vec<i64>>> = HashMap::new();
        for b in &program.buffers {
            let Some(a) = array_of(&b.shape) else {
                continue;
            };
            for &c in &b.dim_classes {
                shapes.entry(c).or_default().insert(a.dims.clone());
            }
        }
        let spread: HashMap<u32, usize> = shapes.into_iter().map(|(c, s)| (c, s.len())).collect();
        let batch = find_batch(&params, &classes, &spread);
        Facts { params, batch }
    }
}

/// The data input and its batch size, among parameters of rank at least 1
/// that are not optimizer state (a decoding step returns its input's new
/// value, so the data may have an output of its shape):
/// 1. integer inputs (token ids) first;
/// 2. then the one whose leading dimension's size occurs in the fewest
///    read-only parameters (a weight's leading dimension is its
///    neighbours' width; the batch is the data's own);
/// 3. then a read-only one;
/// 4. then the one whose leading dimension, followed through the program
///    (`classes`, one list per parameter), spreads into the most distinct
///    shapes (`spread`, per class: the batch flows into every activation; a
///    cache's layer axis stays in the cache);
/// 5. then the one whose leading dimension reaches the fewest other
///    parameters.
fn find_batch(
    params: &[Param],
    classes: &[Vec<u32>],
    spread: &HashMap<u32, usize>,
) -> Option<(usize, i64)> {
    // How many read-only parameters hold each size among their dimensions,
    // and how many parameters reach each class: counted once, not per
    // candidate (a deep model has tens of thousands of parameters).
    let mut holding: HashMap<i64, usize> = HashMap::new();
    for q in params.iter().filter(|q| q.role == Role::Input) {
        let mut sizes: Vec<i64> = q.array.as_ref().map(|a| a.dims.clone()).unwrap_or_default();
        sizes.sort_unstable();
        sizes.dedup();
        for s in sizes {
            *holding.entry(s).or_default() += 1;
        }
    }
    let mut reaching: HashMap<u32, usize> = HashMap::new();
    for c in classes {
        let mut distinct = c.clone();
        distinct.sort_unstable();
        distinct.dedup();
        for x in distinct {
            *reaching.entry(x).or_default() += 1;
        }
    }
    type Key = (bool, usize, bool, std::cmp::Reverse<usize>, usize, usize);
    let mut best: Option<(Key, usize, i64)> = None;
    // Token ids of one row per device: the batch is 1 (data parallel over
    // as many devices as the global batch), whatever else has a leading
    // dimension (an embedding table is no batch).
    let mut unit_tokens: Option<usize> = None;
    for (i, p) in params.iter().enumerate() {
        if p.role == Role::OptimizerState {
            continue;
        }
        let Some(a) = &p.array else { continue };
        let Some(&b) = a.dims.first() else { continue };
        let integer = matches!(
            a.element_type,
            ElementType::S32
                | ElementType::S64
                | ElementType::U32
                | ElementType::S16
                | ElementType::U16
        );
        if b <= 1 {
            if integer && b == 1 && a.dims.len() >= 2 && p.role == Role::Input {
                unit_tokens.get_or_insert(i);
            }
            continue;
        }
        // Other read-only parameters holding `b` (this one holds it, as
        // its leading dimension, and is counted when read-only).
        let occurrences = holding
            .get(&b)
            .copied()
            .unwrap_or(0)
            .saturating_sub(usize::from(p.role == Role::Input));
        let class = classes.get(i).and_then(|c| c.first());
        let spreads = class.and_then(|c| spread.get(c)).copied().unwrap_or(0);
        // Other parameters reaching the class (this one reaches it).
        let reached = class.map_or(0, |c| {
            reaching.get(c).copied().unwrap_or(0).saturating_sub(1)
        });
        let updated = p.role != Role::Input;
        let key: Key = (
            !integer,
            occurrences,
            updated,
            std::cmp::Reverse(spreads),
            reached,
            i,
        );
        if best.as_ref().is_none_or(|(k, _, _)| key < *k) {
            best = Some((key, i, b));
        }
    }
    match (best, unit_tokens) {
        (Some(((false, ..), i, b)), _) => Some((i, b)),
        (_, Some(i)) => Some((i, 1)),
        (best, None) => best.map(|(_, i, b)| (i, b)),
    }
}
