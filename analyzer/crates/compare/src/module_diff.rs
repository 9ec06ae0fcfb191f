//! One module on both sides: the peak difference cut into named changes.
//!
//! The peak of a module is the sum of the buffers listed at it (XProf lists
//! them all, with the small ones merged into one entry), so the buffer
//! changes sum to the peak difference; what they do not cover (a reader
//! that lists only some buffers) is the explicit `other` change.

use crate::buffers::pair_peak_buffers;
use crate::causes::{attribute, Attributed, PairChange};
use crate::modules::ModulePair;
use oomscope_report::compare::{Change, ChangeKind, ModuleComparison, ModuleMatch};
use oomscope_report::{BufferCategory, ModuleReport};

/// Buffers listed per module (largest change first); `changes` counts all.
const MAX_LISTED_BUFFERS: usize = 50;

pub fn compare_module(a: &ModuleReport, b: &ModuleReport, pair: &ModulePair) -> ModuleComparison {
    let pairing = pair_peak_buffers(&a.peak_buffers, &b.peak_buffers);
    let name_causes = pair.matched_by != ModuleMatch::LowConfidence;
    let mut attributed = attribute(a, b, &pairing, name_causes);
    attributed.sort_by(|x, y| {
        y.change
            .difference_bytes
            .unsigned_abs()
            .cmp(&x.change.difference_bytes.unsigned_abs())
            .then_with(|| x.change.name_a.cmp(&y.change.name_a))
            .then_with(|| x.change.name_b.cmp(&y.change.name_b))
    });

    let difference_bytes = signed_difference(a.peak_bytes, b.peak_bytes);
    let mut changes = group_changes(&attributed);
    let explained_bytes = saturating_sum(changes.iter().map(|c| c.bytes));
    let residual = difference_bytes.saturating_sub(explained_bytes);
    if residual != 0 {
        changes.push(Change {
            kind: ChangeKind::Other,
            bytes: residual,
            buffers: 0,
            text: format!(
                "{} not attributed to a buffer listed at the peak",
                signed(residual)
            ),
        });
    }
    let summary = summarize(&changes, difference_bytes);

    ModuleComparison {
        name: a.name.clone(),
        module_a: a.display_name(),
        module_b: b.display_name(),
        memory_space: a.memory_space,
        matched_by: pair.matched_by,
        similarity: (pair.similarity * 1000.0).round() / 1000.0,
        peak_kind: if a.peak_kind == b.peak_kind {
            a.peak_kind.to_string()
        } else {
            format!("{} / {}", a.peak_kind, b.peak_kind)
        },
        peak_bytes_a: a.peak_bytes,
        peak_bytes_b: b.peak_bytes,
        difference_bytes,
        peak_padding_bytes_a: a.peak_bytes.saturating_sub(a.peak_unpadded_bytes),
        peak_padding_bytes_b: b.peak_bytes.saturating_sub(b.peak_unpadded_bytes),
        changes,
        explained_bytes,
        buffers: attributed
            .into_iter()
            .take(MAX_LISTED_BUFFERS)
            .map(|c| c.change)
            .collect(),
        summary,
    }
}

