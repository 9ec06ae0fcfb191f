//! The keywords where an OOM message can start, found in one pass over the
//! text (Aho-Corasick), and which parser each one calls for. Shared by the
//! scan, the wrap detection and the parsers that must know where another
//! message starts.

use aho_corasick::{AhoCorasick, MatchKind};
use std::sync::OnceLock;

/// What a keyword may start, and which parser reads it.
#[derive(Clone, Copy)]
pub(crate) enum Anchor {
    TpuRanOut,
    TpuRequires,
    TpuWouldExceed,
    SparseCore,
    TpuReserve,
    TpuAllocate,
    BfcRanOut,
    XlaGpuOom,
    FailedRequest,
    CuMemAllocAsync,
    TfTensor,
    Torch,
    TorchMps,
    /// `Tried to allocate`: the rest of a PyTorch message whose first words
    /// were cut off; inside a wrapped message it starts nothing.
    TorchRest,
    TpuUsageReport,
    /// `Program hbm requirement X:`, a compiler report pasted from there.
    TpuProgramRequirement,
    /// A `reserved`/`program`/`arguments` line of a `Total hbm usage`
    /// block pasted without its header; inside a report it starts nothing.
    TpuUsageItem,
}

pub(crate) const KEYWORDS: [(&str, Anchor); 24] = [
    ("Ran out of memory", Anchor::TpuRanOut),
    ("Requires ", Anchor::TpuRequires),
    ("would exceed memory (size=", Anchor::TpuWouldExceed),
    ("Hbm usage", Anchor::SparseCore),
    ("Attempting to reserve", Anchor::TpuReserve),
    ("Attempting to allocate", Anchor::TpuAllocate),
    ("ran out of memory trying to allocate", Anchor::BfcRanOut),
    ("Out of memory while trying to allocate", Anchor::XlaGpuOom),
    ("Out of memory allocating", Anchor::XlaGpuOom),
    ("Failed to allocate request for", Anchor::FailedRequest),
    (
        "cuMemAllocAsync failed to allocate",
        Anchor::CuMemAllocAsync,
    ),
    ("OOM when allocating tensor", Anchor::TfTensor),
    ("CUDA out of memory", Anchor::Torch),
    ("HIP out of memory", Anchor::Torch),
    ("XPU out of memory", Anchor::Torch),
    ("MPS backend out of memory", Anchor::TorchMps),
    // PyTorch's device-generic allocator names no device.
    ("Out of memory. Tried to allocate", Anchor::Torch),
    // A PyTorch message pasted without its first words.
    ("Tried to allocate", Anchor::TorchRest),
    ("Total hbm usage >=", Anchor::TpuUsageReport),
    ("Program hbm requirement", Anchor::TpuProgramRequirement),
    ("Program vmem requirement", Anchor::TpuProgramRequirement),
    // The printer aligns the sizes in a column: at least two spaces follow.
    ("reserved  ", Anchor::TpuUsageItem),
    ("program  ", Anchor::TpuUsageItem),
    ("arguments  ", Anchor::TpuUsageItem),
];

pub(crate) fn keywords() -> &'static AhoCorasick {
    static CELL: OnceLock<AhoCorasick> = OnceLock::new();
    CELL.get_or_init(|| {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(KEYWORDS.iter().map(|(k, _)| *k))
            .expect("constant keywords")
    })
}

/// Whether `line` holds the start of another OOM message (a report block
/// such as `Total hbm usage >=` inside a message's report is not one).
pub(crate) fn starts_new_message(line: &str) -> bool {
    keywords().find_iter(line).any(|m| {
        !matches!(
            KEYWORDS[m.pattern().as_usize()].1,
            Anchor::TpuUsageReport
                | Anchor::TorchRest
                | Anchor::TpuProgramRequirement
                | Anchor::TpuUsageItem
        )
    })
}

/// Whether `text` holds a keyword that can begin a message of its own (the
/// rest of a wrapped PyTorch message, `Tried to allocate ...`, cannot).
pub(crate) fn has_message_start(text: &str) -> bool {
    keywords().find_iter(text).any(|m| {
        !matches!(
            KEYWORDS[m.pattern().as_usize()].1,
            Anchor::TorchRest | Anchor::TpuUsageItem
        )
    })
}

/// How many keywords that can start an OOM message `text` holds.
pub(crate) fn keyword_count(text: &str) -> usize {
    keywords().find_iter(text).count()
}

/// Whether `text` holds any keyword that can start an OOM message.
pub(crate) fn has_keyword(text: &str) -> bool {
    keywords().is_match(text)
}
