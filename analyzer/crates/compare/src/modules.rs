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
use oomscope_report::{BufferCategory, ModuleReport};
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Below this similarity two equally named modules are a low-confidence pair.
const SAME_NAME_MIN_SIMILARITY: f64 = 0.3;
/// From this similarity differently named modules are the same program.
const SAME_PROGRAM_MIN_SIMILARITY: f64 = 0.6;
/// Two lone modules sharing less than this are unrelated.
const LOW_CONFIDENCE_MIN_SIMILARITY: f64 = 0.25;
/// Programs of A times programs of B up to which differently named
/// programs are compared.
const MAX_PROGRAM_COMPARISONS: usize = 4096;

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

/// What identifies a program across runs (see the module comment), over
/// all the memory spaces given: a set of hashed tokens (no string is
/// copied, so a module of millions of buffers costs one hash each).
pub fn fingerprint(spaces: &[&ModuleReport]) -> HashSet<u64> {
    let mut tokens = HashSet::new();
    let token = |parts: &[&str]| {
        let mut h = DefaultHasher::new();
        parts.hash(&mut h);
        h.finish()
    };
    let mut add = |op_name: &str, source: &str, name: &str, category: BufferCategory| {
        // XProf's merged entry of small buffers is in every module.
        if category == BufferCategory::Small {
            return;
        }
        let prim = primitive(op_name);
        if !prim.is_empty() || !source.is_empty() {
            tokens.insert(token(&["op", prim, source]));
        }
        tokens.insert(token(&["inst", instruction_stem(name)]));
    };
    for m in spaces {
        if m.buffers.is_empty() {
            for p in &m.peak_buffers {
                add(&p.op_name, &p.source, &p.name, p.category);
            }
        } else {
            for l in &m.buffers {
                add(&l.op_name, &l.source, &l.name, l.category);
            }
        }
        for i in &m.instructions {
            add("", "", i, BufferCategory::Temporary);
        }
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
pub fn similarity(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let common = small.iter().filter(|t| large.contains(t)).count();
    let union = a.len() + b.len() - common;
    if union == 0 {
        return 0.0;
    }
    common as f64 / union as f64
}

/// One pairing of a module of A (index) with one of B.
#[derive(Debug, Clone, PartialEq)]
pub struct ModulePair {
    pub a: usize,
    pub b: usize,
    pub matched_by: ModuleMatch,
    pub similarity: f64,
}

/// The analyses of one compiled program, one per memory space: same
/// input, name and program id. Indices into the report's modules.
fn programs(modules: &[ModuleReport]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, m) in modules.iter().enumerate() {
        let same = |g: &Vec<usize>| {
            let first = &modules[g[0]];
            first.name == m.name && first.program_id == m.program_id && first.input == m.input
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

fn spaces_of<'a>(modules: &'a [ModuleReport], group: &[usize]) -> Vec<&'a ModuleReport> {
    group.iter().map(|&i| &modules[i]).collect()
}

/// Pair the modules of two reports: programs first (all their memory
/// spaces together), then each memory space of a paired program with the
/// same space of its partner. Returns the pairs and the indices of the
/// modules left alone on each side.
pub fn pair_modules(
    a: &[ModuleReport],
    b: &[ModuleReport],
) -> (Vec<ModulePair>, Vec<usize>, Vec<usize>) {
    let (ga, gb) = (programs(a), programs(b));
    let fa: Vec<_> = ga.iter().map(|g| fingerprint(&spaces_of(a, g))).collect();
    let fb: Vec<_> = gb.iter().map(|g| fingerprint(&spaces_of(b, g))).collect();
    let na: Vec<_> = ga.iter().map(|g| normalized_name(&a[g[0]].name)).collect();
    let nb: Vec<_> = gb.iter().map(|g| normalized_name(&b[g[0]].name)).collect();

    // Every candidate pair of programs, best first: same name before
    // different names, then by similarity. Differently named programs are
    // compared only while that stays cheap (a profile of hundreds of
    // modules on each side pairs by name alone).
    let search_all = ga.len().saturating_mul(gb.len()) <= MAX_PROGRAM_COMPARISONS;
    let mut candidates = Vec::new();
    for i in 0..ga.len() {
        for j in 0..gb.len() {
            let same_name = na[i] == nb[j];
            if !same_name && !search_all {
                continue;
            }
            let sim = similarity(&fa[i], &fb[j]);
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
    candidates.sort_by(|x, y| {
        y.0.cmp(&x.0)
            .then(y.1.total_cmp(&x.1))
            .then((x.2, x.3).cmp(&(y.2, y.3)))
    });
    let mut used_a = vec![false; ga.len()];
    let mut used_b = vec![false; gb.len()];
    let mut program_pairs = Vec::new();
    for (_, sim, i, j, matched_by) in candidates {
        if used_a[i] || used_b[j] {
            continue;
        }
        used_a[i] = true;
        used_b[j] = true;
        program_pairs.push((i, j, matched_by, sim));
    }
    // A single program left on each side: a low-confidence pair if the
    // programs still share a good part of their ops.
    let left_a: Vec<usize> = (0..ga.len()).filter(|&i| !used_a[i]).collect();
    let left_b: Vec<usize> = (0..gb.len()).filter(|&j| !used_b[j]).collect();
    if let ([i], [j]) = (left_a.as_slice(), left_b.as_slice()) {
        let sim = similarity(&fa[*i], &fb[*j]);
        if sim >= LOW_CONFIDENCE_MIN_SIMILARITY {
            program_pairs.push((*i, *j, ModuleMatch::LowConfidence, sim));
        }
    }

    let mut paired_a = vec![false; a.len()];
    let mut paired_b = vec![false; b.len()];
    let mut pairs = Vec::new();
    for (i, j, matched_by, sim) in program_pairs {
        for &ma in &ga[i] {
            if let Some(&mb) = gb[j]
                .iter()
                .find(|&&mb| !paired_b[mb] && b[mb].memory_space == a[ma].memory_space)
            {
                paired_a[ma] = true;
                paired_b[mb] = true;
                pairs.push(ModulePair {
                    a: ma,
                    b: mb,
                    matched_by,
                    similarity: sim,
                });
            }
        }
    }
    let only_a = (0..a.len()).filter(|&i| !paired_a[i]).collect();
    let only_b = (0..b.len()).filter(|&j| !paired_b[j]).collect();
    (pairs, only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_what_runs_add() {
        assert_eq!(normalized_name("jit_train_step"), "train_step");
        assert_eq!(
            normalized_name("module_0003.jit__train_step_1.cl_42"),
            "train_step"
        );
        assert_eq!(normalized_name("pjit_f.2"), "f");
        assert_eq!(normalized_name("jit_layer2"), "layer2");
        assert_eq!(normalized_name("jit_f"), "f");
        assert_eq!(normalized_name("42"), "42");
    }

    #[test]
    fn stems_drop_numbers_and_remat_suffixes() {
        assert_eq!(
            instruction_stem("convolution_tanh_fusion.7.remat2"),
            "convolution_tanh_fusion"
        );
        assert_eq!(instruction_stem("copy-start.1{0}"), "copy-start");
    }
}
