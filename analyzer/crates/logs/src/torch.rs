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
//!   PyTorch but unallocated.` (2.1 spelled "capacty"). HIP and XPU too.
//!
//! Sizes are `format_size`: `N bytes`, `x.xx KiB/MiB/GiB`. The message is
//! often wrapped over several lines, so up to a few following lines are read,
//! both as a hard wrap (joined as they are: a terminal can cut mid-number) and
//! as a soft wrap (joined with a space); the reading with more numbers wins,
//! the hard wrap on a tie (a soft join of a number cut in two could read a
//! wrong one).
//!
//! `reserved` is the total reserved in every generation: `cached` (≤ 1.3),
//! `reserved in total by PyTorch` (1.4 – 2.0), allocated + reserved but
//! unallocated (≥ 2.1, where "allocated" includes the private pools).

use crate::event::{Expected, Field, Raw, Size};
use crate::site::{cap_size, find_size, lazy_regex, Glue, Outcome, Site};
use oomscope_report::{MemorySpace, OomKind};

lazy_regex!(
    re_tried,
    r"(CUDA|HIP|XPU) out of memory\.\s*Tried to allocate SIZE"
);
lazy_regex!(re_device, r"GPU (\d+)");
lazy_regex!(re_capacity_new, r"total capac\w* of SIZE");
lazy_regex!(re_capacity_old, r"SIZE total capacity");
lazy_regex!(re_free_new, r"of which SIZE is free");
lazy_regex!(re_free_old, r"SIZE free\b");
lazy_regex!(re_already, r"SIZE already allocated");
lazy_regex!(re_reserved_total, r"SIZE reserved in total by PyTorch");
lazy_regex!(re_cached, r"SIZE cached\)");
lazy_regex!(re_allowed, r"SIZE allowed;");
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
    let hard = read(site, &site.joined(WRAP_LINES, Glue::HardWrap));
    let soft = read(site, &site.joined(WRAP_LINES, Glue::Space));
    let best = match (hard, soft) {
        (Some(h), Some(s)) if s.count() > h.count() => s,
        (Some(h), _) => h,
        (None, Some(s)) => s,
        (None, None) => return Outcome::NoMatch,
    };
    Outcome::Event(Box::new(best), site.next_line())
}

/// The message read from `text` (the anchor's line joined with what follows).
fn read(site: &Site, text: &str) -> Option<Raw> {
    let c = re_tried().captures(text)?;
    let space = if &c[1] == "XPU" { MemorySpace::Xpu } else { MemorySpace::Gpu };
    // Fields are read after the headline only, so text before it on the line
    // (another message) cannot lend numbers.
    let body = &text[c.get(0).map_or(0, |m| m.start())..];
    let mut raw = Raw::new(OomKind::TorchCuda, space, "torch_oom", site.head());
    raw.set(Field::Requested, cap_size(&c, 2));
    if let Some(d) = re_device().captures(body) {
        if let Ok(n) = d[1].parse::<u64>() {
            raw.set_extra("device", Some(Size::exact(n)));
        }
    }
    let old_form = body.contains("(GPU") || body.contains("total capacity;");
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
    let common = [
        Expected::Field(Field::Limit),
        Expected::Field(Field::Requested),
        Expected::Field(Field::TotalCapacity),
        Expected::Field(Field::Free),
        Expected::Field(Field::Allocated),
        Expected::Field(Field::Reserved),
    ];
    raw.expect(&common);
    if !old_form {
        raw.expect(&[Expected::Field(Field::ReservedUnallocated)]);
    }
    Some(raw)
}
