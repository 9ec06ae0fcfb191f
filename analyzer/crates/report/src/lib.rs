//! The oomscope report: the one data model shared by every decoder, the
//! analysis, the command line (`--json`), permalinks and the app.
//!
//! Invariants (the JSON is a stable interface; issues extend it, never rename):
//! - every byte quantity is an integer number of bytes in a field ending `_bytes`;
//! - optional numbers are omitted from the JSON when the input did not give them;
//! - `schema` changes only on an incompatible change.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod compare;
pub mod devices;
pub mod program;
pub mod ranks;
pub mod runtime;
pub mod series;
pub mod snapshot;
pub mod stacks;
pub mod units;
pub mod vocabulary;
pub mod whatif;

pub use ranks::{
    RankFinding, RankNote, RankNoteKind, RankNumber, RankOom, RankOverride, RankSummary, RankTime,
};
pub use runtime::{
    DeviceBalance, DeviceMemory, DeviceMemoryProfile, DeviceMemorySeries, EvenStack, GrowingStack,
    MemoryTimeline, SourceLineBytes, TimeUnit, TimelinePoint, TimelineSource, UnevenStack,
};
pub use snapshot::{
    Accumulation, CurvePoint, LingeringBuffers, LiveAllocation, MemorySnapshot, PhaseSpan,
    SnapshotFormat, SnapshotLine, SnapshotOom, Spike, CURVE_MAX_POINTS, NO_STACK_LINE,
};
pub use stacks::{Frame, FrameKind, StackSample};
pub use vocabulary::{
    MemoryColor, MemorySpace, PeakKind, RankFindingKind, RankPer, RankSource, SourceKind,
};

/// Version of the JSON report schema.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: u32,
    pub inputs: Vec<InputInfo>,
    pub oom_events: Vec<OomEvent>,
    pub modules: Vec<ModuleReport>,
    pub step_series: Vec<StepSeries>,
    #[serde(default)]
    pub allocator_profiles: Vec<AllocatorProfile>,
    /// PyTorch memory snapshots, one entry per device (issue 16).
    #[serde(default)]
    pub memory_snapshots: Vec<MemorySnapshot>,
    /// JAX device memory profiles (pprof), one per file (issue 17).
    #[serde(default)]
    pub device_memory_profiles: Vec<DeviceMemoryProfile>,
    /// Device memory profiles of one run taken at several steps, with the
    /// stacks that grow across them (issue 17).
    #[serde(default)]
    pub device_memory_series: Vec<DeviceMemorySeries>,
    /// PyTorch profiler memory timelines and Kineto traces, per device (issue 17).
    #[serde(default)]
    pub memory_timelines: Vec<MemoryTimeline>,
    /// What the TPU compiler logged of the programs it compiled and that
    /// fit: their memory against the device's limit (issue 28).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compile_usages: Vec<CompileUsage>,
    /// One summary per rank when the inputs are several ranks of one job (issue 26).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankSummary>,
    /// Ranks that differ from the median rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_findings: Vec<RankFinding>,
    /// OOMs printed by several ranks, each once with its ranks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_ooms: Vec<RankOom>,
    /// What the grouping into ranks decided and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_notes: Vec<RankNote>,
    /// Ranks and steps the user set on the page for some inputs; the
    /// grouping above honours them (their rank's `source` is `user`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_overrides: Vec<RankOverride>,
    pub diagnosis: Diagnosis,
    pub errors: Vec<InputError>,
    /// Present when this report was opened from a permalink: it is read-only
    /// and may carry less detail than the original analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedInfo>,
}

/// How a shared (permalink) report was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SharedInfo {
    /// Milliseconds since the Unix epoch when the link was made.
    pub created_unix_ms: u64,
    /// What detail was dropped to fit the link budget, in the order applied.
    pub reductions: Vec<String>,
    /// What the sender had open.
    pub view: ViewState,
}

/// Which view and selection the user has open (carried by permalinks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ViewState {
    /// `verdict`, `timeline`, `padding`, `tree`, `steps`.
    pub view: String,
    /// Index into `modules` of the selected module and memory space.
    pub module: u32,
    /// Selected buffer or node name, if any.
    pub selection: String,
    /// The device the user picked for a report that gives no limit (its
    /// verdict was made with it: `oomscope_diagnosis::diagnose_with`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceLimit>,
    /// The module view's What-if panel: the remedies picked and what they
    /// replayed to (issue 25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<whatif::WhatIfView>,
    /// The lines of PyTorch snapshots replayed without on the page (issue
    /// 25), each with its replayed curve (a `without_allocations` what-if
    /// naming its snapshot, device and frame).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshot_without: Vec<whatif::ReplayedCurve>,
}

impl Report {
    pub fn new() -> Self {
        Report {
            schema: SCHEMA_VERSION,
            ..Default::default()
        }
    }
}

