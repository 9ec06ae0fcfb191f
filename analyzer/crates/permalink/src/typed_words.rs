//! Fields 11–14 of `OomEvent` (what the message's form says, typed by the
//! log reader): written as their JSON words, empty for none. Links made
//! before them lack the fields; for those, each is derived from the text
//! the link carries, by the rules the diagnosis used before the reader
//! typed them, so that an old link opens with the same diagnosis (and the
//! same one again when the page makes it anew for a device). Only this
//! layer reads text for them.

use crate::LinkError;
use oomscope_report::{
    EarlyAbort, GpuPlatform, OomEvent, OomKind, ScopedInstruction, TpuRuntimeFailure,
};

/// A typed field as a link carries it: `Some("")` for none, so that a
/// link made after the field existed is told from one made before.
pub(crate) fn word<T: serde::Serialize>(v: &Option<T>) -> Option<String> {
    Some(v.as_ref().map(crate::bounds::enum_name).unwrap_or_default())
}

/// A carried field: `Ok(Some(v))` when it names a value, `Ok(None)` for
/// none; `Err` for an unknown word.
fn read<T: serde::de::DeserializeOwned>(what: &str, w: &str) -> Result<Option<T>, LinkError> {
    if w.is_empty() {
        Ok(None)
    } else {
        crate::bounds::enum_parse(what, w).map(Some)
    }
}

/// Sets the four fields of `ev` from the link, deriving each one the link
/// lacks (an old link) from `ev`'s carried text, top allocations included.
pub(crate) fn set(
    ev: &mut OomEvent,
    tpu_runtime_failure: Option<String>,
    gpu_platform: Option<String>,
    scoped_instruction: Option<String>,
    early_abort: Option<String>,
) -> Result<(), LinkError> {
    ev.tpu_runtime_failure = match tpu_runtime_failure {
        Some(w) => read("TPU run-time failure", &w)?,
        None => old_tpu_runtime_failure(ev),
    };
    ev.gpu_platform = match gpu_platform {
        Some(w) => read("GPU platform", &w)?,
        None => old_gpu_platform(ev),
    };
    ev.scoped_instruction = match scoped_instruction {
        Some(w) => read("scoped instruction", &w)?,
        None => old_scoped_instruction(ev),
    };
    ev.early_abort = match early_abort {
        Some(w) => read("early abort", &w)?,
        None => old_early_abort(ev),
    };
    Ok(())
}

/// A run-time event's page, from its message.
fn old_tpu_runtime_failure(e: &OomEvent) -> Option<TpuRuntimeFailure> {
    let runtime = e.kind == OomKind::TpuRuntime
        || (e.kind == OomKind::TorchXla && e.message.contains("Attempting to"));
    if !runtime {
        None
    } else if e.message.contains("at the bottom of memory")
        || e.message.contains("Error loading program")
    {
        Some(TpuRuntimeFailure::ProgramLoad)
    } else {
        Some(TpuRuntimeFailure::BufferAllocation)
    }
}

/// The platform a PyTorch message names (the carried message may be cut:
/// a missing word reads as CUDA, as it always did).
fn old_gpu_platform(e: &OomEvent) -> Option<GpuPlatform> {
    if e.kind != OomKind::TorchCuda {
        None
    } else if e.message.contains("HIP out of memory") {
        Some(GpuPlatform::Hip)
    } else if e.message.contains("CUDA out of memory") {
        Some(GpuPlatform::Cuda)
    } else {
        None
    }
}

/// E1001's instruction, from the allocation type the reader wrote
/// (`scoped stack of custom-call <target>`, `scoped stack of <opcode>`,
/// `scoped memory for <name>`) and the op name.
fn old_scoped_instruction(e: &OomEvent) -> Option<ScopedInstruction> {
    if e.kind != OomKind::TpuScopedVmem {
        return None;
    }
    let t = e.top_allocations.first()?;
    let kind = t.allocation_type.as_deref().unwrap_or("");
    let op = t.op_name.as_deref().unwrap_or("");
    if kind.contains("custom-call") || op.contains("pallas_call") {
        Some(ScopedInstruction::CustomKernel)
    } else if kind.starts_with("scoped stack of ") {
        Some(ScopedInstruction::Compiler)
    } else {
        None
    }
}

/// The compiler's early abort, from its message (`Requires X, has Y
/// available`), naming the flag that lists allocations or not: the two
/// tests the diagnosis made of the carried text before field 14.
fn old_early_abort(e: &OomEvent) -> Option<EarlyAbort> {
    if !(e.message.contains("Requires ") && e.message.contains(" available")) {
        None
    } else if e.message.contains("oom_fast_exit") {
        Some(EarlyAbort::NamesListingFlag)
    } else {
        Some(EarlyAbort::Unnamed)
    }
}
