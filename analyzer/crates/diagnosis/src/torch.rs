//! GPU allocator OOMs: PyTorch's caching allocator (CUDA and HIP, every
//! generation of its message) and XLA's BFC allocator. The message's own
//! numbers decide which node applies, in this order:
//!
//! 1. `torch.non_pytorch_memory`: memory the framework does not hold is most
//!    of the device (capacity − free − reserved), a per-process limit is set
//!    far below the device, or "free" is many times the request;
//! 2. `torch.private_pools`: CUDA graphs' private pools hold at least the
//!    request and a quarter of what PyTorch allocated;
//! 3. `torch.fragmentation`: reserved-but-unallocated memory (BFC: free
//!    memory under the limit) could hold the request, but no block does;
//! 4. `torch.capacity`: otherwise the device is full.
//!
//! Before all of them, `torch.allocation_limit`: an Intel GPU (XPU)
//! refuses one allocation above its single-allocation limit (just under
//! 4 GiB) whatever is free.

use oomscope_report::{Confidence, Headline, MemorySnapshot, OomEvent, OomKind, Report, Severity};

use crate::facts::{gib, pct_fact, pct_text, signed};
use crate::ids::*;
use crate::node::NodeEval;

/// "Free" at least this many times the request: something other than
/// PyTorch's memory decides.
const FREE_OVER_REQUEST: u64 = 8;
/// Memory outside the framework at least this share of the device.
const OUTSIDE_SHARE: f64 = 0.5;
/// A per-process limit under this share of the device is a limit, not the device.
const ALLOWED_SHARE: f64 = 0.9;
/// Level Zero's largest single allocation on Intel GPUs without relaxed
/// allocation limits (`maxMemAllocSize`, 4 GiB less 8 KiB).
const XPU_MAX_ALLOCATION: u64 = (4 << 30) - 8192;

/// JAX/XLA's default preallocated share of a GPU.
const XLA_DEFAULT_FRACTION: f64 = 0.75;

/// What `XLA_PYTHON_CLIENT_MEM_FRACTION=.95` adds to a limit that is JAX's
/// default share of the GPU.
fn preallocation_more(limit: u64) -> u64 {
    (limit as f64 * (0.95 / XLA_DEFAULT_FRACTION - 1.0)) as u64
}

/// Whether `e` is a GPU allocator OOM this module decides.
pub(crate) fn is_gpu_event(e: &OomEvent) -> bool {
    matches!(e.kind, OomKind::TorchCuda | OomKind::XlaGpu)
}

/// The numbers of one GPU OOM message, whichever allocator printed it.
#[derive(Debug, Clone, Default)]
struct GpuFacts {
    bfc: bool,
    requested: Option<u64>,
    /// Device capacity (PyTorch) or the allocator's limit (BFC).
    capacity: Option<u64>,
    free: Option<u64>,
    /// In use by tensors (PyTorch "allocated by PyTorch", BFC InUse).
    allocated: Option<u64>,
    /// Total reserved by the caching allocator.
    reserved: Option<u64>,
    /// Reserved but not allocated (PyTorch), free under the limit (BFC).
    cached_free: Option<u64>,
    private_pools: Option<u64>,
    /// Everything this process uses, PyTorch or not.
    process: Option<u64>,
    /// A per-process limit (`N allowed`).
    allowed: Option<u64>,
    largest_free_block: Option<u64>,
}

