//! Pairing the buffers live at A's peak with those live at B's peak.
//!
//! Instruction names are the surest key within one program, but a change
//! of dtype, remat or batch renumbers fusions; the op name's primitive and
//! source line survive that, and the dimensions survive a renaming. Three
//! passes, surest first, each over what the previous left:
//! 1. same instruction name (XLA's `.rematN` suffix set aside), primitive,
//!    source line and role;
//! 2. same primitive, source line and role (largest with largest);
//! 3. same role and dimensions (element type aside).
//!
//! Recomputed buffers (XLA's `.remat` clones, JAX's `rematted_computation`)
//! only pair with recomputed buffers: a saved activation replaced by its
//! recomputation is a remat change, not a buffer that stayed.

use oomscope_layout::{parse_shape, ArrayShape, Shape};
use oomscope_report::compare::BufferMatch;
use oomscope_report::{BufferCategory, PeakBuffer};
use std::collections::HashMap;
use std::hash::Hash;

/// Which buffers of A's peak pair with which of B's.
#[derive(Debug, Default)]
pub struct BufferPairing {
    /// `(index in A, index in B, how)`.
    pub pairs: Vec<(usize, usize, BufferMatch)>,
    pub only_a: Vec<usize>,
    pub only_b: Vec<usize>,
}

/// `fusion.5.remat2` → `fusion.5`: XLA names a rematerialized clone after
/// its original.
pub fn base_instruction_name(name: &str) -> &str {
    match name.find(".remat") {
        Some(i) => &name[..i],
        None => name,
    }
}

/// The primitive an op name ends with: `jit(f)/transpose(jvp())/dot_general`
/// → `dot_general`. Transformations around it (`jvp`, `checkpoint`) change
/// with remat; the primitive does not.
pub fn primitive(op_name: &str) -> &str {
    op_name.rsplit('/').next().unwrap_or(op_name)
}

/// A buffer that recomputes a value instead of keeping it.
pub fn is_recomputation(name: &str, op_name: &str) -> bool {
    name.contains(".remat") || op_name.contains("rematted_computation")
}

/// Any sign of rematerialization: a recomputed buffer, or code under
/// `jax.checkpoint` / `jax.remat`.
pub fn has_remat_marker(name: &str, op_name: &str) -> bool {
    is_recomputation(name, op_name) || op_name.contains("checkpoint") || op_name.contains("remat")
}

/// The array a shape string describes, when it is one.
pub fn array_of(shape: &str) -> Option<ArrayShape> {
    match parse_shape(shape).ok()? {
        Shape::Array(a) => Some(a),
        _ => None,
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct NameKey<'a> {
    name: &'a str,
    primitive: &'a str,
    source: &'a str,
    category: BufferCategory,
    recomputed: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct MetadataKey<'a> {
    primitive: &'a str,
    source: &'a str,
    category: BufferCategory,
    recomputed: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct DimsKey {
    category: BufferCategory,
    dims: Vec<i64>,
    recomputed: bool,
}

/// Pair the peak buffers of A and B.
pub fn pair_peak_buffers(a: &[PeakBuffer], b: &[PeakBuffer]) -> BufferPairing {
    let mut free_a = vec![true; a.len()];
    let mut free_b = vec![true; b.len()];
    let mut pairs = Vec::new();

    pass(
        a,
        b,
        &mut free_a,
        &mut free_b,
        name_key,
        BufferMatch::Name,
        &mut pairs,
    );
    pass(
        a,
        b,
        &mut free_a,
        &mut free_b,
        metadata_key,
        BufferMatch::Metadata,
        &mut pairs,
    );
    pass(
        a,
        b,
        &mut free_a,
        &mut free_b,
        dims_key,
        BufferMatch::Shape,
        &mut pairs,
    );

    BufferPairing {
        pairs,
        only_a: (0..a.len()).filter(|&i| free_a[i]).collect(),
        only_b: (0..b.len()).filter(|&i| free_b[i]).collect(),
    }
}

fn name_key(p: &PeakBuffer) -> Option<NameKey<'_>> {
    Some(NameKey {
        name: base_instruction_name(&p.name),
        primitive: primitive(&p.op_name),
        source: &p.source,
        category: p.category,
        recomputed: is_recomputation(&p.name, &p.op_name),
    })
}

fn metadata_key(p: &PeakBuffer) -> Option<MetadataKey<'_>> {
    let prim = primitive(&p.op_name);
    // An op name and source line both missing say nothing about identity.
    if prim.is_empty() && p.source.is_empty() {
        return None;
    }
    Some(MetadataKey {
        primitive: prim,
        source: &p.source,
        category: p.category,
        recomputed: is_recomputation(&p.name, &p.op_name),
    })
}

fn dims_key(p: &PeakBuffer) -> Option<DimsKey> {
    let array = array_of(&p.shape)?;
    Some(DimsKey {
        category: p.category,
        dims: array.dims,
        recomputed: is_recomputation(&p.name, &p.op_name),
    })
}