/// One file the user gave, as the sniffer classified it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputInfo {
    pub name: String,
    pub kind: InputKind,
    pub size_bytes: u64,
    /// 64-bit FNV-1a of the content, hex: tells two inputs apart in a shared report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    OomLog,
    XlaDumpText,
    HloProto,
    Xplane,
    StepLog,
    Archive,
    MemorySnapshot,
    DeviceMemoryProfile,
    MemoryTimeline,
    /// The log of a TPU compile that fit (its memory usage lines).
    CompileLog,
    #[default]
    Unknown,
}

impl InputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::OomLog => "oom_log",
            InputKind::XlaDumpText => "xla_dump_text",
            InputKind::HloProto => "hlo_proto",
            InputKind::Xplane => "xplane",
            InputKind::StepLog => "step_log",
            InputKind::Archive => "archive",
            InputKind::MemorySnapshot => "memory_snapshot",
            InputKind::DeviceMemoryProfile => "device_memory_profile",
            InputKind::MemoryTimeline => "memory_timeline",
            InputKind::CompileLog => "compile_log",
            InputKind::Unknown => "unknown",
        }
    }
}

/// A program's memory as the TPU compiler logs it at INFO level after a
/// compile that fits: `XLA::TPU program HBM usage: P / L` (the program
/// against the memory space's limit), with, for HBM, the `Total hbm usage
/// >= T:` block (`reserved`, `program`, `arguments`, `Output size`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileUsage {
    pub input: String,
    /// 1-based line of the usage line (or of the block, without one).
    pub line: u32,
    /// The module, from the `XLA::TPU module name:` line before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub module: String,
    pub memory_space: MemorySpace,
    /// The program's own memory (`program` of the usage line).
    pub program_bytes: u64,
    /// The memory space's limit as the compiler checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_usage_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
}

impl CompileUsage {
    /// What occupies the memory the limit bounds: the program and its
    /// arguments (the runtime's reservation lies outside the limit).
    pub fn used_bytes(&self) -> u64 {
        self.program_bytes
            .saturating_add(self.arguments_bytes.unwrap_or(0))
    }
}

/// An input that could not be read; the others still load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputError {
    pub input: String,
    pub message: String,
}

// ---------------------------------------------------------------------------
// OOM events (from logs)

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomKind {
    #[default]
    TpuCompileHbm,
    TpuCompileOtherSpace,
    /// OpenXLA E1001 (`CompileTimeScopedVmemOom`): one instruction's scoped
    /// VMEM (its stack: a kernel's windows and scratch) exceeds the scoped
    /// limit. Not the program's memory: `requested_bytes` is the
    /// instruction's need, `limit_bytes` the scoped limit, and the first
    /// `top_allocations` entry names the instruction.
    TpuScopedVmem,
    TpuSparsecore,
    TpuRuntime,
    XlaGpu,
    TorchCuda,
    TorchXla,
}

/// Which of OpenXLA's two TPU run-time pages a run-time failure is: the log
/// reader knows it from the message's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TpuRuntimeFailure {
    /// E0101: loading a program reserves its memory "at the bottom of
    /// memory" (`Attempting to reserve X at the bottom of memory`, `Error
    /// loading program`).
    ProgramLoad,
    /// E0100: a buffer (a `device_put`, a program's output) does not fit
    /// (`Attempting to allocate X`).
    BufferAllocation,
}

/// The GPU platform a PyTorch caching-allocator message names: the ROCm
/// build prints `HIP out of memory` where the CUDA build prints `CUDA out of
/// memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuPlatform {
    Cuda,
    Hip,
}

/// What an E1001 message shows of the instruction whose scoped memory ran
/// out (the advice differs: a kernel is retuned by its author, the
/// compiler's own instruction is a bug to report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopedInstruction {
    /// A custom call (`tpu_custom_call`: Pallas/Mosaic) or an op named by a
    /// `pallas_call`: a kernel someone wrote.
    CustomKernel,
    /// An instruction with another opcode (a fusion, a convolution): the
    /// compiler's own.
    Compiler,
}

/// The TPU compiler's early abort (`Aborting compilation early because it's
/// unlikely to have enough memory. Requires X, has Y available`): its used
/// number is the compiler's estimate of what the program requires, not
/// memory it used. The log reader knows it from the message's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EarlyAbort {
    /// The message ends naming the flag that makes the compiler list its
    /// allocations instead (`If more detailed logging is desired, set
    /// --xla_tpu_impure_oom_fast_exit_threshold=-1`).
    NamesListingFlag,
    /// It does not name it (a message cut before it).
    Unnamed,
}