pub fn signed_difference(a: u64, b: u64) -> i64 {
    (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Byte quantities from hostile inputs can be anything: sums saturate
/// rather than overflow.
fn saturating_sum(values: impl Iterator<Item = i64>) -> i64 {
    values.fold(0i64, |acc, v| acc.saturating_add(v))
}

/// `+1.00 GiB`, `-512.00 MiB`.
pub use oomscope_report::units::format_byte_difference as signed;

/// One change per kind, largest first, each in words.
fn group_changes(attributed: &[Attributed]) -> Vec<Change> {
    let mut kinds: Vec<ChangeKind> = attributed.iter().map(|c| c.change.kind).collect();
    kinds.sort();
    kinds.dedup();
    let mut changes: Vec<Change> = kinds
        .into_iter()
        .map(|kind| {
            let members: Vec<&Attributed> = attributed
                .iter()
                .filter(|c| c.change.kind == kind)
                .collect();
            let bytes = saturating_sum(members.iter().map(|c| c.change.difference_bytes));
            Change {
                kind,
                bytes,
                buffers: members.len() as u64,
                text: describe(kind, &members, bytes),
            }
        })
        .collect();
    changes.sort_by(|x, y| {
        y.bytes
            .unsigned_abs()
            .cmp(&x.bytes.unsigned_abs())
            .then(x.kind.cmp(&y.kind))
    });
    changes
}

/// "62 buffers (48 temporaries, 8 parameters, 6 outputs)", "1 temporary".
fn count_by_role(members: &[&Attributed]) -> String {
    let n = members.len();
    let mut roles: Vec<(BufferCategory, usize)> = Vec::new();
    for c in members {
        match roles.iter_mut().find(|(r, _)| *r == c.change.category) {
            Some((_, k)) => *k += 1,
            None => roles.push((c.change.category, 1)),
        }
    }
    if let [(role, _)] = roles.as_slice() {
        return format!("{n} {}", role_word(*role, n));
    }
    roles.sort_by_key(|r| std::cmp::Reverse(r.1));
    let parts: Vec<String> = roles
        .iter()
        .map(|(r, k)| format!("{k} {}", role_word(*r, *k)))
        .collect();
    format!("{n} buffers ({})", parts.join(", "))
}

fn role_word(role: BufferCategory, n: usize) -> &'static str {
    let (one, many) = match role {
        BufferCategory::Parameter => ("parameter", "parameters"),
        BufferCategory::Output => ("output", "outputs"),
        BufferCategory::Temporary => ("temporary", "temporaries"),
        BufferCategory::ThreadLocal => ("thread-local buffer", "thread-local buffers"),
        BufferCategory::Constant => ("constant", "constants"),
        BufferCategory::Small => ("entry of small buffers", "entries of small buffers"),
    };
    if n == 1 {
        one
    } else {
        many
    }
}

fn describe(kind: ChangeKind, members: &[&Attributed], bytes: i64) -> String {
    let who = count_by_role(members);
    let at_peak = format!("{} at the peak", signed(bytes));
    match kind {
        ChangeKind::Dtype => {
            let mut transitions: Vec<(String, String)> = members
                .iter()
                .filter_map(|c| match &c.detail {
                    Some(PairChange::Dtype { from, to }) => Some((from.clone(), to.clone())),
                    _ => None,
                })
                .collect();
            transitions.sort();
            transitions.dedup();
            let verb = ratio_verb(members);
            match transitions.as_slice() {
                [(from, to)] => format!("{from}→{to} {verb} {who}: {at_peak}"),
                _ => {
                    let list: Vec<String> = transitions.iter().map(|(f, t)| format!("{f}→{t}")).collect();
                    format!("dtype changes ({}) {verb} {who}: {at_peak}", list.join(", "))
                }
            }
        }
        ChangeKind::Donation => {
            if bytes <= 0 {
                format!("donation aliased {who} to donated parameters: {at_peak}")
            } else {
                format!("{who} no longer alias donated parameters (donation lost): {at_peak}")
            }
        }
        ChangeKind::Remat => {
            let recomputed = members.iter().filter(|c| crate::buffers::is_recomputation(if c.change.name_a.is_empty() { &c.change.name_b } else { &c.change.name_a }, &c.change.op_name)).count();
            let saved = members.len() - recomputed;
            if bytes <= 0 {
                format!("rematerialization dropped {saved} saved activations and recomputes {recomputed} buffers instead: {at_peak}")
            } else {
                format!("less rematerialization: {saved} activations kept instead of {recomputed} recomputed buffers: {at_peak}")
            }
        }
        ChangeKind::Batch => match scale_of(members) {
            Some((from, to)) => format!("batch {from}→{to} scaled {who}: {at_peak}"),
            None => format!("a batch dimension scaled {who}: {at_peak}"),
        },
        ChangeKind::Sharding => match scale_of(members) {
            Some((from, to)) if from > to && from % to == 0 => format!("sharding divided per-device shapes by {} in {who}: {at_peak}", from / to),
            Some((from, to)) if to > from && to % from == 0 => format!("less sharding multiplied per-device shapes by {} in {who}: {at_peak}", to / from),
            _ => format!("sharding changed per-device shapes of {who}: {at_peak}"),
        },
        ChangeKind::ModelSize => match scale_of(members) {
            Some((from, to)) => format!("the model's weights scaled along one dimension ({from}→{to}: stacked layers or width) in {who}: {at_peak}"),
            None => format!("the model's weights scaled in {who}: {at_peak}"),
        },
        ChangeKind::Padding => format!("padding changed in {who}: {at_peak}"),
        ChangeKind::Appeared => format!("{who} appeared at the peak: {at_peak}"),
        ChangeKind::Disappeared => format!("{who} no longer at the peak: {at_peak}"),
        ChangeKind::Grew => format!("{who} grew: {at_peak}"),
        ChangeKind::Shrank => format!("{who} shrank: {at_peak}"),
        ChangeKind::Other => format!("{} not attributed to a buffer listed at the peak", signed(bytes)),
    }
}

/// "halved" when every buffer is half its size, "doubled", else "resized".
fn ratio_verb(members: &[&Attributed]) -> &'static str {
    let twice = |x: u64, y: u64| x.checked_mul(2) == Some(y);
    if members
        .iter()
        .all(|c| twice(c.change.bytes_b, c.change.bytes_a))
    {
        "halved"
    } else if members
        .iter()
        .all(|c| twice(c.change.bytes_a, c.change.bytes_b))
    {
        "doubled"
    } else if members.iter().all(|c| c.change.bytes_b < c.change.bytes_a) {
        "shrank"
    } else if members.iter().all(|c| c.change.bytes_b > c.change.bytes_a) {
        "grew"
    } else {
        "resized"
    }
}

/// The dimension change most bytes went with.
fn scale_of(members: &[&Attributed]) -> Option<(i64, i64)> {
    let mut best: Option<((i64, i64), u64)> = None;
    let mut seen: Vec<((i64, i64), u64)> = Vec::new();
    for c in members {
        if let Some(PairChange::Scaled { from, to }) = c.detail {
            let bytes = c.change.difference_bytes.unsigned_abs();
            match seen.iter_mut().find(|(k, _)| *k == (from, to)) {
                Some((_, b)) => *b = b.saturating_add(bytes),
                None => seen.push(((from, to), bytes)),
            }
        }
    }
    for s in seen {
        if best.is_none_or(|b| s.1 > b.1) {
            best = Some(s);
        }
    }
    best.map(|(k, _)| k)
}

/// The changes in one sentence.
fn summarize(changes: &[Change], difference: i64) -> String {
    if difference == 0 && changes.is_empty() {
        return "same peak, same buffers".into();
    }
    let parts: Vec<&str> = changes
        .iter()
        .filter(|c| c.bytes != 0)
        .map(|c| c.text.as_str())
        .collect();
    format!("peak {}: {}", signed(difference), parts.join("; "))
}
