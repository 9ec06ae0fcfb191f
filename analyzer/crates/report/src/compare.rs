//! The comparison of two runs (issue 18): two reports side by side, their
//! modules and buffers matched, and the difference explained in named
//! changes whose bytes sum to the peak difference.
//!
//! Field names are a stable JSON interface (`comparison.modules[]` with
//! `name`, `peak_bytes_a`, `peak_bytes_b`, `changes[]` of `kind`, `bytes`,
//! `buffers`, and `explained_bytes`): add fields, never rename. Differences
//! are signed, B minus A, in fields ending `_bytes`.

use serde::{Deserialize, Serialize};

/// Both reports and their comparison: the JSON of `oomscope compare
/// --json` and of the page's comparison export (`a`, `b`,
/// `comparison.modules[]`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComparedRuns {
    pub a: crate::Report,
    pub b: crate::Report,
    pub comparison: Comparison,
}

impl ComparedRuns {
    /// Drops every buffer's lifetime and the instruction sequence from both
    /// reports: a comparison needs the peaks, not the timelines, and they
    /// are most of a report's size.
    pub fn without_lifetimes(mut self) -> Self {
        for module in self.a.modules.iter_mut().chain(self.b.modules.iter_mut()) {
            module.buffers.clear();
            module.instructions.clear();
        }
        self
    }
}

/// Two runs compared. Both reports are kept next to it by the caller; this
/// holds only what the comparison adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: ComparedSide,
    pub b: ComparedSide,
    /// Why the comparison is partial or empty, in words (no module in
    /// common, a side that failed to load, a low-confidence match).
    #[serde(default)]
    pub notes: Vec<ComparisonNote>,
    /// Matched modules, largest absolute peak difference first.
    pub modules: Vec<ModuleComparison>,
    /// Display names of the modules of A that nothing in B matched.
    #[serde(default)]
    pub only_in_a: Vec<String>,
    #[serde(default)]
    pub only_in_b: Vec<String>,
    #[serde(default)]
    pub oom_events: Vec<OomEventComparison>,
    #[serde(default)]
    pub step_series: Vec<SeriesComparison>,
    #[serde(default)]
    pub allocator_profiles: Vec<PeakComparison>,
    /// PyTorch profiler memory timelines and Kineto traces, per device.
    #[serde(default)]
    pub memory_timelines: Vec<PeakComparison>,
    /// PyTorch memory snapshots and JAX device memory profiles: peaks and
    /// live bytes by call stack.
    #[serde(default)]
    pub stack_profiles: Vec<StackProfileComparison>,
    /// A's decision-tree estimates next to what the change really did.
    #[serde(default)]
    pub estimates: Vec<EstimateCheck>,
    /// Present when opened from a link: what detail the link dropped to
    /// fit its budget, in the order applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reductions: Vec<String>,
}

/// One estimate of A's decision tree (what a remedy would save) next to
/// the change of that kind measured between A and B.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EstimateCheck {
    pub kind: ChangeKind,
    /// The tree node and fact holding the estimate, e.g.
    /// `aggregate.config` / `bf16_saving_bytes`.
    pub node: String,
    pub fact: String,
    /// Bytes the tree estimated the remedy saves (positive = saves).
    pub estimate_bytes: i64,
    /// Bytes the change of that kind saved in the compared module
    /// (positive = saves, i.e. minus the change's bytes).
    pub actual_bytes: i64,
    /// The module (display name) the actual bytes come from.
    pub module: String,
}

/// Longest label made from file names.
const MAX_LABEL_CHARS: usize = 80;

/// A side's label when the user gives none: the folder given (the first
/// component of each input name: `f32/compile.log` → `f32`), as the CLI
/// names a folder's files. Loose files (names without a folder: a browser
/// gives no path for picked files) are named by the program their XLA dump
/// files share (`module_0001.jit_step.…` → `jit_step`), else by the first
/// file and how many more. At most 80 characters.
pub fn default_label<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut tops: Vec<&str> = Vec::new();
    let mut folders = 0;
    let mut modules: Vec<&str> = Vec::new();
    for name in names {
        let (top, in_folder) = match name.split_once('/') {
            Some((top, _)) => (top, true),
            None => (name, false),
        };
        if !tops.contains(&top) {
            tops.push(top);
            folders += usize::from(in_folder);
            if let Some(m) = dump_module(top) {
                if !modules.contains(&m) {
                    modules.push(m);
                }
            }
        }
    }
    let label = match (tops.as_slice(), folders, modules.as_slice()) {
        ([], _, _) => return "(nothing)".into(),
        ([one], _, _) => one.to_string(),
        // Several loose files: the one program they dump, else the first file.
        (_, 0, [module]) => module.to_string(),
        ([first, rest @ ..], 0, _) => format!(
            "{first} and {} more file{}",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
        _ => tops.join(", "),
    };
    if label.chars().count() > MAX_LABEL_CHARS {
        label.chars().take(MAX_LABEL_CHARS - 1).collect::<String>() + "…"
    } else {
        label
    }
}

