//! PyTorch's caching-allocator OOM (`c10/cuda/CUDACachingAllocator.cpp`) in
//! every generation:
//! - ≤ 1.x: `CUDA out of memory. Tried to allocate X (GPU 0; Y total capacity;
//!   Z already allocated; W free; [A allowed; ] V reserved in total by PyTorch)`
//!   (older: `V cached)`);
//! - ≥ 2.1: `CUDA out of memory. Tried to allocate X. GPU 0 has a total
//!   capacity of Y of which W is free. [Process P has M memory in use.]
//!   [Including non-PyTorch memory, this process has M memory in use.]
//!   [A allowed; ]Of the allocated memory Z is allocated by PyTorch, [with P
//!   allocated in private pools (e.g., CUDA Graphs), ]and B is reserved by
//!   PyTorch but unallocated.` (2.1 spelled "capacty"). HIP and XPU too;
//!   Intel's extension for PyTorch prints the old form without `W free; `,
//!   PyTorch 2.5's XPU allocator the new one without `of which W is free`;
//!   the device-generic allocator of the newest PyTorch
//!   (`c10/core/CachingDeviceAllocator.h`) starts `Out of memory. Tried to
//!   allocate X. GPU 0 has ...` with no device name.
//! - torch_npu (Ascend NPUs), the CUDA allocator's old form with the NPU
//!   named: `NPU out of memory. Tried to allocate X (NPU 0; Y total
//!   capacity; Z already allocated; C current active; W free; [A allowed; ]
//!   V reserved in total by PyTorch)` (`NPUCachingAllocator.cpp`; older:
//!   `... W free; V cached)`), and its workspace allocator's
//!   `NPU out of memory. NPUWorkspaceAllocator tried to allocate X(NPU 1; Y
//!   total capacity; W free)` (`NPUWorkspaceAllocator.cpp`).
//! - MPS (`MPSAllocator.mm`): `MPS backend out of memory (MPS allocated: A,
//!   other allocations: O[, max allowed: M]). Tried to allocate R on
//!   private|shared pool.` (see [`mps_oom`]).
//!
//! Sizes are `format_size`: `N bytes`, `x.xx KiB/MiB/GiB`. The message is
//! often wrapped over several lines, so up to a few following lines are read,
//! as a hard wrap (joined as they are: a terminal can cut mid-number), as a
//! soft wrap (joined with a space) and as both (the widest lines cut, the
//! others wrapped at words); the reading with more numbers wins, the hard
//! wrap on a tie (a soft join of a number cut in two could read a wrong one).
//!
//! `reserved` is the total reserved in every generation: `cached` (≤ 1.3),
//! `reserved in total by PyTorch` (1.4 – 2.0), allocated + reserved but
//! unallocated (≥ 2.1, where "allocated" includes the private pools).

use crate::event::{Expected, Field, Raw, Size};
use crate::site::{cap_size, find_size, lazy_regex, Glue, Outcome, Site};
use oomscope_report::{GpuPlatform, MemorySpace, OomKind};

lazy_regex!(
    re_tried,
    r"(?:(CUDA|HIP|XPU|NPU) out of memory|Out of memory)\.\s*(?:NPUWorkspaceAllocator t|T)ried to allocate SIZE"
);
lazy_regex!(
    re_tried_headless,
    r"Tried to allocate SIZE(?:\s*\(GPU \d+;|\.\s*GPU \d+ has a total capac)"
);
lazy_regex!(re_device, r"[GN]PU (\d+)");
lazy_regex!(
    re_npu_workspace,
    r"NPUWorkspaceAllocator tried to allocate SIZE\s*\(NPU \d+;\s*SIZE total capacity;\s*SIZE free\)"
);
lazy_regex!(re_capacity_new, r"total capac\w* of SIZE");
lazy_regex!(re_capacity_old, r"SIZE total capacity");
lazy_regex!(re_free_new, r"of which SIZE is free");
lazy_regex!(re_free_old, r"SIZE free\b");
lazy_regex!(re_already, r"SIZE already allocated");
lazy_regex!(re_reserved_total, r"SIZE reserved in total by PyTorch");
lazy_regex!(re_cached, r"SIZE cached\)");
lazy_regex!(re_allowed, r"SIZE allowed;");
lazy_regex!(
    re_no_free_clause,
    r"already allocated;\s*SIZE reserved in total|total capacity of SIZE\.\s*Of the allocated"
);
lazy_regex!(re_this_process, r"this process has SIZE memory in use");
lazy_regex!(re_process, r"Process (\d+) has SIZE memory in use");
lazy_regex!(re_by_pytorch, r"SIZE is allocated by PyTorch");
lazy_regex!(re_private, r"with SIZE allocated in private pools");
lazy_regex!(
    re_unallocated,
    r"SIZE is reserved by PyTorch but unallocated"
);

