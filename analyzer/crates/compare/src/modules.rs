//! Pairing the compiled modules of A with those of B.
//!
//! A module keeps its name across runs of the same program, up to what JAX
//! and the dump add (`jit_`, `module_0012.`, `.cl_123`, a numeric suffix for
//! a second function of the same name). The program itself is fingerprinted
//! by what survives a change of dtype, batch or remat: the primitives with
//! their source lines, the parameters' names and the instruction names
//! without their numbers. Two modules pair when their names agree and their
//! programs are alike, or when their programs are very alike whatever the
//! names; two modules left alone in a memory space pair with low confidence
//! only if they still share a good part of their program.

use crate::buffers::primitive;
use oomscope_report::compare::ModuleMatch;
use oomscope_report::ModuleReport;
use std::collections::HashSet;

/// Below this similarity two equally named modules are a low-confidence pair.
const SAME_NAME_MIN_SIMILARITY: f64 = 0.3;
/// From this similarity differently named modules are the same program.
const SAME_PROGRAM_MIN_SIMILARITY: f64 = 0.6;
/// Two lone modules sharing less than this are unrelated.
const LOW_CONFIDENCE_MIN_SIMILARITY: f64 = 0.15;

/// A module's name without what differs between runs of the same program:
/// `module_0003.jit__train_step_1.cl_42` → `train_step`.
pub fn normalized_name(name: &str) -> String {
    let mut n = name;
    if let Some(rest) = n.strip_prefix("module_") {
        if let Some((digits, tail)) = rest.split_once('.') {
            if digits.bytes().all(|c| c.is_ascii_digit()) {
                n = tail;
            }
        }
    }
    if let Some((head, tail)) = n.rsplit_once(".cl_") {
        if tail.bytes().all(|c| c.is_ascii_digit()) {
            n = head;
        }
    }
    for prefix in ["pjit_", "jit_", "xmap_", "pmap_"] {
        if let Some(rest) = n.strip_prefix(prefix) {
            n = rest;
            break;
        }
    }
    let n = n.trim_start_matches('_');
    // `train_step_1`, `train_step.2`: a numbered twin of the same function.
    let trimmed = n.trim_end_matches(|c: char| c.is_ascii_digit());
    let n = match trimmed.strip_suffix(['_', '.']) {
        Some(stem) if trimmed.len() < n.len() && !stem.is_empty() => stem,
        _ => n,
    };
    n.to_string()
}

/// What identifies a program across runs (see the module comment).
pub fn fingerprint(m: &ModuleReport) -> HashSet<String> {
    let mut tokens = HashSet::new();
    let mut add = |op_name: &str, source: &str, name: &str| {
        let prim = primitive(op_name);
        if !prim.is_empty() || !source.is_empty() {
            tokens.insert(format!("op:{prim}@{source}"));
        }
        tokens.insert(format!("inst:{}", instruction_stem(name)));
    };
    if m.buffers.is_empty() {
        for p in &m.peak_buffers {
            add(&p.op_name, &p.source, &p.name);
        }
    } else {
        for l in &m.buffers {
            add(&l.op_name, &l.source, &l.name);
        }
    }
    for i in &m.instructions {
        tokens.insert(format!("inst:{}", instruction_stem(i)));
    }
    tokens
}