/// Two sides' labels told apart: the same label on both (loose dump files
/// of one program compiled twice) gets ` (A)` and ` (B)`.
pub fn distinct_labels(a: String, b: String) -> (String, String) {
    if a == b {
        (format!("{a} (A)"), format!("{b} (B)"))
    } else {
        (a, b)
    }
}

/// `jit_step` of an XLA dump file name `module_0001.jit_step.…`.
fn dump_module(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("module_")?;
    let (number, rest) = rest.split_once('.')?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.split('.').next().filter(|m| !m.is_empty())
}

/// One side of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComparedSide {
    /// What the user called it; defaults to the file names.
    pub label: String,
    /// The side's input file names.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// True when nothing of this side could be read (every input failed or
    /// none was given); its errors say why.
    #[serde(default)]
    pub failed: bool,
    /// The side's input errors, `file: problem`.
    #[serde(default)]
    pub errors: Vec<String>,
    /// The side's answer in one sentence (its diagnosis headline); empty
    /// when it has none. Shown even when nothing of the two sides matches.
    #[serde(default)]
    pub headline: String,
    /// The side's compiled modules and their peaks, largest first: its
    /// headline numbers, shown even when no module is in common.
    #[serde(default)]
    pub module_peaks: Vec<ModulePeak>,
}

/// One compiled module of a side and its peak.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModulePeak {
    /// Display name (`name(program_id)`).
    pub module: String,
    pub memory_space: crate::MemoryColor,
    pub peak_bytes: u64,
    /// Which peak (`heap_simulator`, `live_range`, ...).
    #[serde(default)]
    pub peak_kind: crate::PeakKind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// Both sides have compiled modules but none of them match.
    NoModuleInCommon,
    /// One side could not be loaded; the other is still shown.
    SideFailed,
    /// Modules were paired although their programs look different: only
    /// appeared/disappeared/grew/shrank are reported, no cause is named.
    LowConfidenceMatch,
    /// The two sides hold no input of the same kind.
    #[default]
    NothingInCommon,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComparisonNote {
    pub kind: NoteKind,
    pub text: String,
}

/// How two modules were paired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleMatch {
    /// Same name (after `jit_` prefixes and numeric suffixes are set aside)
    /// and a similar program.
    #[default]
    SameName,
    /// Different names, but the programs (ops, source lines, instruction
    /// names) are similar.
    SameProgram,
    /// Paired for lack of anything better: programs look different.
    LowConfidence,
}

/// The two analyses of one module (one memory space), side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleComparison {
    /// The module's name (A's bare name).
    pub name: String,
    /// Display names (`name(program_id)`) on each side.
    pub module_a: String,
    pub module_b: String,
    pub memory_space: crate::MemoryColor,
    pub matched_by: ModuleMatch,
    /// Similarity of the two programs, 0 to 1 (shared ops and source lines).
    pub similarity: f64,
    /// Which peak both sides show (`heap_simulator`, `live_range`, ...);
    /// `a / b` when the two sides give different kinds.
    pub peak_kind: String,
    pub peak_bytes_a: u64,
    pub peak_bytes_b: u64,
    /// `peak_bytes_b - peak_bytes_a`.
    pub difference_bytes: i64,
    /// Padding at the peak (padded minus unpadded) on each side.
    pub peak_padding_bytes_a: u64,
    pub peak_padding_bytes_b: u64,
    /// The difference cut into named changes; their `bytes` sum to
    /// `difference_bytes` (what no buffer explains is an `other` change).
    pub changes: Vec<Change>,
    /// The part of `difference_bytes` attributed to buffers (every change
    /// but `other`).
    pub explained_bytes: i64,
    /// The buffers whose bytes at the peak changed, largest change first
    /// (the first ones only; `changes` counts them all).
    pub buffers: Vec<BufferChange>,
    /// The changes in one sentence, e.g. "bf16 halved 62 activation
    /// buffers: −3.2 GiB at the peak".
    pub summary: String,
}

/// What changed, by cause.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Same shape, different element type (f32 → bf16 halves the bytes).
    Dtype,
    /// Outputs that had their own buffer now alias a donated parameter.
    Donation,
    /// Saved activations gone, recomputation added (jax.checkpoint, remat).
    Remat,
    /// One dimension scaled consistently across many buffers.
    Batch,
    /// Per-device shapes divided (or multiplied) by the number of shards.
    Sharding,
    /// The weights themselves scaled along one dimension: more or fewer
    /// stacked layers (a scan), or a wider or narrower model.
    ModelSize,
    /// Same logical size, different padded size (layout change).
    Padding,
    /// A buffer live at B's peak with no counterpart at A's.
    Appeared,
    /// A buffer live at A's peak with no counterpart at B's.
    Disappeared,
    /// A matched buffer larger in B, for no named cause.
    Grew,
    /// A matched buffer smaller in B, for no named cause.
    Shrank,
    /// What no buffer explains (the peak minus the buffers listed at it).
    #[default]
    Other,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Dtype => "dtype",
            ChangeKind::Donation => "donation",
            ChangeKind::Remat => "remat",
            ChangeKind::Batch => "batch",
            ChangeKind::Sharding => "sharding",
            ChangeKind::ModelSize => "model_size",
            ChangeKind::Padding => "padding",
            ChangeKind::Appeared => "appeared",
            ChangeKind::Disappeared => "disappeared",
            ChangeKind::Grew => "grew",
            ChangeKind::Shrank => "shrank",
            ChangeKind::Other => "other",
        }
    }
}