/// Lines after the keyword that a wrapped message may take.
const WRAP_LINES: usize = 8;
/// Other processes listed at most.
const MAX_PROCESSES: usize = 16;

pub fn cuda_oom(site: &Site) -> Outcome {
    best_reading(site, read)
}

/// The message read from the anchor's line joined with the following ones
/// as a hard wrap, a soft wrap, and both (see [`Glue`]): the reading with
/// the most numbers, the first of them on a tie (a soft join of a number
/// cut in two could read a wrong one).
fn best_reading(site: &Site, read: fn(&Site, &str) -> Option<Raw>) -> Outcome {
    let mut best: Option<Raw> = None;
    let mut texts: Vec<String> = Vec::with_capacity(3);
    let mut joined_end = site.next_line();
    for glue in [Glue::HardWrap, Glue::Space, Glue::Mixed] {
        let (text, end) = site.joined_to(WRAP_LINES, glue);
        joined_end = end;
        // A message on one line reads the same every way: read it once.
        if texts.contains(&text) {
            continue;
        }
        let reading = read(site, &text);
        texts.push(text);
        if let Some(r) = reading {
            if best.as_ref().is_none_or(|b| r.count() > b.count()) {
                best = Some(r);
            }
        }
    }
    // When the request is not on the keyword's line, the lines read after
    // it (`Tried to allocate ...` among them) are this message's rest.
    let end = if site.head().contains("Tried to allocate") {
        site.next_line()
    } else {
        joined_end
    };
    match best {
        Some(b) => Outcome::Event(Box::new(b), end),
        None => Outcome::NoMatch,
    }
}

lazy_regex!(
    re_mps_allocated,
    r"MPS backend out of memory \(MPS allocated: SIZE"
);
lazy_regex!(re_mps_other, r"other allocations: SIZE");
lazy_regex!(re_mps_max_allowed, r"max allowed: SIZE");
lazy_regex!(
    re_mps_tried,
    r"\)\.\s*Tried to allocate SIZE(?:\s*on (shared|private) pool)?"
);

/// PyTorch's MPS allocator (`aten/src/ATen/mps/MPSAllocator.mm`,
/// `alloc_buffer_block`), two forms: with the high watermark set (the
/// default) `MPS backend out of memory (MPS allocated: A, other allocations:
/// O, max allowed: M). Tried to allocate R on private|shared pool. Use
/// PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory
/// allocations (may cause system failure).`, without it the same less `max
/// allowed` and the advice. Sizes are `format_size`, binary whether printed
/// `GB` (PyTorch ≤ 2.2) or `GiB`.
///
/// "MPS allocated" is the heaps the allocator holds (`reserved`, as CUDA's
/// reserved); "other allocations" the rest of the process's Metal memory
/// (`extra.other_allocations_bytes`); "max allowed" the watermark (`limit`).
pub fn mps_oom(site: &Site) -> Outcome {
    best_reading(site, read_mps)
}

fn read_mps(site: &Site, text: &str) -> Option<Raw> {
    let start = text.find("MPS backend out of memory")?;
    let body = &text[start..];
    let mut raw = Raw::new(
        OomKind::TorchCuda,
        MemorySpace::Mps,
        "torch_mps_oom",
        site.head(),
    );
    raw.set(Field::Reserved, find_size(re_mps_allocated(), body));
    raw.set_extra("other_allocations_bytes", find_size(re_mps_other(), body));
    let limit = find_size(re_mps_max_allowed(), body);
    raw.set(Field::Limit, limit);
    raw.set(Field::Requested, find_size(re_mps_tried(), body));
    raw.expect(&[
        Expected::Field(Field::Reserved),
        Expected::Extra("other_allocations_bytes"),
        Expected::Field(Field::Requested),
    ]);
    // Only the watermark form prints `max allowed`: expected once the text
    // shows which form it is.
    if limit.is_some() || body.contains(", max allowed") {
        raw.expect(&[Expected::Field(Field::Limit)]);
    }
    Some(raw)
}

