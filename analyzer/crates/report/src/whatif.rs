//! Predictions by replay (issue 25): each remedy applied to a module's own
//! buffers, then the same heap replay as the Memory Viewer
//! (`oomscope_whatif`). `Diagnosis::what_if` holds one entry per applicable
//! single remedy of each module that ran out or is near its limit.

use serde::{Deserialize, Serialize};

use crate::MemoryColor;

/// A remedy the engine can replay.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Remedy {
    #[default]
    Donation,
    Bf16,
    Batch,
    Remat,
    Sharding,
    Offload,
    Padding,
    /// PyTorch snapshots: every allocation whose stack holds a frame, removed.
    WithoutAllocations,
    /// PyTorch snapshots: `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
    ExpandableSegments,
    /// PyTorch snapshots: the allocation that ran out, placed.
    FailedAllocationPlaced,
}

impl Remedy {
    pub const ALL: [Remedy; 7] = [
        Remedy::Donation,
        Remedy::Bf16,
        Remedy::Batch,
        Remedy::Remat,
        Remedy::Sharding,
        Remedy::Offload,
        Remedy::Padding,
    ];

    /// What-ifs of a PyTorch memory snapshot (its trace replayed), never
    /// of a compiled module.
    pub const SNAPSHOT: [Remedy; 3] = [
        Remedy::WithoutAllocations,
        Remedy::ExpandableSegments,
        Remedy::FailedAllocationPlaced,
    ];

    /// The word used in the JSON and on the command line (`--what-if donation,bf16`).
    pub fn as_str(self) -> &'static str {
        match self {
            Remedy::Donation => "donation",
            Remedy::Bf16 => "bf16",
            Remedy::Batch => "batch",
            Remedy::Remat => "remat",
            Remedy::Sharding => "sharding",
            Remedy::Offload => "offload",
            Remedy::Padding => "padding",
            Remedy::WithoutAllocations => "without_allocations",
            Remedy::ExpandableSegments => "expandable_segments",
            Remedy::FailedAllocationPlaced => "failed_allocation_placed",
        }
    }

    pub fn from_word(word: &str) -> Option<Remedy> {
        Remedy::ALL
            .into_iter()
            .chain(Remedy::SNAPSHOT)
            .find(|r| r.as_str() == word.trim())
    }

    /// What the remedy costs the user, cheapest first, in the decision
    /// tree's order (`diagnosis/src/compile/remedy.rs`): donation is free,
    /// padding a shape change, jax.checkpoint a third more backward compute,
    /// bf16 changes numerics, a smaller batch the training dynamics; host
    /// offload adds transfers and sharding needs more devices.
    pub fn cost_rank(self) -> u8 {
        match self {
            Remedy::Donation => 0,
            Remedy::Padding => 1,
            Remedy::Remat => 2,
            Remedy::Bf16 => 3,
            Remedy::Batch => 4,
            Remedy::Offload => 5,
            Remedy::Sharding => 6,
            // A setting of the allocator, a line of code, more memory.
            Remedy::ExpandableSegments => 0,
            Remedy::WithoutAllocations => 1,
            Remedy::FailedAllocationPlaced => 7,
        }
    }
}

/// One remedy (or a combination) replayed on one module.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    /// The remedy (the first of a combination).
    pub remedy: Remedy,
    /// Further remedies applied in the same replay (empty for a single one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<Remedy>,
    /// Display name of the module (`name(program_id)`).
    pub module: String,
    pub memory_space: MemoryColor,
    /// What it was applied to, in words.
    pub scope: String,
    pub predicted_peak_bytes: u64,
    /// Position of the new peak on the module's heap curve.
    pub predicted_peak_position: u64,
    /// Today's peak minus the predicted one (negative when it grows).
    pub saving_bytes: i64,
    /// Whether the predicted peak fits the limit; absent when no limit is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fits: Option<bool>,
    /// Limit minus the predicted peak, when a limit is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom_bytes: Option<i64>,
    /// How it was modelled.
    pub how: String,
    /// Buffers whose size changed (at most a few, largest change first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<ChangedBuffer>,
    /// Snapshots: the CUDA device (`module` is then the snapshot file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// `without_allocations`: the frame (`function file:line`) whose
    /// allocations were removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
    /// `failed_allocation_placed`: bytes that had to be freed for the
    /// allocation to succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_free_bytes: Option<u64>,
}