fn gpu_facts(e: &OomEvent) -> GpuFacts {
    let x = |k: &str| e.extra.get(k).copied();
    let bfc = e.kind == OomKind::XlaGpu;
    let allocated = e
        .allocated_bytes
        .or_else(|| x("in_use_bytes"))
        .or_else(|| x("sum_in_use_chunks_bytes"))
        .or_else(|| x("in_use_chunks_bytes"));
    // PyTorch: the device's capacity (its limit may be a per-process
    // `allowed` share, read separately); BFC: the allocator's limit.
    let capacity = if bfc {
        e.limit()
    } else {
        e.total_capacity_bytes.or_else(|| e.limit())
    };
    let cached_free = if bfc {
        match (capacity, allocated) {
            (Some(c), Some(a)) => Some(c.saturating_sub(a)),
            _ => None,
        }
    } else {
        e.reserved_unallocated_bytes
            .or_else(|| x("reserved_unallocated_bytes"))
            .or_else(|| match (e.reserved_bytes, allocated) {
                (Some(r), Some(a)) => Some(r.saturating_sub(a)),
                _ => None,
            })
    };
    GpuFacts {
        bfc,
        requested: e.requested_bytes,
        capacity,
        free: e.free_bytes,
        allocated,
        reserved: e.reserved_bytes,
        cached_free,
        private_pools: e.private_pools_bytes.or_else(|| x("private_pools_bytes")),
        process: x("process_in_use_bytes"),
        allowed: x("allowed_bytes"),
        largest_free_block: x("largest_free_block_bytes").or_else(|| x("largest_free_chunk_bytes")),
    }
}

impl GpuFacts {
    /// Memory on the device (or in this process) the framework does not hold.
    fn outside(&self) -> Option<(u64, &'static str)> {
        if let (Some(p), Some(r)) = (self.process, self.reserved) {
            if p > r {
                return Some((p - r, "this process uses beyond what PyTorch reserved"));
            }
        }
        // What the caching allocator holds is never below what it has
        // allocated: PyTorch <= 1.3 printed only the unallocated part
        // ("N cached"), which a reader may give as reserved.
        let reserved = match (self.reserved, self.allocated) {
            (Some(r), Some(a)) => Some(r.max(a)),
            (r, _) => r,
        };
        match (self.capacity, self.free, reserved) {
            (Some(c), Some(f), Some(r)) if c > f.saturating_add(r) => {
                Some((c - f - r, "capacity − free − reserved by PyTorch"))
            }
            _ => None,
        }
    }
}

/// The evaluated GPU nodes and the headline.
pub(crate) struct TorchEval {
    pub leaf: &'static str,
    pub nodes: Vec<NodeEval>,
    pub headline: Headline,
    pub summary: String,
}

/// The GPU OOM of the report that states the most, if any.
pub(crate) fn primary_gpu_event(report: &Report) -> Option<&OomEvent> {
    report
        .oom_events
        .iter()
        .filter(|e| is_gpu_event(e))
        .max_by_key(|e| {
            (
                e.requested_bytes.is_some(),
                e.limit().is_some(),
                e.extra.len()
                    + usize::from(e.free_bytes.is_some())
                    + usize::from(e.reserved_bytes.is_some()),
            )
        })
}

/// The memory snapshot whose `oom` is this event: the same input and device
/// (the event came from it), else the one snapshot OOM asking for the same
/// bytes (a CUDA OOM log of the same run dropped with it).
pub(crate) fn snapshot_of<'a>(report: &'a Report, e: &OomEvent) -> Option<&'a MemorySnapshot> {
    let device = e.extra.get("cuda_device").copied();
    let with_oom = || report.memory_snapshots.iter().filter(|s| s.oom.is_some());
    with_oom()
        .find(|s| s.input == e.input && device.is_none_or(|d| d == u64::from(s.device)))
        .or_else(|| {
            // A message prints the request with two decimals.
            let close = |a: u64, b: u64| a.abs_diff(b) as f64 <= a.max(b) as f64 * 0.005;
            let mut same = with_oom().filter(|s| {
                matches!((s.oom.as_ref(), e.requested_bytes), (Some(o), Some(r)) if close(o.requested_bytes, r))
            });
            let first = same.next();
            first.filter(|_| same.next().is_none())
        })
}

