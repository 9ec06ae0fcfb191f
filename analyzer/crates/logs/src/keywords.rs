//! The keywords where an OOM message can start, found in one pass over the
//! text (Aho-Corasick), and which parser each one calls for. Shared by the
//! scan, the wrap detection and the parsers that must know where another
//! message starts.

use aho_corasick::{AhoCorasick, Anchored, Input, MatchKind, StartKind};
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
    /// The `Output size` line of a `Total hbm usage` block pasted without
    /// its header; inside a report it starts nothing.
    TpuUsageItem,
    /// `Scoped allocation with size X and limit Y exceeded scoped vmem
    /// limit by Z` (E1001) quoted without the line before it.
    TpuScoped,
}

pub(crate) const KEYWORDS: [(&str, Anchor); 25] = [
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
    // torch_npu (Ascend): its caching allocator and its workspace allocator.
    ("NPU out of memory", Anchor::Torch),
    ("MPS backend out of memory", Anchor::TorchMps),
    // PyTorch's device-generic allocator names no device.
    ("Out of memory. Tried to allocate", Anchor::Torch),
    // A PyTorch message pasted without its first words.
    ("Tried to allocate", Anchor::TorchRest),
    ("Total hbm usage >=", Anchor::TpuUsageReport),
    // (Rare words first: a keyword's first bytes are what the search
    // filters on, and `Pro`, `res` or `arg` start too many words.)
    (" hbm requirement", Anchor::TpuProgramRequirement),
    (" vmem requirement", Anchor::TpuProgramRequirement),
    // `Output size X; shares Y with arguments.`, after the block's
    // `reserved`/`program`/`arguments` lines.
    ("; shares ", Anchor::TpuUsageItem),
    ("Scoped allocation with size", Anchor::TpuScoped),
    ("Scoped allocation of ", Anchor::TpuScoped),
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

/// Bytes of a line's end looked at by [`may_end_in_keyword`].
const TAIL: usize = 64;

/// Whether `line` ends with the start of a keyword (spaces included): only
/// then can the line break after it cut one.
/// An anchored search of the reversed line end among the reversed keyword
/// starts, so that most lines are dismissed after a byte or two.
pub(crate) fn may_end_in_keyword(line: &str) -> bool {
    // First the line's last two bytes, against the pairs of adjacent bytes
    // the keywords hold and their first bytes: most lines end in a pair no
    // keyword has (digits, brackets), and are dismissed by a table lookup.
    static PAIRS: OnceLock<Vec<u64>> = OnceLock::new();
    let pairs = PAIRS.get_or_init(|| {
        let mut bits = vec![0u64; (1 << 16) / 64];
        for (k, _) in KEYWORDS {
            for w in k.as_bytes().windows(2) {
                let i = usize::from(w[0]) << 8 | usize::from(w[1]);
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        bits
    });
    let bytes = line.as_bytes();
    let (a, b) = match bytes {
        [.., a, b] => (a, b),
        [b] => (&0, b),
        [] => return false,
    };
    let i = usize::from(*a) << 8 | usize::from(*b);
    let first = KEYWORDS.iter().any(|(k, _)| k.as_bytes()[0] == *b);
    if pairs[i / 64] & (1 << (i % 64)) == 0 && !first {
        return false;
    }
    static CELL: OnceLock<AhoCorasick> = OnceLock::new();
    let starts = CELL.get_or_init(|| {
        let reversed: Vec<Vec<u8>> = KEYWORDS
            .iter()
            .flat_map(|(k, _)| {
                (1..k.len()).map(move |n| k.as_bytes()[..n].iter().rev().copied().collect())
            })
            .collect();
        AhoCorasick::builder()
            .start_kind(StartKind::Anchored)
            .build(reversed)
            .expect("constant keyword starts")
    });
    let mut tail = [0u8; TAIL];
    let n = bytes.len().min(TAIL);
    for (t, b) in tail.iter_mut().zip(bytes[bytes.len() - n..].iter().rev()) {
        *t = *b;
    }
    starts
        .find(Input::new(&tail[..n]).anchored(Anchored::Yes))
        .is_some()
}