/// The message read from `text` (the anchor's line joined with what follows).
fn read(site: &Site, text: &str) -> Option<Raw> {
    // The message, or its rest when a paste cut its first words off
    // (`Tried to allocate X (GPU 0; ...`): what follows the request is the
    // allocator's own grammar, the device type is lost (read as a GPU).
    let (c, size_group) = match re_tried().captures(text) {
        Some(c) => (c, 2),
        None => (re_tried_headless().captures(text)?, 1),
    };
    let named = c.get(1).filter(|_| size_group == 2).map(|d| d.as_str());
    let space = match named {
        Some("XPU") => MemorySpace::Xpu,
        Some("NPU") => MemorySpace::Npu,
        _ => MemorySpace::Gpu,
    };
    // Fields are read after the headline only, so text before it on the line
    // (another message) cannot lend numbers.
    let body = &text[c.get(0).map_or(0, |m| m.start())..];
    let mut raw = Raw::new(OomKind::TorchCuda, space, "torch_oom", site.head());
    raw.gpu_platform = match named {
        Some("CUDA") => Some(GpuPlatform::Cuda),
        Some("HIP") => Some(GpuPlatform::Hip),
        _ => None,
    };
    raw.set(Field::Requested, cap_size(&c, size_group));
    if let Some(d) = re_device().captures(body) {
        if let Ok(n) = d[1].parse::<u64>() {
            raw.set_extra("device", Some(Size::exact(n)));
        }
    }
    let old_form =
        body.contains("(GPU") || body.contains("(NPU") || body.contains("total capacity;");
    raw.set(
        Field::TotalCapacity,
        find_size(re_capacity_new(), body).or_else(|| find_size(re_capacity_old(), body)),
    );
    raw.set(
        Field::Free,
        find_size(re_free_new(), body).or_else(|| find_size(re_free_old(), body)),
    );
    let allowed = find_size(re_allowed(), body);
    raw.set_extra("allowed_bytes", allowed);
    // `A allowed;` is printed before the reserved figures: the capacity is
    // the limit only when the text reaches them without one.
    let past_allowed = body.contains("Of the allocated memory")
        || body.contains("reserved in total")
        || body.contains("cached)");
    if allowed.is_some() || past_allowed {
        raw.set(Field::Limit, allowed.or(raw.get(Field::TotalCapacity)));
    }
    raw.set_extra("process_in_use_bytes", find_size(re_this_process(), body));
    for p in re_process().captures_iter(body).take(MAX_PROCESSES) {
        raw.set_extra(&format!("process_{}_in_use_bytes", &p[1]), cap_size(&p, 2));
    }
    raw.set(Field::PrivatePools, find_size(re_private(), body));
    // ≤ 1.x: "already allocated" and "reserved in total" (≤ 1.3: "cached").
    raw.set(Field::Allocated, find_size(re_already(), body));
    raw.set(Field::Reserved, find_size(re_reserved_total(), body));
    raw.set(Field::Reserved, find_size(re_cached(), body));
    // ≥ 2.1: reserved = allocated (private pools included) + reserved but unallocated.
    let allocated = find_size(re_by_pytorch(), body);
    let unallocated = find_size(re_unallocated(), body);
    raw.set(Field::Allocated, allocated);
    raw.set(Field::ReservedUnallocated, unallocated);
    if let (Some(a), Some(u)) = (allocated, unallocated) {
        raw.set(
            Field::Reserved,
            Some(Size {
                bytes: a.bytes.saturating_add(u.bytes),
                exact: a.exact && u.exact,
                step: a.step.saturating_add(u.step),
            }),
        );
    }
    // The workspace allocator prints the request, the capacity and what is
    // free, nothing of the caching allocator: complete at its `)`.
    if body.contains("NPUWorkspaceAllocator") {
        if re_npu_workspace().is_match(body) {
            raw.set(Field::Limit, raw.get(Field::TotalCapacity));
        }
        raw.expect(&[
            Expected::Field(Field::Limit),
            Expected::Field(Field::Requested),
            Expected::Field(Field::TotalCapacity),
            Expected::Field(Field::Free),
        ]);
        return Some(raw);
    }
    let common = [
        Expected::Field(Field::Limit),
        Expected::Field(Field::Requested),
        Expected::Field(Field::TotalCapacity),
        Expected::Field(Field::Allocated),
        Expected::Field(Field::Reserved),
    ];
    raw.expect(&common);
    // Two printers have no free clause: Intel's extension (IPEX), old form
    // `(GPU 0; T total capacity; A already allocated; R reserved in total
    // by PyTorch)`, and PyTorch 2.5's XPU allocator, `GPU 0 has a total
    // capacity of T. Of the allocated memory ...`.
    if !re_no_free_clause().is_match(body) {
        raw.expect(&[Expected::Field(Field::Free)]);
    }
    // ≥ 2.1 only; a message cut right after the request could be either.
    if !old_form && (body.contains("has a total capac") || body.contains("Of the allocated memory"))
    {
        raw.expect(&[Expected::Field(Field::ReservedUnallocated)]);
    }
    Some(raw)
}