/// One named change of a module's peak.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kind: ChangeKind,
    /// Signed bytes at the peak, B minus A.
    pub bytes: i64,
    /// How many buffers the change covers.
    pub buffers: u64,
    /// In words, with the bytes.
    pub text: String,
}

/// How a buffer of B was paired with one of A.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferMatch {
    /// Same instruction name and op name.
    #[default]
    Name,
    /// Same op name, source line and role, different instruction name.
    Metadata,
    /// Same role and dimensions.
    Shape,
    /// Only on one side.
    Unmatched,
}

/// One buffer's bytes at the peak on both sides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BufferChange {
    pub kind: ChangeKind,
    pub matched_by: BufferMatch,
    /// Instruction names; empty on the side that lacks the buffer.
    pub name_a: String,
    pub name_b: String,
    pub shape_a: String,
    pub shape_b: String,
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub difference_bytes: i64,
    #[serde(default)]
    pub op_name: String,
    #[serde(default)]
    pub source: String,
    pub category: crate::BufferCategory,
}

// ---------------------------------------------------------------------------
// Other inputs

/// The same OOM error before and after, number by number.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OomEventComparison {
    pub kind: crate::OomKind,
    pub memory_space: crate::MemorySpace,
    pub message_a: String,
    pub message_b: String,
    /// Every number either message gives.
    pub numbers: Vec<NumberChange>,
}

/// One named number on both sides (absent on a side that does not give it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumberChange {
    /// The report field, e.g. `used_bytes`.
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<u64>,
    /// `b - a` when both are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<i64>,
}

/// Memory per step on both sides: growth per step, last and largest values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesComparison {
    pub device: String,
    pub metric: String,
    pub input_a: String,
    pub input_b: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slope_bytes_per_step_a: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slope_bytes_per_step_b: Option<f64>,
    pub max_bytes_a: u64,
    pub max_bytes_b: u64,
    pub max_difference_bytes: i64,
    /// Steps both sides logged, with the difference at each (B minus A).
    #[serde(default)]
    pub common_steps: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projected_limit_step_a: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projected_limit_step_b: Option<u64>,
    pub summary: String,
}

/// A peak on both sides (allocator profiles).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakComparison {
    pub name: String,
    pub peak_bytes_a: u64,
    pub peak_bytes_b: u64,
    pub difference_bytes: i64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StackProfileKind {
    #[default]
    MemorySnapshot,
    DeviceMemoryProfile,
}

/// A PyTorch snapshot or a JAX device memory profile on both sides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackProfileComparison {
    pub kind: StackProfileKind,
    /// The device (snapshot device index or pprof device label; empty for all).
    pub device: String,
    pub input_a: String,
    pub input_b: String,
    pub peak_bytes_a: u64,
    pub peak_bytes_b: u64,
    pub difference_bytes: i64,
    /// The stacks whose live bytes changed most, largest change first.
    pub stacks: Vec<StackChange>,
    /// How many stacks only B has (new allocation sites) and only A has (vanished).
    pub new_sites: u64,
    pub vanished_sites: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackChange {
    /// Innermost first, as [`crate::StackSample::frames`].
    pub frames: Vec<crate::Frame>,
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub difference_bytes: i64,
    /// Appeared (only B), Disappeared (only A), Grew or Shrank.
    pub kind: ChangeKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_label_names_the_folders_or_files_given() {
        assert_eq!(
            default_label(["f32/compile.log", "f32/dump/a.txt", "bf16.log"]),
            "f32, bf16.log"
        );
        assert_eq!(default_label([]), "(nothing)");
        // Loose files, as a browser gives picked files: the program their
        // dump files share (the real names of fixtures/pair-remat/remat),
        // never a cut list of file names.
        assert_eq!(
            default_label([
                "compile.log",
                "module_0000.jit_train_step.cl_1014260217.after_optimizations.txt",
                "module_0000.jit_train_step.cl_1014260217.after_optimizations.hlo.pb",
                "module_0000.jit_train_step.cl_1014260217.after_optimizations-buffer-assignment.txt",
            ]),
            "jit_train_step"
        );
        assert_eq!(
            default_label([
                "memory_step_20.prof",
                "memory_step_40.prof",
                "memory_step_60.prof"
            ]),
            "memory_step_20.prof and 2 more files"
        );
        let long: Vec<String> = (0..40).map(|i| format!("run{i}/x")).collect();
        let label = default_label(long.iter().map(String::as_str));
        assert_eq!(label.chars().count(), MAX_LABEL_CHARS);
        assert!(label.ends_with('…'));
    }
}