/// A buffer a what-if resizes or removes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangedBuffer {
    pub name: String,
    pub shape_before: String,
    /// Empty when the buffer leaves the memory space.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub shape_after: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Which arguments a donation what-if donates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DonationScope {
    /// Every argument XLA could alias.
    #[default]
    All,
    /// The optimizer state only.
    OptimizerState,
}

impl DonationScope {
    pub fn as_str(self) -> &'static str {
        match self {
            DonationScope::All => "all",
            DonationScope::OptimizerState => "optimizer_state",
        }
    }

    pub fn from_word(word: &str) -> Option<DonationScope> {
        [DonationScope::All, DonationScope::OptimizerState]
            .into_iter()
            .find(|d| d.as_str() == word)
    }
}

/// The remedies picked in the module view's What-if panel, with their
/// parameters (a link carries them and reopens the panel with them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatIfChoice {
    /// Remedies applied together (empty: none picked).
    #[serde(default)]
    pub remedies: Vec<Remedy>,
    #[serde(default)]
    pub donation: DonationScope,
    /// k of "batch ÷ k".
    pub batch_divisor: u32,
    /// N of "sharding over N devices".
    pub devices: u32,
}

/// Sharding's default N (issue 25): the chips the module runs on
/// (`ModuleReport::chips`: replicas × partitions), or 2 when that is one
/// chip or unknown.
pub fn default_devices(chips: Option<u64>) -> u32 {
    chips
        .filter(|&c| c > 1)
        .map_or(2, |c| u32::try_from(c).unwrap_or(u32::MAX))
}

impl WhatIfChoice {
    /// The defaults for a module that runs on `chips` chips.
    pub fn for_chips(chips: Option<u64>) -> Self {
        WhatIfChoice {
            devices: default_devices(chips),
            ..WhatIfChoice::default()
        }
    }
}

impl Default for WhatIfChoice {
    /// The report's defaults (`diagnosis.what_if`): every argument XLA
    /// could alias, batch halved, sharding over 2 (over the module's chips:
    /// [`WhatIfChoice::for_chips`]).
    fn default() -> Self {
        WhatIfChoice {
            remedies: Vec::new(),
            donation: DonationScope::All,
            batch_divisor: 2,
            devices: 2,
        }
    }
}

/// A replayed combination with its new heap curve, in the form of the
/// module's heap curve (`positions[i]` is the program position of
/// `heap_bytes[i]`; downsampled with the exact peak kept).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayedCurve {
    pub what_if: WhatIf,
    pub positions: Vec<u64>,
    pub heap_bytes: Vec<u64>,
}

/// A remedy the panel cannot offer on this module, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbsentRemedy {
    pub remedy: Remedy,
    pub why: String,
}

/// The What-if panel's answer for one module and one [`WhatIfChoice`]:
/// every single remedy with the choice's parameters, and the picked
/// combination replayed with its curve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelReplay {
    pub module: String,
    pub memory_space: MemoryColor,
    /// Today's peak, replayed (equal to the module's peak).
    pub peak_bytes: u64,
    pub singles: Vec<WhatIf>,
    pub absent: Vec<AbsentRemedy>,
    /// The choice's remedies together (absent when none is picked or it
    /// does not apply: see `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combination: Option<ReplayedCurve>,
    /// Why the picked combination gives no prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// The What-if panel as a link carries it: the choice, and the replay the
/// sender saw (whoever opens the link has no program to replay).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIfView {
    pub choice: WhatIfChoice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayedCurve>,
}
