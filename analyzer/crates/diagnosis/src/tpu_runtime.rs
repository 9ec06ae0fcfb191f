//! A TPU run-time failure told by its message alone (no series, profile or
//! snapshot to show growth or a spike): OpenXLA's two run-time pages.
//!
//! - E0101, program allocation: loading a compiled program reserves its
//!   code, constants and the memory its temporaries need "at the bottom of
//!   memory"; it fails when the buffers already on the device leave too
//!   little (`Attempting to reserve X at the bottom of memory … Y free, Z
//!   reserved, W reservable`). Buffers take precedence over loaded
//!   programs: the runtime evicts programs for them, so a program that once
//!   loaded can fail later, as more buffers stay live.
//! - E0100, buffer allocation: a `device_put` or a program's output
//!   (`Attempting to allocate X … Y free`); with as much free, no block is
//!   large enough, after the runtime's own defragmentation.
//!
//! Both pages send the user to the buffers that hold HBM: a smaller batch
//! or sequence, sharding, donation, `jax.Array`s kept alive, and the
//! `tpu_log_allocations_on_oom` flag to list them.

use oomscope_report::{OomEvent, TpuRuntimeFailure};

use crate::facts::{gib, signed};
use crate::ids::*;
use crate::node::NodeEval;

/// The two pages' nodes for a TPU run-time event (none for other events):
/// the event's page with what its message says, selected when `selected`
/// (no series or profile decided first), and the other page, unselected.
pub(crate) fn nodes(e: Option<&OomEvent>, selected: Option<&'static str>) -> Vec<NodeEval> {
    let failure = e.and_then(|e| e.tpu_runtime_failure);
    let mut load = NodeEval::new(TPU_PROGRAM_LOAD, "");
    let mut alloc = NodeEval::new(TPU_BUFFER_ALLOCATION, "");
    match (e, failure) {
        (Some(e), Some(TpuRuntimeFailure::ProgramLoad)) => {
            program_load(&mut load, e, selected == Some(TPU_PROGRAM_LOAD));
            alloc.reason = "The failure is loading a program, not allocating a buffer.".into();
        }
        (Some(e), Some(TpuRuntimeFailure::BufferAllocation)) => {
            buffer_allocation(&mut alloc, e, selected == Some(TPU_BUFFER_ALLOCATION));
            load.reason = "The failure is allocating a buffer, not loading a program.".into();
        }
        // Another kind of report: these pages do not apply, and are not
        // listed.
        _ => return Vec::new(),
    }
    vec![load, alloc]
}

/// The leaf for a lone TPU run-time message.
pub(crate) fn leaf(e: Option<&OomEvent>) -> Option<&'static str> {
    match e.and_then(|e| e.tpu_runtime_failure)? {
        TpuRuntimeFailure::ProgramLoad => Some(TPU_PROGRAM_LOAD),
        TpuRuntimeFailure::BufferAllocation => Some(TPU_BUFFER_ALLOCATION),
    }
}

/// What the runtime could have given: `reservable` for a program (free
/// memory it can move to the bottom), else `free`.
fn available(e: &OomEvent) -> Option<u64> {
    e.extra.get("reservable_bytes").copied().or(e.free_bytes)
}

fn program_load(node: &mut NodeEval, e: &OomEvent, selected: bool) {
    let need = e.requested_bytes;
    let have = available(e);
    node.reason = match (need, have) {
        (Some(n), Some(h)) => format!(
            "Loading the program reserves {} at the bottom of HBM (its code, constants and its temporaries); {} could be reserved{}: the buffers already on the device hold the rest.",
            gib(n),
            gib(h),
            e.free_bytes
                .map(|f| format!(" ({} free)", gib(f)))
                .unwrap_or_default()
        ),
        (Some(n), None) => format!(
            "Loading the program reserves {} at the bottom of HBM (its code, constants and its temporaries), more than the buffers already on the device leave.",
            gib(n)
        ),
        _ => "Loading the program failed: the buffers already on the device leave too little HBM for it.".into(),
    };
    if let Some(n) = need {
        node.fact("program_reservation_bytes", n);
    }
    if let Some(h) = have {
        node.fact("reservable_bytes", h);
    }
    if !selected {
        return;
    }
    shortfall_action(
        node,
        "free_buffers",
        need.zip(have),
        "of buffers must go",
        "reservation − reservable (else free), from the message",
    );
    node.action("fewer_programs", "", None);
    node.action("shared_memory_percent", "", None);
    node.action("log_allocations", "", None);
}

fn buffer_allocation(node: &mut NodeEval, e: &OomEvent, selected: bool) {
    let need = e.requested_bytes;
    let free = e.free_bytes;
    let fragmented = matches!((need, free), (Some(n), Some(f)) if f >= n);
    node.reason = match (need, free) {
        (Some(n), Some(f)) if fragmented => format!(
            "{} were free for a {} buffer, but in no block large enough, even after the runtime's own defragmentation.",
            gib(f),
            gib(n)
        ),
        (Some(n), Some(f)) => format!(
            "A {} buffer (a device_put or a program's output) did not fit in the {} free: {} more was needed.",
            gib(n),
            gib(f),
            gib(n - f)
        ),
        (Some(n), None) => format!(
            "A {} buffer (a device_put or a program's output) did not fit in the free HBM.",
            gib(n)
        ),
        _ => "A buffer did not fit in the free HBM.".into(),
    };
    if let Some(n) = need {
        node.fact("requested_bytes", n);
    }
    if let Some(f) = free {
        node.fact("free_bytes", f);
    }
    if !selected {
        return;
    }
    shortfall_action(
        node,
        "reduce_footprint",
        need.zip(free),
        "more must be free",
        "request − free, from the message",
    );
    node.action("release_arrays", "", None);
    if fragmented {
        node.action("free_in_pieces", "", None);
    }
    node.action("log_allocations", "", None);
}

/// The node's first action, with the shortfall (needed − at hand) in words
/// and as its estimate when both numbers are known and it is positive.
fn shortfall_action(
    node: &mut NodeEval,
    id: &str,
    need_and_have: Option<(u64, u64)>,
    words: &str,
    how: &str,
) {
    let short = need_and_have
        .and_then(|(n, h)| n.checked_sub(h))
        .filter(|&s| s > 0);
    node.action(
        id,
        &short
            .map(|s| format!("At least {} {words}.", gib(s)))
            .unwrap_or_default(),
        short.map(|s| (signed(s), how.into())),
    );
}