/// `convolution_tanh_fusion.7.remat2{0}` → `convolution_tanh_fusion`.
fn instruction_stem(name: &str) -> &str {
    let n = name.split('{').next().unwrap_or(name);
    let n = n.split(".remat").next().unwrap_or(n);
    n.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

/// Jaccard similarity of two fingerprints; two empty ones say nothing (0).
pub fn similarity(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// One pairing of a module of A (index) with one of B.
#[derive(Debug, Clone, PartialEq)]
pub struct ModulePair {
    pub a: usize,
    pub b: usize,
    pub matched_by: ModuleMatch,
    pub similarity: f64,
}

/// Pair the modules of two reports, within the same memory space.
pub fn pair_modules(a: &[ModuleReport], b: &[ModuleReport]) -> (Vec<ModulePair>, Vec<usize>, Vec<usize>) {
    let fa: Vec<_> = a.iter().map(fingerprint).collect();
    let fb: Vec<_> = b.iter().map(fingerprint).collect();
    let na: Vec<_> = a.iter().map(|m| normalized_name(&m.name)).collect();
    let nb: Vec<_> = b.iter().map(|m| normalized_name(&m.name)).collect();

    // Every candidate pair, best first: same name before different names,
    // then by similarity.
    let mut candidates = Vec::new();
    for (i, ma) in a.iter().enumerate() {
        for (j, mb) in b.iter().enumerate() {
            if ma.memory_space != mb.memory_space {
                continue;
            }
            let sim = similarity(&fa[i], &fb[j]);
            let same_name = na[i] == nb[j];
            // Fingerprints empty on both sides (a dump without metadata): the name decides.
            let blind = fa[i].is_empty() && fb[j].is_empty();
            let matched_by = if same_name && (sim >= SAME_NAME_MIN_SIMILARITY || blind) {
                ModuleMatch::SameName
            } else if sim >= SAME_PROGRAM_MIN_SIMILARITY {
                ModuleMatch::SameProgram
            } else {
                continue;
            };
            candidates.push((same_name, sim, i, j, matched_by));
        }
    }
    candidates.sort_by(|x, y| y.0.cmp(&x.0).then(y.1.total_cmp(&x.1)).then((x.2, x.3).cmp(&(y.2, y.3))));
    let mut used_a = vec![false; a.len()];
    let mut used_b = vec![false; b.len()];
    let mut pairs = Vec::new();
    for (_, sim, i, j, matched_by) in candidates {
        if used_a[i] || used_b[j] {
            continue;
        }
        used_a[i] = true;
        used_b[j] = true;
        pairs.push(ModulePair { a: i, b: j, matched_by, similarity: sim });
    }

    // A single module left on each side of a memory space: a low-confidence
    // pair if the programs still share something.
    let spaces: HashSet<i64> = a.iter().map(|m| m.memory_space).collect();
    for space in spaces {
        let left_a: Vec<usize> = (0..a.len()).filter(|&i| !used_a[i] && a[i].memory_space == space).collect();
        let left_b: Vec<usize> = (0..b.len()).filter(|&j| !used_b[j] && b[j].memory_space == space).collect();
        if let ([i], [j]) = (left_a.as_slice(), left_b.as_slice()) {
            let sim = similarity(&fa[*i], &fb[*j]);
            if sim >= LOW_CONFIDENCE_MIN_SIMILARITY {
                used_a[*i] = true;
                used_b[*j] = true;
                pairs.push(ModulePair { a: *i, b: *j, matched_by: ModuleMatch::LowConfidence, similarity: sim });
            }
        }
    }
    let only_a = (0..a.len()).filter(|&i| !used_a[i]).collect();
    let only_b = (0..b.len()).filter(|&j| !used_b[j]).collect();
    (pairs, only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_what_runs_add() {
        assert_eq!(normalized_name("jit_train_step"), "train_step");
        assert_eq!(normalized_name("module_0003.jit__train_step_1.cl_42"), "train_step");
        assert_eq!(normalized_name("pjit_f.2"), "f");
        assert_eq!(normalized_name("jit_layer2"), "layer2");
        assert_eq!(normalized_name("jit_f"), "f");
        assert_eq!(normalized_name("42"), "42");
    }

    #[test]
    fn stems_drop_numbers_and_remat_suffixes() {
        assert_eq!(instruction_stem("convolution_tanh_fusion.7.remat2"), "convolution_tanh_fusion");
        assert_eq!(instruction_stem("copy-start.1{0}"), "copy-start");
    }
}