/// One distinct out-of-memory error found in a text. Fields the message does
/// not give are `None` (omitted in JSON). Exact byte counts win over rounded ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OomEvent {
    pub kind: OomKind,
    /// `hbm`, `vmem`, `smem`, `gpu`, ...
    pub memory_space: MemorySpace,
    /// Input file name the event was found in.
    #[serde(default)]
    pub input: String,
    /// 1-based line where the event starts in its input.
    pub line: u32,
    /// How many times the same error occurs in the input (1 = once).
    pub repeats: u32,
    /// The headline of the message, as printed (trimmed of log prefixes).
    #[serde(default)]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limit_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exceeded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub requested_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub free_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reserved_bytes: Option<u64>,
    /// PyTorch: reserved by the caching allocator but not allocated to a
    /// tensor (the newest message prints it; older ones give reserved and
    /// allocated). `reserved_bytes` stays the total reserved.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reserved_unallocated_bytes: Option<u64>,
    /// PyTorch: allocated in private pools (CUDA graphs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub private_pools_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub allocated_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub arguments_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub program_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hlo_temp_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hlo_temp_unpadded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hlo_temp_padded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fragmentation_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tensorcore_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sparsecore_bytes: Option<u64>,
    /// Any further named numbers the message gives (e.g. `largest_free_chunk_bytes`,
    /// `non_pytorch_bytes`, `reservable_bytes`); keys end in `_bytes` when bytes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub extra: BTreeMap<String, u64>,
    /// Ranks that printed it (`[rank3]:` prefixes), sorted; empty when the
    /// lines carry no rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
    /// When each rank printed it, where its lines carry a logger's time
    /// (the earliest copy per rank), by rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_times: Vec<RankTime>,
    #[serde(default)]
    pub top_allocations: Vec<TopAllocation>,
    /// Padding waste of the listed allocations, from the layout model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding: Option<PaddingSummary>,
    /// A separate "Largest program arguments and outputs" listing (TPU), when printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_arguments: Vec<TopAllocation>,
    /// Numbers this message states in full but that the input lacks (the
    /// text was cut inside it), by field name (`limit_bytes`,
    /// `extra.reservable_bytes`). Never filled in by guessing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// A TPU run-time failure (kind `tpu_runtime`, or `torch_xla` printing
    /// the runtime's message): which page it is. `None` for other events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpu_runtime_failure: Option<TpuRuntimeFailure>,
    /// A PyTorch caching-allocator message (`torch_cuda` on a GPU): the
    /// platform it names. `None` when it names none (a paste cut before
    /// it, a snapshot): read as CUDA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_platform: Option<GpuPlatform>,
    /// E1001 (`tpu_scoped_vmem`): what the instruction is, `None` when the
    /// message does not say (a name alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoped_instruction: Option<ScopedInstruction>,
    /// A TPU compile-time early abort (`Requires X, has Y available`):
    /// whether its message names the flag that lists the allocations.
    /// `None` for other events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_abort: Option<EarlyAbort>,
}

impl OomEvent {
    /// Who ran out, in words: `TPU compile-time`, `PyTorch XPU`, ... The
    /// one wording of an event's source: the CLI, the page and the
    /// headline all say it this way. PyTorch's caching allocator prints the
    /// same message for every device, so its device is the memory space's.
    pub fn source_words(&self) -> &'static str {
        match self.kind {
            OomKind::TpuCompileHbm | OomKind::TpuCompileOtherSpace => "TPU compile-time",
            OomKind::TpuScopedVmem => "TPU compile-time scoped stack",
            OomKind::TpuSparsecore => "TPU SparseCore",
            OomKind::TpuRuntime => "TPU runtime",
            OomKind::XlaGpu => "XLA GPU",
            OomKind::TorchXla => "PyTorch/XLA",
            OomKind::TorchCuda => match self.memory_space {
                MemorySpace::Xpu => "PyTorch XPU",
                MemorySpace::Npu => "PyTorch NPU",
                MemorySpace::Mps => "PyTorch MPS",
                _ if self.gpu_platform == Some(GpuPlatform::Hip) => "PyTorch HIP",
                _ => "PyTorch CUDA",
            },
        }
    }

    /// The memory limit the event was measured against: the limit the message
    /// states, else the device's total capacity (PyTorch, BFC). The one
    /// definition of this rule: every reader of a limit calls it.
    pub fn limit(&self) -> Option<u64> {
        self.limit_bytes.or(self.total_capacity_bytes)
    }

    /// What the program needed: the usage the message states, else (a
    /// SparseCore message) its TensorCore and SparseCore usage together.
    pub fn used(&self) -> Option<u64> {
        self.used_bytes
            .or_else(|| match (self.tensorcore_bytes, self.sparsecore_bytes) {
                (Some(tc), Some(sc)) => Some(tc.saturating_add(sc)),
                _ => None,
            })
    }

    /// How far over the limit: the excess the message prints, else
    /// [`used`](Self::used) − [`limit`](Self::limit) when both are known
    /// and used is the larger. The one definition: every reader calls it.
    pub fn excess(&self) -> Option<u64> {
        self.exceeded_bytes.or_else(|| {
            let (used, limit) = (self.used()?, self.limit()?);
            used.checked_sub(limit).filter(|e| *e > 0)
        })
    }

    /// The compiler's early abort (`Requires 3.47E, has 14.49G available`):
    /// its [`used`](Self::used) is what the compiler estimated the program
    /// requires before giving up, not memory it used.
    pub fn is_requirement(&self) -> bool {
        self.early_abort.is_some()
    }

    /// A need no device can hold (more than [`IMPOSSIBLE_OVER_LIMIT`] times
    /// the limit): a size computation gone wrong, not a program to trim. A
    /// share of the limit means nothing then.
    pub fn is_impossible(&self) -> bool {
        match (self.used().or(self.requested_bytes), self.limit()) {
            (Some(need), Some(limit)) => need / IMPOSSIBLE_OVER_LIMIT > limit,
            _ => false,
        }
    }

    /// Whether `self` and `other` are the same failure: the same numbers
    /// printed twice (by several ranks, or in the error and the log of one
    /// run, which prints more of them: the excess is compared as
    /// [`excess`](Self::excess) derives it). Where they were found does not
    /// matter.
    pub fn same_failure(&self, other: &OomEvent) -> bool {
        let numbers = |e: &OomEvent| {
            (
                e.used(),
                e.limit(),
                e.excess(),
                e.requested_bytes,
                e.free_bytes,
            )
        };
        self.kind == other.kind
            && self.memory_space == other.memory_space
            && numbers(self) == numbers(other)
    }
}

