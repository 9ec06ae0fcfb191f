//! Sizes as printed, one parsed occurrence of an OOM message ([`Raw`]), and
//! the merging of occurrences into distinct [`OomEvent`]s.
//!
//! The same error is often printed several times: by each rank, by glog and
//! again by the Python exception, in an escaped copy inside a proto dump, or
//! restated in another form (XLA's "Out of memory while trying to allocate"
//! after the BFC allocator dump; the E1000 "HLO temporaries" summary after the
//! compiler's report). Occurrences whose key numbers agree are merged: exact
//! byte counts win over rounded ones, missing details are filled in.
//! `repeats` counts how often the error occurs: the largest number of
//! un-escaped occurrences of one message form printed the same way (by a
//! logger, or plainly as an exception), so that the usual pair "glog line +
//! raised exception" counts once while N ranks printing it count N.

use oomscope_report::{
    units, EarlyAbort, GpuPlatform, MemorySpace, OomEvent, OomKind, ScopedInstruction,
    TopAllocation, TpuRuntimeFailure,
};
use std::collections::BTreeMap;

/// A byte quantity as printed: exact, or rounded to `step` bytes (the last
/// printed digit: `17.67G` has a step of 0.01 × 2^30).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub bytes: u64,
    pub exact: bool,
    pub step: u64,
}

impl Size {
    pub fn exact(bytes: u64) -> Self {
        Size {
            bytes,
            exact: true,
            step: 0,
        }
    }
}

/// Parses `25.64G`, `512.00M`, `3.47E`, `0B`, `17.69GiB`, `36.00 MiB`,
/// `0 bytes`, `3206250496B`. A unit is required unless `bare_is_bytes`.
pub fn parse_size(token: &str, bare_is_bytes: bool) -> Option<Size> {
    let t = token.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty()
        || num.starts_with('.')
        || num.ends_with('.')
        || (unit.is_empty() && !bare_is_bytes)
    {
        return None;
    }
    let mult = units::binary_multiplier(unit)?;
    if mult == 1 && !num.contains('.') {
        return num.parse::<u64>().ok().map(Size::exact);
    }
    let value: f64 = num.parse().ok()?;
    let decimals = num.find('.').map_or(0, |dot| num.len() - dot - 1) as i32;
    let step = (mult as f64 / 10f64.powi(decimals)).ceil() as u64;
    Some(Size {
        bytes: units::scale(value, mult),
        exact: false,
        step: step.max(1),
    })
}

// Message forms that merge by rules of their own (see `same_error`).

/// The form of a part of a compiler report pasted without its start.
pub const REPORT_PART: &str = "tpu_report_part";

/// The form of a compile failure that names its memory space and no number.
pub const SPACE_ONLY: &str = "tpu_space_only";
/// E1001's form (one instruction's stack); printed without numbers by
/// older libtpu, when copies of it can only be told apart by nothing.
pub const SCOPED_STACK: &str = "tpu_scoped_stack";

/// The numeric fields of [`OomEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Used,
    Limit,
    Exceeded,
    Requested,
    Free,
    Reserved,
    TotalCapacity,
    Allocated,
    Arguments,
    Output,
    Program,
    HloTemp,
    HloTempUnpadded,
    HloTempPadded,
    Fragmentation,
    TensorCore,
    SparseCore,
    ReservedUnallocated,
    PrivatePools,
}

const FIELD_COUNT: usize = 19;

impl Field {
    /// The field's name in the JSON report (`OomEvent`).
    pub fn json_name(self) -> &'static str {
        match self {
            Field::Used => "used_bytes",
            Field::Limit => "limit_bytes",
            Field::Exceeded => "exceeded_bytes",
            Field::Requested => "requested_bytes",
            Field::Free => "free_bytes",
            Field::Reserved => "reserved_bytes",
            Field::TotalCapacity => "total_capacity_bytes",
            Field::Allocated => "allocated_bytes",
            Field::Arguments => "arguments_bytes",
            Field::Output => "output_bytes",
            Field::Program => "program_bytes",
            Field::HloTemp => "hlo_temp_bytes",
            Field::HloTempUnpadded => "hlo_temp_unpadded_bytes",
            Field::HloTempPadded => "hlo_temp_padded_bytes",
            Field::Fragmentation => "fragmentation_bytes",
            Field::TensorCore => "tensorcore_bytes",
            Field::SparseCore => "sparsecore_bytes",
            Field::ReservedUnallocated => "reserved_unallocated_bytes",
            Field::PrivatePools => "private_pools_bytes",
        }
    }
}

