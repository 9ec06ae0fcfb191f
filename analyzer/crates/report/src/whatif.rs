//! Predictions by replay (issue 25): each remedy applied to a module's own
//! buffers, then the same heap replay as the Memory Viewer
//! (`oomscope_whatif`). `Diagnosis::what_if` holds one entry per applicable
//! single remedy of each module that ran out or is near its limit.

use serde::{Deserialize, Serialize};

use crate::MemoryColor;

/// A remedy the engine can replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remedy {
    Donation,
    Bf16,
    Batch,
    Remat,
    Sharding,
    Offload,
    Padding,
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
        }
    }

    pub fn from_word(word: &str) -> Option<Remedy> {
        Remedy::ALL.into_iter().find(|r| r.as_str() == word.trim())
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
}

impl Default for Remedy {
    fn default() -> Self {
        Remedy::Donation
    }
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