/// `events` grouped by [`OomEvent::same_failure`], in order of first
/// appearance; in each group the event that states the most (its listing,
/// then its other numbers) comes first, then the others in order. The CLI
/// and the page show each group as one OOM seen in every file it is in.
pub fn same_failures(events: &[OomEvent]) -> Vec<Vec<&OomEvent>> {
    let mut groups: Vec<Vec<&OomEvent>> = Vec::new();
    for e in events {
        match groups.iter_mut().find(|g| g[0].same_failure(e)) {
            Some(g) => g.push(e),
            None => groups.push(vec![e]),
        }
    }
    for g in &mut groups {
        let richest = (0..g.len())
            .max_by_key(|&i| {
                (
                    g[i].top_allocations.len(),
                    g[i].extra.len(),
                    std::cmp::Reverse(i),
                )
            })
            .unwrap_or(0);
        let first = g.remove(richest);
        g.insert(0, first);
    }
    groups
}

/// Opcodes (and instruction-name stems) SPMD partitioning adds: a module
/// with one of them runs on several chips.
pub const COLLECTIVE_OPCODES: [&str; 6] = [
    "all-gather",
    "reduce-scatter",
    "all-reduce",
    "all-to-all",
    "collective-permute",
    "async-collective",
];

/// Whether an opcode or instruction name is a cross-device collective.
pub fn is_collective(name: &str) -> bool {
    COLLECTIVE_OPCODES.iter().any(|op| name.starts_with(op))
}

/// A need this many times the limit is beyond every device (the largest
/// accelerators hold about ten times the smallest).
pub const IMPOSSIBLE_OVER_LIMIT: u64 = 1000;

/// One entry of a "Largest program allocations" (or similar) listing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TopAllocation {
    pub rank: u32,
    pub size_bytes: u64,
    /// The shape as printed, layout included.
    pub shape: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub unpadded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub padding_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub op_name: Option<String>,
    /// `file:line` when the message gives it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub xla_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub allocation_type: Option<String>,
}

impl TopAllocation {
    /// The shape in words. The E1000 "Memory usage report" lists every
    /// value that uses one chunk in turn (`5×f32[…]` is five values of that
    /// shape, `bf16[2], 3×f32[4]` four values of two shapes), not copies:
    /// `one chunk for 5 values of f32[…] in turn`, `one chunk shared in turn
    /// by bf16[2], 3 values of f32[4]`. Other listings print one shape,
    /// returned as it is.
    pub fn shape_words(&self) -> String {
        let items: Vec<(u64, &str)> = self
            .shape
            .split(", ")
            .map(|item| match item.split_once('×') {
                Some((n, shape)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    (n.parse().unwrap_or(1), shape)
                }
                _ => (1, item),
            })
            .collect();
        let values: u64 = items.iter().map(|(n, _)| *n).sum();
        if values <= 1 {
            return self.shape.clone();
        }
        let words: Vec<String> = items
            .iter()
            .map(|(n, shape)| match n {
                1 => shape.to_string(),
                n => format!("{n} values of {shape}"),
            })
            .collect();
        if items.len() == 1 {
            format!("one chunk for {} in turn", words.join(""))
        } else {
            format!("one chunk shared in turn by {}", words.join(", "))
        }
    }
}

// ---------------------------------------------------------------------------
// Module analyses (from HloProtos, xplanes, XLA dump text)

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferCategory {
    Parameter,
    Output,
    ThreadLocal,
    Constant,
    #[default]
    Temporary,
    /// XProf's merged entry for buffers under 16 KiB at the peak.
    Small,
}

/// What the buffer assignment says of an allocation (`BufferAllocationProto`'s
/// flags, or the dump's `allocation N: ..., parameter 0, maybe-live-out`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocationFlags {
    pub parameter: bool,
    pub maybe_live_out: bool,
    pub thread_local: bool,
    pub constant: bool,
}