/// A number a message's grammar says it prints: a field, or a named extra.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    Field(Field),
    Extra(&'static str),
}

/// Fields that identify an error: two occurrences are the same error only if
/// they agree on every key field both give.
const KEY_FIELDS: [Field; 9] = [
    Field::Used,
    Field::Limit,
    Field::Exceeded,
    Field::Requested,
    Field::Free,
    Field::TotalCapacity,
    Field::Allocated,
    Field::TensorCore,
    Field::SparseCore,
];

/// One occurrence of an OOM message, as parsed.
#[derive(Debug, Clone)]
pub struct Raw {
    pub kind: OomKind,
    pub space: MemorySpace,
    pub line: u32,
    pub message: String,
    /// Which message form this is (e.g. `tpu_used_of`); repeats count per form.
    pub form: &'static str,
    /// Found inside an escaped copy (`\n` written as two characters).
    pub escaped: bool,
    /// The line carried a logger header (glog, timestamp).
    pub logged: bool,
    fields: [Option<Size>; FIELD_COUNT],
    pub extra: BTreeMap<String, Size>,
    pub top: Vec<TopAllocation>,
    pub top_arguments: Vec<TopAllocation>,
    /// Numbers the message's form prints whenever it is complete; those not
    /// read are reported as missing (the text was cut).
    pub expected: Vec<Expected>,
    /// Ranks whose copies of the message were merged here (`[rank3]:`).
    pub ranks: Vec<u32>,
    /// When each rank printed its copy, where the line has a logger's time.
    pub rank_times: Vec<oomscope_report::RankTime>,
    /// What the message's form says, as the event's typed fields (the
    /// diagnosis matches on them, never on the text): they travel with the
    /// message (`tpu_runtime_failure`, `gpu_platform`) or with the listed
    /// instruction (`scoped_instruction`) when occurrences merge.
    pub tpu_runtime_failure: Option<TpuRuntimeFailure>,
    pub gpu_platform: Option<GpuPlatform>,
    pub scoped_instruction: Option<ScopedInstruction>,
    /// The compiler's early abort (`Requires X, has Y available`), typed
    /// from its message: it travels with the message too.
    pub early_abort: Option<EarlyAbort>,
}

impl Raw {
    pub fn new(kind: OomKind, space: MemorySpace, form: &'static str, message: &str) -> Self {
        Raw {
            kind,
            space,
            line: 0,
            message: truncate(message, 600),
            form,
            escaped: false,
            logged: false,
            fields: [None; FIELD_COUNT],
            extra: BTreeMap::new(),
            top: Vec::new(),
            top_arguments: Vec::new(),
            expected: Vec::new(),
            ranks: Vec::new(),
            rank_times: Vec::new(),
            tpu_runtime_failure: None,
            gpu_platform: None,
            scoped_instruction: None,
            early_abort: None,
        }
    }

    /// How many numbers were read (fields and extras).
    pub fn count(&self) -> usize {
        self.fields.iter().flatten().count() + self.extra.len()
    }

    /// Declares numbers the message prints when complete.
    pub fn expect(&mut self, numbers: &[Expected]) {
        for n in numbers {
            if !self.expected.contains(n) {
                self.expected.push(*n);
            }
        }
    }

    /// The expected numbers not read, by JSON name (extras as `extra.<key>`).
    fn missing(&self) -> Vec<String> {
        self.expected
            .iter()
            .filter_map(|e| match e {
                Expected::Field(f) => self.get(*f).is_none().then(|| f.json_name().to_string()),
                Expected::Extra(k) => (!self.extra.contains_key(*k)).then(|| format!("extra.{k}")),
            })
            .collect()
    }

    pub fn get(&self, f: Field) -> Option<Size> {
        self.fields[f as usize]
    }

    /// Sets a field unless it already holds a value at least as exact.
    pub fn set(&mut self, f: Field, v: Option<Size>) {
        let Some(v) = v else { return };
        let slot = &mut self.fields[f as usize];
        match slot {
            Some(old) if old.exact || !v.exact => {}
            _ => *slot = Some(v),
        }
    }