/// One pairing pass: the still-unpaired buffers of each side grouped by
/// `key`; within a group, largest pairs with largest (ties by name), so
/// the pairing does not depend on the order buffers are listed in.
fn pass<'a, K: Eq + Hash>(
    a: &'a [PeakBuffer],
    b: &'a [PeakBuffer],
    free_a: &mut [bool],
    free_b: &mut [bool],
    key: impl Fn(&'a PeakBuffer) -> Option<K>,
    how: BufferMatch,
    pairs: &mut Vec<(usize, usize, BufferMatch)>,
) {
    let mut groups_b: HashMap<K, Vec<usize>> = HashMap::new();
    for (j, buf) in b.iter().enumerate().filter(|(j, _)| free_b[*j]) {
        if let Some(k) = key(buf) {
            groups_b.entry(k).or_default().push(j);
        }
    }
    if groups_b.is_empty() {
        return;
    }
    // A's groups in the order their first member is listed (deterministic).
    let mut order: Vec<K> = Vec::new();
    let mut groups_a: HashMap<K, Vec<usize>> = HashMap::new();
    for (i, buf) in a.iter().enumerate().filter(|(i, _)| free_a[*i]) {
        let Some(k) = key(buf) else { continue };
        if !groups_b.contains_key(&k) {
            continue;
        }
        match groups_a.get_mut(&k) {
            Some(v) => v.push(i),
            None => {
                groups_a.insert(k, vec![i]);
            }
        }
    }
    for (i, buf) in a.iter().enumerate().filter(|(i, _)| free_a[*i]) {
        if let Some(k) = key(buf) {
            if groups_a.get(&k).is_some_and(|v| v.first() == Some(&i)) {
                order.push(k);
            }
        }
    }
    let by_size = |bufs: &'a [PeakBuffer]| {
        move |x: &usize, y: &usize| {
            bufs[*y]
                .size_bytes
                .cmp(&bufs[*x].size_bytes)
                .then_with(|| bufs[*x].name.cmp(&bufs[*y].name))
        }
    };
    for k in order {
        let (Some(mut ia), Some(mut ib)) = (groups_a.remove(&k), groups_b.remove(&k)) else {
            continue;
        };
        ia.sort_by(by_size(a));
        ib.sort_by(by_size(b));
        for (&i, &j) in ia.iter().zip(ib.iter()) {
            free_a[i] = false;
            free_b[j] = false;
            pairs.push((i, j, how));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(
        name: &str,
        shape: &str,
        size: u64,
        op: &str,
        src: &str,
        category: BufferCategory,
    ) -> PeakBuffer {
        PeakBuffer {
            name: name.into(),
            shape: shape.into(),
            size_bytes: size,
            unpadded_bytes: size,
            op_name: op.into(),
            source: src.into(),
            category,
            ..PeakBuffer::default()
        }
    }

    #[test]
    fn names_then_metadata_then_dimensions() {
        use BufferCategory::*;
        let a = vec![
            buf(
                "fusion.3",
                "f32[8,128]",
                4096,
                "jit(f)/dot_general",
                "a.py:3",
                Temporary,
            ),
            buf(
                "fusion.2",
                "f32[8,128]",
                4096,
                "jit(f)/dot_general",
                "a.py:4",
                Temporary,
            ),
            buf("copy.1", "f32[16,128]", 8192, "", "", Temporary),
        ];
        let b = vec![
            buf("copy.9", "bf16[16,128]", 4096, "", "", Temporary),
            buf(
                "fusion.8",
                "bf16[8,128]",
                2048,
                "jit(g)/jvp()/dot_general",
                "a.py:4",
                Temporary,
            ),
            buf(
                "fusion.3",
                "bf16[8,128]",
                2048,
                "jit(g)/dot_general",
                "a.py:3",
                Temporary,
            ),
        ];
        let p = pair_peak_buffers(&a, &b);
        assert_eq!(
            p.pairs,
            vec![
                (0, 2, BufferMatch::Name),
                (1, 1, BufferMatch::Metadata),
                (2, 0, BufferMatch::Shape)
            ]
        );
        assert!(p.only_a.is_empty() && p.only_b.is_empty());
    }

    #[test]
    fn a_recomputation_does_not_pair_with_a_saved_activation() {
        use BufferCategory::*;
        let a = vec![buf(
            "fusion.1",
            "f32[8,128]",
            4096,
            "jit(f)/jvp()/tanh",
            "a.py:3",
            Temporary,
        )];
        let b = vec![buf(
            "fusion.7",
            "f32[8,128]",
            4096,
            "jit(f)/checkpoint/rematted_computation/tanh",
            "a.py:3",
            Temporary,
        )];
        let p = pair_peak_buffers(&a, &b);
        assert!(p.pairs.is_empty());
        assert_eq!((p.only_a, p.only_b), (vec![0], vec![0]));
        // XLA's own clone keeps its original's name plus `.rematN`.
        assert_eq!(
            base_instruction_name("multiply_add_fusion.5.remat2"),
            "multiply_add_fusion.5"
        );
    }
}