impl BufferCategory {
    /// An allocation's category, in XProf's order (`parameter`, then
    /// `output`, then `thread-local`), constants before temporaries: the
    /// one rule for HloProtos and dump text alike.
    pub fn from_flags(flags: AllocationFlags) -> Self {
        if flags.parameter {
            BufferCategory::Parameter
        } else if flags.maybe_live_out {
            BufferCategory::Output
        } else if flags.thread_local {
            BufferCategory::ThreadLocal
        } else if flags.constant {
            BufferCategory::Constant
        } else {
            BufferCategory::Temporary
        }
    }
}

/// Memory-viewer analysis of one compiled module in one memory space.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleReport {
    /// XProf names a module `name(program_id)`; this is the bare `name`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub program_id: Option<i64>,
    /// Memory space colour: 0 HBM/device, 1 VMEM, 5 host, ...
    pub memory_space: MemoryColor,
    /// Where the analysis came from: `hlo_proto`, `xplane`, `xla_dump_text`.
    #[serde(default)]
    pub source_kind: SourceKind,
    /// Input file(s) the analysis came from.
    #[serde(default)]
    pub input: String,
    /// Which peak `peak_bytes` is (see DESIGN.md: several exist), e.g.
    /// `heap_simulator` (XProf Memory Viewer) or `live_range`.
    #[serde(default)]
    pub peak_kind: PeakKind,
    pub peak_bytes: u64,
    pub peak_unpadded_bytes: u64,
    /// Index into `heap_bytes` of the peak.
    pub peak_position: u64,
    pub heap_bytes: Vec<u64>,
    pub unpadded_heap_bytes: Vec<u64>,
    /// Empty for a full curve (`heap_bytes[i]` is at position `i`). For a
    /// downsampled curve (permalinks), the position of each point; the peak
    /// point is always kept exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_positions: Vec<u64>,
    pub peak_buffers: Vec<PeakBuffer>,
    pub parameters_bytes: u64,
    pub maybe_live_out_bytes: u64,
    pub total_allocation_bytes: u64,
    #[serde(default)]
    pub indefinite_bytes: u64,
    /// The compiler's own peak when the input states it (e.g. live-range
    /// "Live ranges at N (peak)" or "Used X of Y"), for comparison.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub compiler_peak_bytes: Option<u64>,
    /// Every buffer with its lifetime in program order, for the timeline.
    /// Not part of the stable JSON (can be huge): serialized only on request.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub buffers: Vec<BufferLifetime>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub padding: Option<PaddingSummary>,
    /// Program-order instruction names (index = position), when known.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub instructions: Vec<String>,
    /// How many chips the module was compiled for, when the input says:
    /// the HloProto's device assignment (replica_count × computation_count)
    /// or the `HloModule` header of dump text (`replica_count=`,
    /// `num_partitions=`; absent means 1). `None`: the input does not say
    /// (a buffer assignment or memory-usage report alone).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub chips: Option<u64>,
}

/// The accelerator a module was compiled for, as far as the module shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Tpu,
    Gpu,
    Cpu,
    Unknown,
}

impl ModuleReport {
    /// What the module shows of its platform: XLA names the dumps of its
    /// CPU and GPU backends `…cpu_after_optimizations…` and
    /// `…gpu_after_optimizations…` (`…sm_8.0_gpu…`), and only TPU layouts
    /// carry tiles (`{1,0:T(8,128)}`). A profile's module names none.
    pub fn platform(&self) -> Platform {
        let file = self.input.rsplit(['/', '\\']).next().unwrap_or("");
        if file.contains("cpu_after_optimizations") || file.contains("cpu_before_optimizations") {
            return Platform::Cpu;
        }
        if file.contains("gpu_after_optimizations") || file.contains("gpu_before_optimizations") {
            return Platform::Gpu;
        }
        let tiled = |shape: &str| shape.contains(":T(");
        if self.peak_buffers.iter().any(|b| tiled(&b.shape))
            || self.buffers.iter().any(|b| tiled(&b.shape))
        {
            return Platform::Tpu;
        }
        Platform::Unknown
    }

    /// The module's memory space in words for people, on its platform:
    /// colour 0 is HBM on a TPU, the GPU's memory on a GPU, host memory on
    /// the CPU, and "device memory" where the module does not say.
    pub fn space_words(&self) -> String {
        match (self.memory_space, self.platform()) {
            (MemoryColor::Device, Platform::Cpu) => "CPU memory (the XLA:CPU device)".to_string(),
            (MemoryColor::Device, Platform::Gpu) => "GPU device memory".to_string(),
            (MemoryColor::Device, Platform::Unknown) => "Device memory".to_string(),
            (space, _) => space.words(),
        }
    }

    /// The name XProf shows: `name(program_id)`.
    pub fn display_name(&self) -> String {
        match self.program_id {
            Some(id) => format!("{}({})", self.name, id),
            None => self.name.clone(),
        }
    }