    /// Sets a named extra number, with the same exactness rule.
    pub fn set_extra(&mut self, key: &str, v: Option<Size>) {
        let Some(v) = v else { return };
        if self.extra.len() >= 256 && !self.extra.contains_key(key) {
            return;
        }
        match self.extra.get(key) {
            Some(old) if old.exact || !v.exact => {}
            _ => {
                self.extra.insert(key.to_string(), v);
            }
        }
    }
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let cut = crate::lines::floor_boundary(s, max);
    format!("{}…", &s[..cut])
}

/// Groups of kinds that can describe the same error.
fn family(kind: OomKind) -> u8 {
    match kind {
        OomKind::TpuCompileHbm | OomKind::TpuCompileOtherSpace | OomKind::TorchXla => 0,
        OomKind::TpuSparsecore => 1,
        OomKind::TpuScopedVmem => 5,
        OomKind::TpuRuntime => 2,
        OomKind::XlaGpu => 3,
        OomKind::TorchCuda => 4,
    }
}

/// Equal up to the last printed digit of either value (rounded or truncated).
fn close(a: Size, b: Size) -> bool {
    a.bytes.abs_diff(b.bytes) <= a.step.saturating_add(b.step)
}

/// One distinct error being accumulated, with its un-escaped occurrences
/// counted per (message form, printed by a logger).
struct Merged {
    raw: Raw,
    occurrences: Vec<(&'static str, bool, u32)>,
}

impl Merged {
    fn count(&mut self, form: &'static str, logged: bool, escaped: bool) {
        if escaped {
            return;
        }
        match self
            .occurrences
            .iter_mut()
            .find(|(f, l, _)| *f == form && *l == logged)
        {
            Some((_, _, n)) => *n = n.saturating_add(1),
            None => self.occurrences.push((form, logged, 1)),
        }
    }