#[cfg(test)]
mod tests {
    use crate::parse_oom_log;

    /// Branches no posted message shows yet, written from the printers'
    /// literals: PyTorch 2.5's XPU allocator (no free clause) and the
    /// device-generic allocator of the newest PyTorch (no device name).
    #[test]
    fn printer_branches_without_a_posted_message() {
        let gib = |v: f64| (v * (1u64 << 30) as f64).round() as u64;
        let xpu = "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.11 GiB. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated. Please use `empty_cache` to release all unoccupied cached memory.";
        let e = &parse_oom_log("xpu", xpu)[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Xpu);
        assert_eq!(e.total_capacity_bytes, Some(gib(15.11)));
        assert_eq!(e.reserved_bytes, Some(gib(13.00)));
        assert_eq!(e.free_bytes, None);
        assert!(e.missing.is_empty(), "{:?}", e.missing);
        let generic = "torch.OutOfMemoryError: Out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.50 GiB is free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 5.00 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
        let e = &parse_oom_log("generic", generic)[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Gpu);
        assert_eq!(e.extra["device"], 1);
        assert_eq!(e.requested_bytes, Some(gib(2.00)));
        assert_eq!(e.free_bytes, Some(gib(1.50)));
        assert_eq!(e.reserved_bytes, Some(gib(75.00)));
        assert!(e.missing.is_empty(), "{:?}", e.missing);
        // torch_npu's caching allocator (`NPUCachingAllocator.cpp`): the
        // old CUDA form with the NPU named and its active bytes.
        let npu = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.96 GiB total capacity; 55.10 GiB already allocated; 55.10 GiB current active; 1.20 GiB free; 58.00 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.";
        let e = &parse_oom_log("npu", npu)[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Npu);
        assert_eq!(e.extra["device"], 3);
        assert_eq!(e.requested_bytes, Some(gib(2.00)));
        assert_eq!(e.limit_bytes, Some(gib(60.96)));
        assert_eq!(e.allocated_bytes, Some(gib(55.10)));
        assert_eq!(e.free_bytes, Some(gib(1.20)));
        assert_eq!(e.reserved_bytes, Some(gib(58.00)));
        assert!(e.missing.is_empty(), "{:?}", e.missing);
        // Its workspace allocator prints three numbers; a cut one misses some.
        let workspace = "NPU out of memory. NPUWorkspaceAllocator tried to allocate 180.00 MiB(NPU 1; 60.96 GiB total capacity; 86.81 MiB free). If you want to reduce memory usage, take a try to set the environment variable TASK_QUEUE_ENABLE=1.";
        let e = &parse_oom_log("workspace", workspace)[0];
        assert_eq!(e.memory_space, oomscope_report::MemorySpace::Npu);
        assert_eq!(e.requested_bytes, Some(180 << 20));
        assert_eq!(e.limit_bytes, Some(gib(60.96)));
        assert_eq!(
            e.free_bytes,
            Some((86.81 * (1u64 << 20) as f64).round() as u64)
        );
        assert!(e.missing.is_empty(), "{:?}", e.missing);
        let cut = &parse_oom_log("cut", &workspace[..100])[0];
        assert!(!cut.missing.is_empty());
        // XLA's "Out of memory while trying to allocate" stays XLA's.
        let xla = parse_oom_log(
            "xla",
            "Out of memory while trying to allocate 4000000000 bytes.",
        );
        assert_eq!(xla[0].kind, oomscope_report::OomKind::XlaGpu);
    }
}