    /// The lifetime of each peak buffer, in the order of `peak_buffers`:
    /// the buffer with the same logical id and name (the same name when the
    /// peak buffer has no id); `None` for buffers live for the whole
    /// program, which have no lifetime. One pass over `buffers`.
    pub fn peak_buffer_lifetimes(&self) -> Vec<Option<&BufferLifetime>> {
        let mut by_key: std::collections::HashMap<(Option<i64>, &str), &BufferLifetime> =
            std::collections::HashMap::new();
        for l in &self.buffers {
            by_key.entry((Some(l.id), l.name.as_str())).or_insert(l);
            by_key.entry((None, l.name.as_str())).or_insert(l);
        }
        self.peak_buffers
            .iter()
            .map(|b| by_key.get(&(b.logical_buffer_id, b.name.as_str())).copied())
            .collect()
    }
}

/// A buffer live at the peak.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakBuffer {
    pub name: String,
    pub shape: String,
    pub size_bytes: u64,
    pub unpadded_bytes: u64,
    #[serde(default)]
    pub op_name: String,
    /// `file:line` from metadata or the stack-frame index; empty when unknown.
    #[serde(default)]
    pub source: String,
    pub category: BufferCategory,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub logical_buffer_id: Option<i64>,
    /// HLO opcode of the defining instruction.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub opcode: String,
    /// Its allocation is maybe-live-out (a program output) as well as what
    /// `category` says: for a `parameter`, the output reuses the
    /// parameter's memory (a donated argument, an input-output alias).
    /// `category` keeps XProf's precedence (parameter before output), so
    /// this is the only place a donated parameter shows as an output too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub maybe_live_out: bool,
}

/// One buffer over its lifetime, `[start, end]` in program-order positions
/// (the same positions as `heap_bytes`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BufferLifetime {
    pub id: i64,
    pub name: String,
    pub shape: String,
    pub size_bytes: u64,
    pub unpadded_bytes: u64,
    pub start: u64,
    pub end: u64,
    pub category: BufferCategory,
    #[serde(default)]
    pub op_name: String,
    #[serde(default)]
    pub source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub opcode: String,
    /// Vertical offset in the stacked view (bytes), when computed.
    #[serde(default)]
    pub offset_bytes: u64,
}

/// Padding waste of a module or event (see the padding issue).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaddingSummary {
    pub total_padding_bytes: u64,
    pub peak_padding_bytes: u64,
    pub top: Vec<PaddingEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaddingEntry {
    pub shape: String,
    pub count: u64,
    pub padding_bytes: u64,
    /// padded / unpadded.
    pub expansion: f64,
    #[serde(default)]
    pub suggestion: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion_saves_bytes: Option<u64>,
}

// ---------------------------------------------------------------------------
// Memory over time

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSeries {
    /// Which reader produced it, e.g. `torchtitan`, `maxtext`, `csv`.
    pub source: String,
    #[serde(default)]
    pub input: String,
    /// Device or rank the series belongs to, e.g. `TPU_0`, `rank 3`.
    pub device: String,
    /// What is measured, e.g. `memory`, `max_reserved`, `used`.
    #[serde(default)]
    pub metric: String,
    /// Unit the log printed (`GiB`, `GB`, ...); values are converted to bytes.
    pub unit: String,
    pub points: Vec<StepPoint>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limit_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slope_bytes_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub projected_limit_step: Option<u64>,
    /// Median wall time of a step, when the log prints step times.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seconds_per_step: Option<f64>,
    /// Wall time from the last logged step until `projected_limit_step`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub projected_limit_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sawtooth_period_steps: Option<u64>,
    /// Steps at which a sudden jump (change point) was found.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub spikes: Vec<u64>,
    /// Allocator retries the log reports (torchtitan's `N CUDA memory
    /// allocation retries.`): `bytes` holds the retry count, at the step the
    /// warning follows.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub allocation_retries: Vec<StepPoint>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepPoint {
    pub step: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorProfile {
    pub allocator: String,
    #[serde(default)]
    pub input: String,
    /// The host the profile was taken on (`XSpace.hostnames`), when it
    /// names one: a rank of a job of many hosts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    pub peak_heap_bytes: u64,
    pub peak_stack_bytes: u64,
    pub peak_time_ps: u64,
    pub capacity_bytes: u64,
    pub fragmentation_at_peak: f64,
    pub timeline: Vec<AllocatorPoint>,
    pub active_at_peak: Vec<ActiveAllocation>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorPoint {
    pub time_ps: u64,
    pub heap_bytes: u64,
    pub stack_bytes: u64,
    pub free_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActiveAllocation {
    pub allocation_bytes: u64,
    pub requested_bytes: u64,
    pub op_name: String,
    pub shape: String,
    pub data_type: String,
    pub occurrences: u64,
}

// ---------------------------------------------------------------------------
// Diagnosis: the troubleshooting decision tree evaluated on the facts.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TreeKind {
    CompileHbmOom,
    RuntimeOom,
    MemoryGrowth,
    #[default]
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub tree: TreeKind,
    /// Node ids from the root to the selected leaf.
    pub path: Vec<String>,
    pub nodes: Vec<DiagnosisNode>,
    /// The answer first: the verdict or the next step the user should take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Headline>,
    /// Predictions by replay (issue 25): one entry per applicable single
    /// remedy of each module that ran out or is near its limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<whatif::WhatIf>,
}

/// How bad the verdict is: only failures are drawn red.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Out of memory (or certain to be).
    Failure,
    /// Fits, but something needs attention (near the limit, growing, padding).
    Warning,
    /// Fits, or nothing to decide.
    #[default]
    Info,
}

/// How far an estimate can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Counted from the compiler's own buffers or the message's own numbers.
    High,
    /// A model over real buffers (e.g. bf16 halves each f32 buffer), or an
    /// estimate that covers the excess by a thin margin.
    Medium,
    /// An upper bound or a guess from totals (e.g. "shards evenly").
    Low,
}