pub(crate) fn evaluate(e: &OomEvent, snap: Option<&MemorySnapshot>) -> TorchEval {
    let mut g = gpu_facts(e);
    if let Some(s) = snap {
        // The snapshot's pools are exact; the message may not state them.
        if g.private_pools.is_none() && s.private_pool_bytes > 0 {
            g.private_pools = Some(s.private_pool_bytes);
        }
    }
    let would_return = snap
        .map(|s| s.expandable_segments_would_return_bytes)
        .filter(|b| *b > 0);
    let holders: Vec<String> = snap
        .map(|s| {
            s.top_lines_at_peak
                .iter()
                .take(3)
                .map(|l| format!("{} ({} in {})", l.frame, gib(l.bytes), l.count))
                .collect()
        })
        .unwrap_or_default();
    let who = if g.bfc { "XLA" } else { "PyTorch" };
    let req = g.requested.unwrap_or(0);
    let outside = g.outside();
    let limit_set = match (g.allowed, g.capacity) {
        (Some(a), Some(c)) => (a as f64) < c as f64 * ALLOWED_SHARE,
        _ => false,
    };
    let free_far_above = match (g.free, g.requested) {
        (Some(f), Some(r)) if r > 0 => f >= r.saturating_mul(FREE_OVER_REQUEST),
        _ => false,
    };
    let outside_large = match (outside, g.capacity) {
        (Some((o, _)), Some(c)) => o as f64 >= c as f64 * OUTSIDE_SHARE,
        _ => false,
    };
    let non_framework = limit_set || free_far_above || outside_large;
    let pools = g.private_pools.filter(|p| {
        *p >= req && req > 0 && g.allocated.is_none_or(|a| *p as f64 >= a as f64 * 0.25)
    });
    let fragmented = match (g.cached_free, g.requested) {
        (Some(cf), Some(r)) if r > 0 && cf >= r => {
            // BFC: enough free under the limit, but no block that large.
            !g.bfc || g.largest_free_block.is_none_or(|b| b < r)
        }
        _ => false,
    };
    // An XPU request over the single-allocation limit that the device had
    // room for: as much free, or (no free clause) PyTorch's reserve and
    // the request within the capacity.
    let over_allocation_limit = e.memory_space == oomscope_report::MemorySpace::Xpu
        && req >= XPU_MAX_ALLOCATION
        && match (g.free, g.capacity) {
            (Some(f), _) => f >= req,
            (None, Some(c)) => g.reserved.unwrap_or(0).saturating_add(req) <= c,
            (None, None) => false,
        };
    let leaf = if over_allocation_limit {
        TORCH_ALLOCATION_LIMIT
    } else if non_framework {
        TORCH_NON_PYTORCH
    } else if pools.is_some() {
        TORCH_PRIVATE_POOLS
    } else if fragmented {
        TORCH_FRAGMENTATION
    } else {
        TORCH_CAPACITY
    };

    let mut nodes = Vec::new();
    let request_text = g.requested.map_or_else(
        || "the request".to_string(),
        |r| format!("the {} request", gib(r)),
    );

    // Memory outside the framework.
    let mut np = NodeEval::new(TORCH_NON_PYTORCH, "");
    let mut np_estimate = None;
    if let Some((o, how)) = outside {
        np.fact("outside_bytes", o);
        np_estimate = Some(o);
        np.fact("outside_how", how);
    }
    np.reason = if limit_set {
        let (a, c) = (g.allowed.unwrap_or(0), g.capacity.unwrap_or(0));
        format!(
            "The process may use only {} of the {} device ({}): a per-process limit (memory fraction, MIG slice or driver limit) fails {request_text}{}.",
            gib(a),
            gib(c),
            pct_text(a, c),
            g.free.map(|f| format!(" while {} of the device is free", gib(f))).unwrap_or_default()
        )
    } else if free_far_above {
        format!(
            "The device reports {} free, {}× {request_text}: the allocation failed for another reason than the memory {who} holds (another process, a driver or MIG limit, NCCL or the CUDA context).",
            gib(g.free.unwrap_or(0)),
            g.free.unwrap_or(0) / req.max(1)
        )
    } else if let (Some((o, _)), Some(c)) = (outside, g.capacity) {
        format!(
            "{} of the {} device ({}) is used outside {who}: {who} reserved {}{}.",
            gib(o),
            gib(c),
            pct_text(o, c),
            gib(g.reserved.unwrap_or(0)),
            g.free
                .map(|f| format!(" and {} is free", gib(f)))
                .unwrap_or_default()
        )
    } else {
        format!("The message does not give what {who} holds against the device's use, so memory outside {who} cannot be measured.")
    };
    if leaf == TORCH_NON_PYTORCH {
        np.action(
            "other_processes",
            "",
            np_estimate.map(|o| {
                (
                    signed(o),
                    "capacity − free − reserved by the framework, from the message".to_string(),
                )
            }),
        );
        np.action(
            "memory_limit",
            &g.allowed
                .map(|a| format!("The limit here is {}.", gib(a)))
                .unwrap_or_default(),
            None,
        );
    }
    if g.bfc {
        np.action("xla_preallocate", "", None);
    }
    nodes.push(np);

    // Private pools.
    let mut pp = NodeEval::new(TORCH_PRIVATE_POOLS, "");
    match g.private_pools {
        Some(p) => {
            pp.fact("private_pools_bytes", p);
            pp.reason = format!(
                "{} is allocated in private pools (CUDA graphs){}; {request_text} {}.",
                gib(p),
                g.allocated
                    .map(|a| format!(", {} of the {} {who} allocated", pct_text(p, a), gib(a)))
                    .unwrap_or_default(),
                if p >= req {
                    "is no larger"
                } else {
                    "is larger"
                }
            );
            if leaf == TORCH_PRIVATE_POOLS {
                pp.action(
                    "cuda_graphs",
                    &format!("They hold {}.", gib(p)),
                    Some((signed(p), "private pool bytes from the message".into())),
                );
            }
        }
        None => pp.reason = "The message reports no memory in private pools (CUDA graphs).".into(),
    }
    nodes.push(pp);

    // Fragmentation.
    let mut fr = NodeEval::new(TORCH_FRAGMENTATION, "");
    if let Some(cf) = g.cached_free {
        fr.fact(
            if g.bfc {
                "free_under_limit_bytes"
            } else {
                "reserved_unallocated_bytes"
            },
            cf,
        );
    }
    if let Some(b) = g.largest_free_block {
        fr.fact("largest_free_block_bytes", b);
    }
    if let Some(w) = would_return {
        fr.fact("expandable_segments_would_return_bytes", w);
    }
    if let Some(s) = snap {
        fr.fact("inactive_bytes", s.inactive_bytes);
        fr.fact("free_internal_bytes", s.free_internal_bytes);
        fr.fact("free_external_bytes", s.free_external_bytes);
    }
    fr.reason = match (g.cached_free, g.bfc) {
        (Some(cf), false) => format!(
            "{} is reserved by PyTorch but unallocated, {} {request_text}{}.",
            gib(cf),
            if cf >= req { "at least" } else { "less than" },
            if cf >= req {
                ": the cache holds enough memory in pieces too small, and expandable segments would let it serve the request"
            } else {
                ": fragmentation alone does not explain the failure"
            }
        ),
        (Some(cf), true) => format!(
            "{} is free under the allocator's {} limit, {} {request_text}{}.",
            gib(cf),
            gib(g.capacity.unwrap_or(0)),
            if cf >= req { "at least" } else { "less than" },
            match g.largest_free_block {
                Some(b) => format!("; the largest free block is {}", gib(b)),
                None => String::new(),
            }
        ),
        (None, _) => {
            "The message gives neither reserved-but-unallocated memory nor free chunks.".into()
        }
    };
    if leaf == TORCH_FRAGMENTATION {
        let cf = g.cached_free.unwrap_or(0);
        if g.bfc {
            fr.action(
                "bfc_async",
                &format!("{} is free but split.", gib(cf)),
                Some((signed(cf), "limit − in use, from the BFC dump".into())),
            );
        } else {
            match would_return {
                Some(w) => fr.action(
                    "expandable_segments",
                    &format!(
                        "The snapshot's inactive blocks stranded between live ones hold {}: it would return them (of {} reserved but unallocated).",
                        gib(w),
                        gib(cf)
                    ),
                    Some((
                        signed(w),
                        "inactive bytes between live blocks of ordinary segments, from the memory snapshot".into(),
                    )),
                ),
                None => fr.action(
                    "expandable_segments",
                    &format!("It would return up to {} to the allocator.", gib(cf)),
                    Some((
                        signed(cf),
                        "reserved but unallocated bytes, from the message".into(),
                    )),
                ),
            }
            fr.action("max_split_size", "", None);
        }
    }
    nodes.push(fr);

    // Capacity.
    let mut cap = NodeEval::new(TORCH_CAPACITY, "");
    if let Some(c) = g.capacity {
        cap.fact("capacity_bytes", c);
        if let Some(a) = g.allocated {
            cap.fact("allocated_bytes", a);
            cap.fact("allocated_pct_of_capacity", pct_fact(a, c));
        }
    }
    let needed = match (g.requested, g.free, g.cached_free) {
        (Some(r), Some(f), _) => Some(r.saturating_sub(f)),
        (Some(r), None, Some(cf)) => Some(r.saturating_sub(cf)),
        _ => None,
    };
    cap.reason = match (g.allocated, g.capacity) {
        (Some(a), Some(c)) => format!(
            "{who} has {} allocated of {} ({}){}; {request_text} needs {} more than is free.",
            gib(a),
            gib(c),
            pct_text(a, c),
            g.free
                .map(|f| format!(", {} free", gib(f)))
                .unwrap_or_default(),
            gib(needed.unwrap_or(0))
        ),
        (Some(a), None) => format!(
            "{who} has {} allocated{}{}; the device's capacity is not recorded; {request_text} needs {} more than is free.",
            gib(a),
            g.reserved
                .map(|r| format!(" ({} reserved)", gib(r)))
                .unwrap_or_default(),
            g.free
                .map(|f| format!(", {} free on the device", gib(f)))
                .unwrap_or_default(),
            gib(needed.unwrap_or(0))
        ),
        _ => format!("The message does not say how much {who} has allocated of the device."),
    };
    if leaf == TORCH_CAPACITY {
        if let Some(n) = needed {
            cap.fact("needed_bytes", n);
        }
        let need = needed
            .map(|n| format!("At least {} must go.", gib(n)))
            .unwrap_or_default();
        let need = if holders.is_empty() {
            need
        } else {
            cap.fact("top_lines_at_peak", holders.clone());
            format!(
                "{need} The biggest holders at the peak: {}.",
                holders.join("; ")
            )
            .trim_start()
            .to_string()
        };
        if g.bfc {
            // XLA's BFC allocator: a JAX (or TensorFlow) job, advised in its API.
            match g.capacity {
                Some(c) => {
                    let more = preallocation_more(c);
                    cap.action(
                        "preallocation",
                        &format!(
                            "If this limit is the default 75% (the device would then have {}), XLA_PYTHON_CLIENT_MEM_FRACTION=.95 adds about {}.",
                            gib((c as f64 / XLA_DEFAULT_FRACTION) as u64),
                            gib(more)
                        ),
                        Some((signed(more), "limit × (0.95 / 0.75 − 1), assuming the default preallocation".into())),
                    );
                }
                None => cap.action("preallocation", "", None),
            }
            cap.action("checkpointing_jax", &need, None);
            cap.action("mixed_precision_jax", "", None);
            cap.action("batch", "", None);
            cap.action("shard_state_jax", "", None);
        } else {
            cap.action("checkpointing", &need, None);
            cap.action("mixed_precision", "", None);
            cap.action("batch", "", None);
            cap.action("shard_state", "", None);
        }
    }
    nodes.push(cap);

    // One allocation above an Intel GPU's limit.
    let mut al = NodeEval::new(TORCH_ALLOCATION_LIMIT, "");
    al.reason = if over_allocation_limit {
        format!(
            "{request_text} is above the {} an Intel GPU allocates at once without relaxed allocation limits, and the device had room for it{}.",
            gib(XPU_MAX_ALLOCATION),
            g.free
                .map(|f| format!(" ({} free)", gib(f)))
                .unwrap_or_default()
        )
    } else if e.memory_space == oomscope_report::MemorySpace::Xpu {
        format!(
            "{request_text} is not above the {} single-allocation limit with room on the device.",
            gib(XPU_MAX_ALLOCATION)
        )
    } else {
        "Only Intel GPUs (XPU) limit one allocation below the device's memory.".into()
    };
    if over_allocation_limit {
        al.fact("requested_bytes", req);
        al.fact("single_allocation_limit_bytes", XPU_MAX_ALLOCATION);
        al.action("relaxed_limits", "", None);
        al.action("split_tensor", "", None);
    }
    nodes.push(al);

    for n in &mut nodes {
        n.selected = n.id == leaf;
    }

    let start = format!(
        "{} out of memory: asked for {}{}{}",
        e.source_words(),
        g.requested.map_or_else(|| "memory".to_string(), gib),
        g.capacity
            .map(|c| format!(
                " on a {} {}",
                gib(c),
                if g.bfc { "allocator limit" } else { "device" }
            ))
            .unwrap_or_default(),
        g.free
            .map(|f| format!(", {} free", gib(f)))
            .unwrap_or_default(),
    );
    let (step, estimate, confidence) = match leaf {
        TORCH_ALLOCATION_LIMIT => (
            format!(
                "one allocation of {} is above the Intel GPU's single-allocation limit ({}): set UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1, or keep each tensor under 4 GiB",
                gib(req),
                gib(XPU_MAX_ALLOCATION)
            ),
            None,
            None,
        ),
        TORCH_NON_PYTORCH => (
            if limit_set {
                format!("raise the per-process limit ({} allowed of {}): torch.cuda.set_per_process_memory_fraction, the MIG slice or the container's limit", gib(g.allowed.unwrap_or(0)), gib(g.capacity.unwrap_or(0)))
            } else {
                format!(
                    "find what else holds the GPU{}: other processes (nvidia-smi), NCCL buffers, the CUDA context, a driver or MIG limit",
                    outside.map(|(o, _)| format!(" ({} outside {who})", gib(o))).unwrap_or_default()
                )
            },
            outside.map(|o| o.0),
            Some(Confidence::High),
        ),
        TORCH_PRIVATE_POOLS => (
            format!("CUDA graphs hold {} in private pools: release graphs you no longer replay, or compile without CUDA graphs", gib(g.private_pools.unwrap_or(0))),
            g.private_pools,
            Some(Confidence::Medium),
        ),
        TORCH_FRAGMENTATION if g.bfc => (
            format!("{} is free under the limit but fragmented: set TF_GPU_ALLOCATOR=cuda_malloc_async (or XLA_PYTHON_CLIENT_ALLOCATOR=platform)", gib(g.cached_free.unwrap_or(0))),
            g.cached_free,
            Some(Confidence::Medium),
        ),
        TORCH_FRAGMENTATION => (
            match would_return {
                Some(w) => format!("{} is reserved but unallocated, {} of it in free blocks stranded between live ones (fragmentation): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which would return them", gib(g.cached_free.unwrap_or(0)), gib(w)),
                None => format!("{} is reserved but unallocated, in free blocks too small for the request (fragmentation): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to return it", gib(g.cached_free.unwrap_or(0))),
            },
            would_return.or(g.cached_free),
            Some(Confidence::Medium),
        ),
        _ if g.bfc => (
            format!(
                "the allocator's limit is reached{}: {}jax.checkpoint, bfloat16 activations, a smaller batch, or sharding parameters and optimizer state over the GPUs (NamedSharding)",
                needed.map(|n| format!(" ({} more needed)", gib(n))).unwrap_or_default(),
                g.capacity
                    .map(|c| format!(
                        "if it is JAX's default 75% of the GPU, XLA_PYTHON_CLIENT_MEM_FRACTION=.95 adds about {} (XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand); else ",
                        gib(preallocation_more(c))
                    ))
                    .unwrap_or_default(),
            ),
            None,
            None,
        ),
        _ => (
            format!(
                "the device is full{}: activation checkpointing, bf16 autocast, a smaller batch, or sharding parameters and optimizer state (FSDP/ZeRO){}",
                needed.map(|n| format!(" ({} more needed)", gib(n))).unwrap_or_default(),
                holders.first().map(|h| format!("; the biggest holder at the peak is {h}")).unwrap_or_default()
            ),
            None,
            None,
        ),
    };
    let title = crate::tree::node_def(leaf).map_or("", |d| d.title);
    TorchEval {
        leaf,
        nodes,
        summary: format!("{start} → {}", crate::node::lower_first(title)),
        headline: Headline {
            node: leaf.to_string(),
            text: format!("{start}. Next step: {step}"),
            estimate_bytes: estimate,
            severity: Severity::Failure,
            confidence: estimate.and(confidence),
        },
    }
}
