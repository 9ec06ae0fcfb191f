//! Many ranks side by side (issue 26): one summary per rank of a job, the
//! ranks that differ from the median rank, and what the grouping decided.
//! Field names are the stable JSON interface; add fields, never rename.

use serde::{Deserialize, Serialize};

use crate::vocabulary::{RankFindingKind, RankPer, RankSource};

/// One rank (process) of a job, from every input recognised as its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub rank: u32,
    /// Its inputs, in step order when the names give steps.
    pub inputs: Vec<String>,
    /// The device its memory is on (`cpu:2048`, `cuda:3`), when known.
    #[serde(default)]
    pub device: String,
    /// The largest total among its inputs.
    pub peak_bytes: u64,
    /// The total of its last input (in step order).
    pub final_bytes: u64,
    /// Whether it ran out of memory (a log line with its rank, or its snapshot's OOM).
    pub oom: bool,
    /// How the rank was recognised.
    #[serde(default)]
    pub source: RankSource,
    /// Step numbers of `inputs`, one each, when every name gives one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<u64>,
    /// The total of each input (live buffers of a profile, a snapshot's
    /// peak), one per input: the rank's curve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bytes_per_input: Vec<u64>,
    /// Least-squares growth per step (per profile without steps) over
    /// `bytes_per_input`; absent with fewer than two inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_per_step_bytes: Option<i64>,
    /// The median rank: the reference the others are compared with.
    #[serde(default, skip_serializing_if = "is_false")]
    pub median: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A rank that differs from the median rank, with the allocation site
/// that makes the difference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankFinding {
    pub kind: RankFindingKind,
    pub rank: u32,
    /// Growth per `per` for `growth`; the excess over the median rank for `excess`.
    pub bytes: u64,
    pub per: RankPer,
    /// `file.py:N` of the allocation site that makes the difference (empty when none is known).
    #[serde(default)]
    pub line: String,
    pub text: String,
    /// The step at which the growth reaches the device's limit, when a
    /// limit is known (an OOM message of the same job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_step: Option<u64>,
    /// For `oom_first`: when the rank failed (`RankTime::time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

/// When one rank printed an OOM message: the time its logger wrote on the
/// message's line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankTime {
    pub rank: u32,
    /// `[YYYY-]MM-DD HH:MM:SS.fffffffff`, as the logger printed it (the year
    /// when it prints one; the fraction padded to nine digits).
    pub time: String,
    /// The line of the log.
    pub line: u32,
}

impl RankTime {
    /// Whether `self` is earlier than `other`: their times compared as
    /// text, without the year when only one side has one.
    pub fn earlier_than(&self, other: &RankTime) -> bool {
        // `MM-DD HH:MM:SS.fffffffff` is 24 characters.
        let tail = |t: &str| {
            t.len()
                .checked_sub(24)
                .map_or(t.to_string(), |i| t[i..].to_string())
        };
        if self.time.len() == other.time.len() {
            self.time < other.time
        } else {
            tail(&self.time) < tail(&other.time)
        }
    }
}

/// One OOM printed by several ranks of a job (one log): one error, its
/// ranks listed, and the numbers that differ between them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankOom {
    pub input: String,
    /// Line of its first occurrence.
    pub line: u32,
    pub message: String,
    pub ranks: Vec<u32>,
    /// Indices into `Report::oom_events` of the events it gathers (one
    /// when every rank printed the same numbers).
    pub events: Vec<u32>,
    /// Numbers that are not the same for every rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differing: Vec<RankNumber>,
}

/// One number of an OOM message per rank, where the ranks differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankNumber {
    /// The event field (`free_bytes`, `allocated_bytes`, ...).
    pub field: String,
    /// `(rank, bytes)`, by rank.
    pub by_rank: Vec<(u32, u64)>,
}

/// A rank (and step) the user set for one input, in place of what the
/// names and contents gave: the page's correction, applied by the next
/// grouping without reading any file again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankOverride {
    pub input: String,
    pub rank: u32,
    /// The input's step; `None`: the input has no step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

/// What the grouping into ranks decided and why, for the page to say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankNote {
    pub kind: RankNoteKind,
    /// The inputs concerned.
    #[serde(default)]
    pub inputs: Vec<String>,
    pub text: String,
}

/// The kinds of [`RankNote`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankNoteKind {
    /// Inputs grouped into ranks, and by which clue.
    #[default]
    Grouped,
    /// Two inputs claim the same rank and step: both kept.
    Clash,
    /// A rank's input could not be read: the rank is named, the others shown.
    Failed,
    /// Inputs left out of the ranks (another kind or another run).
    NotGrouped,
}