/// The verdict or next step, with the estimate that justifies it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The decision-tree node this comes from.
    pub node: String,
    pub text: String,
    /// What the step buys (bytes saved), or the headroom for a fit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub estimate_bytes: Option<u64>,
    #[serde(default)]
    pub severity: Severity,
    /// How sure the estimate is (absent when there is no estimate).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub confidence: Option<Confidence>,
}

/// A device the user picked for inputs that carry no limit (a lone HloProto,
/// a step log): its name and memory limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceLimit {
    /// E.g. `TPU v5e` or `A100 80GB`.
    pub name: String,
    pub limit_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisNode {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub selected: bool,
    /// One sentence with numbers saying why the node is (not) selected, or the
    /// question the data cannot decide.
    pub reason: String,
    pub facts: BTreeMap<String, serde_json::Value>,
    pub actions: Vec<DiagnosisAction>,
    /// The buffers the reason and actions are about, for the views to link
    /// to (largest first within each role).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<CitedBuffer>,
}

/// A buffer a decision-tree node cites, and where it lives: in a module
/// analysis (`module` is set: the timeline and padding views can show it
/// by `buffer_id`, else by `name`) or in an OOM error's listing of its
/// largest allocations (`listing_rank` is set: the padding view shows it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitedBuffer {
    /// Why the node cites it, e.g. `over half the limit`, `f32`.
    pub role: String,
    pub name: String,
    pub shape: String,
    pub size_bytes: u64,
    /// `file:line` when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Display name (`name(program_id)`) of the module that holds it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub module: String,
    #[serde(default)]
    pub memory_space: MemoryColor,
    /// Its logical buffer id in that module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_id: Option<i64>,
    /// Its rank (1 = largest) in the OOM error's allocation listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing_rank: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisAction {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub estimate_bytes: Option<i64>,
    /// How the estimate was computed (estimates are labelled as such).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub how: Option<String>,
    /// The remedy this action is, when the what-if engine replayed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub remedy: Option<whatif::Remedy>,
    /// The module's peak after the remedy, replayed (`diagnosis.what_if`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub predicted_peak_bytes: Option<u64>,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a, hex. Cheap enough for multi-GB inputs; identifies content,
/// it is not a security hash.
pub fn content_hash(data: &[u8]) -> String {
    format!("{:016x}", fnv_over(FNV_OFFSET, data))
}

/// The FNV-1a chain `h` carried over `bytes`.
#[inline]
fn fnv_over(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(FNV_PRIME))
}

/// [`content_hash`] of each of `inputs`, in order, the same values, made
/// faster when there are several: FNV-1a is one chain of dependent
/// multiplications per input (a byte can only be mixed in once the previous
/// product is known), so one input runs at the multiplier's latency, but
/// independent inputs hashed side by side in [`LANES`] interleaved chains
/// keep the multiplier busy. An archive and the files it holds are hashed so
/// (a 10 MB dump folder's zip and its 128 files: 20 MB hashed in the time of
/// about 10).
pub fn content_hashes(inputs: &[&[u8]]) -> Vec<String> {
    // Longest first: the longest input bounds the time, so it starts at once
    // and the others fill the remaining lanes around it.
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(inputs[i].len()));
    let mut waiting = order.into_iter();
    let mut hashes = vec![FNV_OFFSET; inputs.len()];
    // Per lane: the input it hashes and how far it has come.
    let mut lanes: [Option<(usize, usize)>; LANES] = [None; LANES];
    loop {
        for lane in lanes.iter_mut().filter(|l| l.is_none()) {
            *lane = waiting.next().map(|i| (i, 0));
        }
        if lanes.iter().all(Option::is_none) {
            break;
        }
        // Every busy lane advances by the bytes the shortest of them has
        // left (capped, so that a long run is many calls of one small
        // function: a WebAssembly engine optimises a function between calls,
        // never during one); idle lanes hash an empty slice.
        let step = lanes
            .iter()
            .flatten()
            .map(|&(i, at)| inputs[i].len() - at)
            .min()
            .unwrap_or(0)
            .min(HASH_STEP_BYTES);
        let mut states = [FNV_OFFSET; LANES];
        let mut slices: [&[u8]; LANES] = [&[]; LANES];
        for (k, lane) in lanes.iter().enumerate() {
            if let Some((i, at)) = *lane {
                states[k] = hashes[i];
                slices[k] = &inputs[i][at..at + step];
            }
        }
        fnv_lanes(&mut states, slices);
        for (k, lane) in lanes.iter_mut().enumerate() {
            if let Some((i, at)) = *lane {
                hashes[i] = states[k];
                *lane = (at + step < inputs[i].len()).then_some((i, at + step));
            }
        }
    }
    hashes.into_iter().map(|h| format!("{h:016x}")).collect()
}

