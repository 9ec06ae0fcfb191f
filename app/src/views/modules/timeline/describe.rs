//! A buffer in words, as the tooltip, the pinned card and the peak table
//! say it: its lifetime, its padding, and why it is flagged.

use oomscope_report::units::format_bytes;
use oomscope_report::BufferLifetime;

use super::index::{looks_like_gradient, Flag};
use crate::format::{group_digits, percent};

pub fn lifetime_text(start: u64, end: u64) -> String {
    let end = end.max(start);
    format!(
        "positions {start}–{end} ({} positions)",
        group_digits(end - start + 1)
    )
}

/// The lifetime of a buffer of the timeline: a whole-program buffer (a
/// parameter, output or constant) has none of its own.
pub fn lifetime_of(whole_program: bool, start: u64, end: u64) -> String {
    if whole_program {
        "the whole program (allocated before it starts, kept after it ends)".to_string()
    } else {
        lifetime_text(start, end)
    }
}

pub fn padding_note(padded: u64, unpadded: u64) -> Option<String> {
    (padded > unpadded).then(|| {
        format!(
            " · unpadded {} (+{} padding)",
            format_bytes(unpadded),
            percent(padded - unpadded, unpadded.max(1)).unwrap_or_default()
        )
    })
}

pub fn flag_text(flag: Flag, b: &BufferLifetime) -> String {
    let gradient = if looks_like_gradient(&b.op_name, &b.name) {
        "Gradient-like buffer "
    } else {
        "Buffer "
    };
    match flag {
        Flag::HeldToEnd => format!(
            "⚑ {gradient}held to the end of the program (an output, or kept alive): its memory is never reused after its last use. In-place sharding or donation mistakes keep gradients alive like this."
        ),
        Flag::LongLived => format!("⚑ {gradient}live for more than half the program, across the peak."),
    }
}