    fn repeats(&self) -> u32 {
        self.occurrences.iter().map(|o| o.2).max().unwrap_or(1)
    }
}

/// What identifies a compiler report printed without its headline (`Total
/// hbm usage >= X:` first), which has none of the key fields: its total and
/// the figures of its first block.
const REPORT_FIELDS: [Field; 4] = [
    Field::Reserved,
    Field::Program,
    Field::Arguments,
    Field::Output,
];
const REPORT_EXTRA: &str = "total_usage_bytes";

fn same_error(a: &Raw, b: &Raw) -> bool {
    if family(a.kind) != family(b.kind) || a.space != b.space {
        return false;
    }
    let mut shared = 0;
    for f in KEY_FIELDS {
        if let (Some(x), Some(y)) = (a.get(f), b.get(f)) {
            if !close(x, y) {
                return false;
            }
            shared += 1;
        }
    }
    shared > 0
        || (has_no_key(a) && has_no_key(b) && same_report(a, b))
        || (b.form == REPORT_PART && has_no_key(b) && report_agrees(a, b))
        || (a.form == REPORT_PART && has_no_key(a) && report_agrees(b, a))
        || (a.form == SPACE_ONLY && b.form == SPACE_ONLY)
        || (a.form == SCOPED_STACK && b.form == SCOPED_STACK && has_no_key(a) && has_no_key(b))
}

fn has_no_key(r: &Raw) -> bool {
    KEY_FIELDS.iter().all(|f| r.get(*f).is_none())
}

/// Two headless reports (each rank prints its own copy) are one error when
/// they state the same total and agree on every figure of its block both
/// state.
fn same_report(a: &Raw, b: &Raw) -> bool {
    let (Some(x), Some(y)) = (a.extra.get(REPORT_EXTRA), b.extra.get(REPORT_EXTRA)) else {
        return false;
    };
    close(*x, *y)
        && REPORT_FIELDS.iter().all(|f| match (a.get(*f), b.get(*f)) {
            (Some(x), Some(y)) => close(x, y),
            _ => true,
        })
}

/// Whether a report's part pasted without its start (`b`) restates the
/// error `a`: every figure of its block both state agrees, and it states
/// one.
fn report_agrees(a: &Raw, b: &Raw) -> bool {
    let mut shared = 0;
    for f in REPORT_FIELDS.iter().chain(&[Field::HloTemp]) {
        if let (Some(x), Some(y)) = (a.get(*f), b.get(*f)) {
            if !close(x, y) {
                return false;
            }
            shared += 1;
        }
    }
    shared > 0
}

/// Ranks listed per event: more is a hostile input, not a job.
const MAX_RANKS: usize = 65_536;

fn absorb(into: &mut Raw, from: Raw) {
    // A part of the report logged before its message (old libtpu logs
    // `Program hbm requirement` first): the message names the error, and
    // the longer listing of the two is kept.
    let part_first = into.form == REPORT_PART && from.form != REPORT_PART;
    for (i, v) in from.fields.iter().enumerate() {
        if let Some(v) = v {
            let slot = &mut into.fields[i];
            match slot {
                Some(old) if old.exact || !v.exact => {}
                _ => *slot = Some(*v),
            }
        }
    }
    for (k, v) in from.extra {
        into.set_extra(&k, Some(v));
    }
    if into.top.is_empty() || (part_first && from.top.len() > into.top.len()) {
        into.top = from.top;
        into.scoped_instruction = from.scoped_instruction;
    }
    if into.top_arguments.is_empty()
        || (part_first && from.top_arguments.len() > into.top_arguments.len())
    {
        into.top_arguments = from.top_arguments;
    }
    for r in from.ranks {
        if into.ranks.len() < MAX_RANKS && !into.ranks.contains(&r) {
            into.ranks.push(r);
        }
    }
    // A rank's earliest copy is when it failed.
    for t in from.rank_times {
        match into.rank_times.iter().position(|o| o.rank == t.rank) {
            Some(i) if t.earlier_than(&into.rank_times[i]) => into.rank_times[i] = t,
            Some(_) => {}
            None if into.rank_times.len() < MAX_RANKS => into.rank_times.push(t),
            None => {}
        }
    }
    for e in from.expected {
        if !into.expected.contains(&e) {
            into.expected.push(e);
        }
    }
    if from.kind == OomKind::TorchXla {
        into.kind = OomKind::TorchXla;
    }
    if part_first {
        into.form = from.form;
        into.kind = from.kind;
        into.line = from.line;
        into.logged = from.logged;
        into.escaped = from.escaped;
        into.message = from.message;
        into.tpu_runtime_failure = from.tpu_runtime_failure;
        into.gpu_platform = from.gpu_platform;
        into.early_abort = from.early_abort;
        return;
    }
    if into.escaped && !from.escaped {
        into.message = from.message;
        into.tpu_runtime_failure = from.tpu_runtime_failure;
        into.gpu_platform = from.gpu_platform;
        into.early_abort = from.early_abort;
        into.escaped = false;
    }
}

/// How far back an occurrence looks for the error it repeats.
const MERGE_WINDOW: usize = 64;

/// Distinct events kept; further distinct errors in a pathological input are
/// dropped (repeats of kept ones are still counted).
const MAX_EVENTS: usize = 10_000;

/// Merges occurrences, fed in input order, into distinct events.
#[derive(Default)]
pub struct Merger {
    merged: Vec<Merged>,
}

impl Merger {
    pub fn add(&mut self, raw: Raw) {
        let merged = &mut self.merged;
        let lo = merged.len().saturating_sub(MERGE_WINDOW);
        let found = (lo..merged.len())
            .rev()
            .find(|&i| same_error(&merged[i].raw, &raw));
        match found {
            Some(i) => {
                merged[i].count(raw.form, raw.logged, raw.escaped);
                absorb(&mut merged[i].raw, raw);
            }
            None if merged.len() < MAX_EVENTS => {
                let mut m = Merged {
                    occurrences: Vec::new(),
                    raw,
                };
                m.count(m.raw.form, m.raw.logged, m.raw.escaped);
                merged.push(m);
            }
            None => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.merged.is_empty()
    }

    pub fn finish(self, input: &str) -> Vec<OomEvent> {
        self.merged
            .into_iter()
            .map(|m| to_event(input, m))
            .collect()
    }
}

/// The numbers an event holds: its byte fields, extras and listed
/// allocations.
pub fn numbers_in(e: &OomEvent) -> usize {
    let fields = [
        e.used_bytes,
        e.limit_bytes,
        e.exceeded_bytes,
        e.requested_bytes,
        e.free_bytes,
        e.reserved_bytes,
        e.reserved_unallocated_bytes,
        e.private_pools_bytes,
        e.total_capacity_bytes,
        e.allocated_bytes,
        e.arguments_bytes,
        e.output_bytes,
        e.program_bytes,
        e.hlo_temp_bytes,
        e.hlo_temp_unpadded_bytes,
        e.hlo_temp_padded_bytes,
        e.fragmentation_bytes,
        e.tensorcore_bytes,
        e.sparsecore_bytes,
    ];
    fields.iter().flatten().count()
        + e.extra.len()
        + e.top_allocations.len()
        + e.top_arguments.len()
}

fn to_event(input: &str, m: Merged) -> OomEvent {
    let repeats = m.repeats();
    let r = m.raw;
    let missing = r.missing();
    let g = |f: Field| r.fields[f as usize].map(|s| s.bytes);
    OomEvent {
        kind: r.kind,
        memory_space: r.space.clone(),
        input: input.to_string(),
        line: r.line,
        repeats,
        message: r.message.clone(),
        used_bytes: g(Field::Used),
        limit_bytes: g(Field::Limit),
        exceeded_bytes: g(Field::Exceeded),
        requested_bytes: g(Field::Requested),
        free_bytes: g(Field::Free),
        reserved_bytes: g(Field::Reserved),
        reserved_unallocated_bytes: g(Field::ReservedUnallocated),
        private_pools_bytes: g(Field::PrivatePools),
        total_capacity_bytes: g(Field::TotalCapacity),
        allocated_bytes: g(Field::Allocated),
        arguments_bytes: g(Field::Arguments),
        output_bytes: g(Field::Output),
        program_bytes: g(Field::Program),
        hlo_temp_bytes: g(Field::HloTemp),
        hlo_temp_unpadded_bytes: g(Field::HloTempUnpadded),
        hlo_temp_padded_bytes: g(Field::HloTempPadded),
        fragmentation_bytes: g(Field::Fragmentation),
        tensorcore_bytes: g(Field::TensorCore),
        sparsecore_bytes: g(Field::SparseCore),
        extra: r.extra.iter().map(|(k, v)| (k.clone(), v.bytes)).collect(),
        top_allocations: r.top,
        top_arguments: r.top_arguments,
        padding: None,
        missing,
        ranks: {
            let mut ranks = r.ranks;
            ranks.sort_unstable();
            ranks
        },
        rank_times: {
            let mut times = r.rank_times;
            times.sort_by_key(|t| t.rank);
            times
        },
        tpu_runtime_failure: r.tpu_runtime_failure,
        gpu_platform: r.gpu_platform,
        scoped_instruction: r.scoped_instruction,
        early_abort: r.early_abort,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_printed() {
        assert_eq!(
            parse_size("15.75G", false),
            Some(Size {
                bytes: 16_911_433_728,
                exact: false,
                step: 10_737_419
            })
        );
        assert_eq!(
            parse_size("4000000000", true),
            Some(Size::exact(4_000_000_000))
        );
        assert_eq!(
            parse_size("3206250496B", false),
            Some(Size::exact(3_206_250_496))
        );
        assert_eq!(parse_size("0 bytes", false), Some(Size::exact(0)));
        assert_eq!(
            parse_size("36.00 MiB", false),
            Some(Size {
                bytes: 36 << 20,
                exact: false,
                step: 10_486
            })
        );
        assert_eq!(parse_size("94.4...", false), None);
        assert_eq!(parse_size("12", false), None);
        assert_eq!(parse_size("3.47Q", false), None);
    }

    #[test]
    fn rounding_tolerance() {
        let exact = Size::exact(281_923_031_072);
        let rounded = parse_size("262.56GiB", false).unwrap();
        assert!(close(exact, rounded));
        assert!(!close(exact, parse_size("262.00GiB", false).unwrap()));
        let a = Size::exact(2_110_783_744);
        let b = Size::exact(2_110_783_616);
        // "381.60G" (truncated) and the exact 409748396288 (381.6097 GiB).
        assert!(close(
            parse_size("381.60G", false).unwrap(),
            Size::exact(409_748_396_288)
        ));
        assert!(!close(a, b));
    }
}