/// Chains hashed side by side by [`content_hashes`]: enough to cover the
/// multiplier's latency (3 to 4 cycles) on x86-64 and in V8's wasm code.
const LANES: usize = 4;
/// Bytes per lane per call of [`fnv_lanes`].
const HASH_STEP_BYTES: usize = 64 << 10;

/// Advances each chain of `states` over its slice; the slices that are not
/// empty have one length.
#[inline(never)]
fn fnv_lanes(states: &mut [u64; LANES], slices: [&[u8]; LANES]) {
    let n = slices.iter().map(|s| s.len()).max().unwrap_or(0);
    if slices.iter().all(|s| s.len() == n) {
        let [a, b, c, d] = slices;
        let (mut ha, mut hb, mut hc, mut hd) = (states[0], states[1], states[2], states[3]);
        // Zipped slices: no bounds check per byte.
        for (((&x, &y), &z), &w) in a.iter().zip(b).zip(c).zip(d) {
            ha = (ha ^ x as u64).wrapping_mul(FNV_PRIME);
            hb = (hb ^ y as u64).wrapping_mul(FNV_PRIME);
            hc = (hc ^ z as u64).wrapping_mul(FNV_PRIME);
            hd = (hd ^ w as u64).wrapping_mul(FNV_PRIME);
        }
        *states = [ha, hb, hc, hd];
        return;
    }
    // Fewer inputs than lanes (the last ones): each chain alone.
    for (h, s) in states.iter_mut().zip(slices) {
        *h = fnv_over(*h, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_side_by_side_equal_one_by_one() {
        // FNV-1a's published test vectors, then inputs of many lengths
        // (empty, shorter and longer than a step, more than the lanes).
        assert_eq!(content_hash(b""), "cbf29ce484222325");
        assert_eq!(content_hash(b"a"), "af63dc4c8601ec8c");
        assert_eq!(content_hash(b"foobar"), "85944171f73967e8");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut byte = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        };
        let lengths = [
            0,
            1,
            7,
            HASH_STEP_BYTES - 1,
            HASH_STEP_BYTES,
            HASH_STEP_BYTES + 1,
            3 * HASH_STEP_BYTES + 5,
            100,
            100,
            0,
            12_345,
        ];
        let inputs: Vec<Vec<u8>> = lengths
            .iter()
            .map(|&n| (0..n).map(|_| byte()).collect())
            .collect();
        for count in 0..=inputs.len() {
            let slices: Vec<&[u8]> = inputs[..count].iter().map(Vec::as_slice).collect();
            let one_by_one: Vec<String> = slices.iter().map(|s| content_hash(s)).collect();
            assert_eq!(content_hashes(&slices), one_by_one, "{count} inputs");
        }
    }

    #[test]
    fn a_usage_report_shape_is_values_in_turn_not_copies() {
        // Shapes as libtpu 0.0.52 prints them (fixtures/oom-transformer-scan).
        let t = |shape: &str| TopAllocation {
            shape: shape.into(),
            ..Default::default()
        };
        assert_eq!(
            t("5×bf16[32,4,2048,4608]").shape_words(),
            "one chunk for 5 values of bf16[32,4,2048,4608] in turn"
        );
        assert_eq!(
            t("bf16[4,2048,50257], bf16[50257,1536], 5×bf16[32,4,2048,6144]").shape_words(),
            "one chunk shared in turn by bf16[4,2048,50257], bf16[50257,1536], 5 values of bf16[32,4,2048,6144]"
        );
        assert_eq!(
            t("f32[32768,100003]{1,0:T(8,128)}").shape_words(),
            "f32[32768,100003]{1,0:T(8,128)}"
        );
    }

    #[test]
    fn the_same_failure_in_the_error_and_the_log_is_one() {
        // fixtures/oom-single-buffer: the E1000 error (no excess printed)
        // and the log's "Used 24.92G of 15.75G ... Exceeded by 9.17G".
        let error = OomEvent {
            kind: OomKind::TpuCompileHbm,
            memory_space: MemorySpace::Hbm,
            input: "error.txt".into(),
            used_bytes: Some(26757646254),
            limit_bytes: Some(16911433728),
            ..Default::default()
        };
        let log = OomEvent {
            input: "compile.log".into(),
            exceeded_bytes: Some(9846212526),
            top_allocations: vec![TopAllocation::default()],
            ..error.clone()
        };
        assert!(error.same_failure(&log));
        let events = [error.clone(), log.clone()];
        let groups = same_failures(&events);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0][0].input, "compile.log", "the richer event first");
        let other = OomEvent {
            used_bytes: Some(26757646255),
            ..error
        };
        assert!(!other.same_failure(&log));
    }
}
