//! The decision tree as data: node ids, parents, titles, the condition each
//! node tests and the advice it carries. The app draws the tree from this
//! table plus the evaluated [`oomscope_report::Diagnosis`]; the evaluators in
//! [`crate::compile`] and [`crate::runtime`] fill the advice with the user's
//! numbers. Sources: seed 002 (OpenXLA error E1000, compile-time HBM OOM) for
//! the compile tree; seeds 000, 001 and 003 for the runtime nodes.

use oomscope_report::TreeKind;

use crate::ids::*;
use serde::Serialize;

/// One node of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NodeDef {
    /// Stable id (part of the JSON interface and of permalinks).
    pub id: &'static str,
    /// Parent node id; `None` for a top-level node of its tree.
    pub parent: Option<&'static str>,
    /// The tree the node belongs to (runtime nodes serve both
    /// `runtime_oom` and `memory_growth`).
    pub tree: TreeKind,
    pub title: &'static str,
    /// What the node tests, in words.
    pub condition: &'static str,
    /// When this node is reached the walk continues at these nodes (the
    /// E1000 page sends "TensorCore high" and "balanced" on to sections 2
    /// and 3).
    pub continues_to: &'static [&'static str],
    /// The advice the node gives; evaluated actions start with this text and
    /// add the user's numbers.
    pub actions: &'static [ActionDef],
}

/// One piece of advice of a node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ActionDef {
    /// Stable key of the action within its node.
    pub key: &'static str,
    /// The advice without numbers.
    pub text: &'static str,
}

const fn action(key: &'static str, text: &'static str) -> ActionDef {
    ActionDef { key, text }
}

static TREE: &[NodeDef] = &[
    NodeDef {
        id: SCOPED_VMEM,
        parent: None,
        tree: TreeKind::CompileHbmOom,
        title: "One instruction's scoped VMEM (E1001)",
        condition: "The compiler could not fit one instruction's stack (a kernel's input and output windows, its scratch and register spills) under the scoped VMEM limit. This is not the program's memory: a custom kernel (a Pallas call, custom_call_target=\"tpu_custom_call\") is retuned; any other instruction points to a compiler bug.",
        continues_to: &[],
        actions: &[
            action(
                "kernel_blocks",
                "Reduce the kernel's block sizes (tile sizes): its windows and scratch shrink with them.",
            ),
            action(
                "kernel_vmem_limit",
                "Or give this kernel more scoped VMEM, up to the chip's VMEM: vmem_limit_bytes in its compiler parameters (jax.experimental.pallas.tpu.CompilerParams).",
            ),
            action(
                "global_vmem_limit",
                "When many kernels need more, raise the limit for the whole program with the XLA flag --xla_tpu_scoped_vmem_limit_kib.",
            ),
            action(
                "report_bug",
                "An instruction the compiler generated (not a custom kernel) should not run out of scoped VMEM: report it to XLA with the HLO dump (XLA_FLAGS=--xla_dump_to=DIR).",
            ),
        ],
    },
    NodeDef {
        id: TC_SC_BALANCE,
        parent: None,
        tree: TreeKind::CompileHbmOom,
        title: "TensorCore vs SparseCore HBM",
        condition: "The error reports TensorCore and SparseCore HBM usage separately: compare the two.",
        continues_to: &[],
        actions: &[],
    },
    NodeDef {
        id: SPARSECORE_HIGH,
        parent: Some(TC_SC_BALANCE),
        tree: TreeKind::CompileHbmOom,
        title: "SparseCore usage high",
        condition: "SparseCore uses at least twice what TensorCore uses (two thirds of the sum).",
        continues_to: &[],
        actions: &[
            action(
                "serialize_tables",
                "Reduce the HBM stack (proportional to feature_width, max_unique_nz_per_row and logical_replica_count): serialize table processing with --xla_sc_num_serialized_tables_to_optimize_hbm, at the cost of parallelism.",
            ),
            action(
                "table_padding",
                "Check table padding: SparseCore aligns embedding tables to 32 bytes (8 floats), so tables narrower than 8 floats waste HBM.",
            ),
            action(
                "parallel_iterations",
                "Reduce the heap: lower maximum_parallel_iterations, which sets how much input data is prefetched into HBM.",
            ),
            action(
                "table_sharding",
                "Check that the embedding tables are mod-sharded over all chips.",
            ),
        ],
    },
    NodeDef {
        id: TENSORCORE_HIGH,
        parent: Some(TC_SC_BALANCE),
        tree: TreeKind::CompileHbmOom,
        title: "TensorCore usage high",
        condition: "TensorCore uses at least twice what SparseCore uses: continue with the allocations.",
        continues_to: &[LARGE_ALLOCATIONS, AGGREGATE],
        actions: &[],
    },
    NodeDef {
        id: BALANCED,
        parent: Some(TC_SC_BALANCE),
        tree: TreeKind::CompileHbmOom,
        title: "Both moderate: the chip is full",
        condition: "Neither uses twice the other but their sum exceeds the limit: the chip is full; reduce both, with the advice of all three sections.",
        continues_to: &[LARGE_ALLOCATIONS, AGGREGATE],
        actions: &[],
    },
    NodeDef {
        id: LARGE_ALLOCATIONS,
        parent: None,
        tree: TreeKind::CompileHbmOom,
        title: "Unexpectedly large allocations",
        condition: "An allocation is larger than 50% of the limit (the OpenXLA rule). Almost always a configuration error; the XLA label points at the source. When the rest alone still exceeds the limit, section 3 applies as well.",
        continues_to: &[],
        actions: &[
            action(
                "find_source",
                "Find where the large allocation comes from (its XLA label, op name and source line):",
            ),
            action(
                "kernel_blocks",
                "On-core memory (VMEM) is per core and does not shard over chips: a large allocation there is a kernel's input window or scratch; smaller block sizes shrink it.",
            ),
        ],
    },
    NodeDef {
        id: DEBUG_ARTIFACTS,
        parent: Some(LARGE_ALLOCATIONS),
        tree: TreeKind::CompileHbmOom,
        title: "Debug artefacts",
        condition: "A large allocation comes from a debug print or host callback.",
        continues_to: &[],
        actions: &[action(
            "remove_debug_print",
            "Remove leftover jax.debug.print() calls and host callbacks: they force the compiler to materialise the whole tensor in HBM to send it to the host, which breaks fusion and raises the peak.",
        )],
    },
    NodeDef {
        id: LARGE_SHARDING,
        parent: Some(LARGE_ALLOCATIONS),
        tree: TreeKind::CompileHbmOom,
        title: "Mesh shape or sharding",
        condition: "No debug origin: a wrong mesh shape or a missing sharding annotation makes XLA replicate a huge tensor on one chip.",
        continues_to: &[],
        actions: &[action(
            "shard_large_buffer",
            "Check the shape of the large allocation and that its sharding is specified and propagated by XLA (mesh axes, PartitionSpec, with_sharding_constraint).",
        ), action(
            "single_chip",
            "On one chip, sharding cannot split a buffer: make it smaller (a smaller batch, sequence or vocabulary dimension), compute it in chunks so that only one chunk is live (jax.lax.map, or a scan over its largest dimension), keep it in bfloat16, or use a chip with more HBM.",
        )],
    },
    NodeDef {
        id: AGGREGATE,
        parent: None,
        tree: TreeKind::CompileHbmOom,
        title: "Sum of allocations exceeds the limit",
        condition: "No allocation is over half the limit, or without the largest the rest still exceeds the limit: the sum is too big. Each remedy estimates what it saves; the cheapest whose estimate covers the excess is selected (cost order: donation, padding, jax.checkpoint, bfloat16, batch, more chips).",
        continues_to: &[],
        actions: &[action("top_contributor", "Top contributor:")],
    },
    NodeDef {
        id: PADDING,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "A. Padding and alignment",
        condition: "Padding of buffers live at the peak covers the excess and donation does not.",
        continues_to: &[],
        actions: &[action(
            "align_dims",
            "Make large dimensions multiples of the tile: 128 for the minor dimension and 8 for the second-minor (e.g. 129×1024 pads to 256×1024; 128×1024 does not pad).",
        )],
    },
    NodeDef {
        id: CONFIG,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "B. Configuration: batch, donation, precision",
        condition: "The cheapest remedy whose estimate covers the excess is a configuration change: donate_argnums (free), bfloat16, or half the batch.",
        continues_to: &[],
        actions: &[
            action(
                "bf16",
                "Use bfloat16 (or int8 quantisation) for the largest tensors where model quality allows.",
            ),
            action(
                "donate",
                "Donate input buffers: pass donate_argnums to jax.jit for the parameters so XLA can write outputs into their memory.",
            ),
            action(
                "batch",
                "Reduce the batch size: activations and intermediate gradients scale with it.",
            ),
        ],
    },
    NodeDef {
        id: ARCHITECTURE,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "C. Architecture and sharding",
        condition: "The complete buffer list shows no cheaper remedy whose estimate covers the excess: the model is too big for this chip.",
        continues_to: &[],
        actions: &[
            action(
                "shard",
                "Shard over more chips (data, tensor or pipeline parallelism) and give sharding hints for intermediate values and outputs.",
            ),
            action(
                "bigger_chip",
                "Use a TPU generation with more HBM per chip.",
            ),
            action(
                "host_offload",
                "Offload large tensors to host memory (activation offloading, optimizer-state offloading).",
            ),
        ],
    },
    NodeDef {
        id: FLAGS,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "D. Memory-related XLA flags",
        condition: "Last resort: flags that trade speed for memory; never selected by the data alone.",
        continues_to: &[],
        actions: &[action(
            "memory_flags",
            "Tune the memory-related XLA flags only as a last resort: they can hurt performance.",
        )],
    },
    NodeDef {
        id: REMAT,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "E. Rematerialisation and jax.checkpoint",
        condition: "What jax.checkpoint would free (activations held across the peak) covers the excess and neither donation nor padding does; the rematerialisation flags help when the program is close to fitting.",
        continues_to: &[],
        actions: &[
            action(
                "max_hbm",
                "Set the HBM size the rematerialisation pass aims for with --xla_tpu_max_hbm_size_mib.",
            ),
            action(
                "remat_flags",
                "Let the pass try harder: --xla_tpu_rematerialization_algo=PEAK_PRIORITY --xla_tpu_rematerialization_max_block_size_limit=32 --xla_tpu_rematerialization_block_effort_factor=10.0 --xla_tpu_pre_fusion_remat=true (slower compiles).",
            ),
            action(
                "checkpoint",
                "Wrap layers in jax.checkpoint (with jax.grad) to recompute intermediates in the backward pass instead of keeping them.",
            ),
        ],
    },
    NodeDef {
        id: PROFILE,
        parent: Some(AGGREGATE),
        tree: TreeKind::CompileHbmOom,
        title: "F. Profile the peak",
        condition: "The data lists only part of the allocations and none of the estimates covers the excess: see every buffer at the peak first.",
        continues_to: &[],
        actions: &[action(
            "memory_viewer",
            "Dump the compiled module (XLA_FLAGS=--xla_dump_to=DIR) or capture a profile and open the peak in a memory viewer (oomscope reads both).",
        )],
    },
    NodeDef {
        id: STEADY_GROWTH,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Steady growth",
        condition: "Memory grows steadily over the steps (positive trend, not explained by a few jumps): small tensors accumulate on the device.",
        continues_to: &[],
        actions: &[
            action(
                "no_persistent_tensors",
                "Do not create tensors that persist across iterations inside the loop; release intermediates you no longer need.",
            ),
            action(
                "sync",
                "Synchronise each step (torch_xla mark_step / block_until_ready) so freed buffers are returned.",
            ),
            action(
                "checkpoint_restart",
                "As a stopgap, checkpoint periodically and restart before the projected limit.",
            ),
        ],
    },
    NodeDef {
        id: SPIKE,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Sudden spike",
        condition: "Memory jumps at a few steps (the jumps make most of the growth), or the failing request alone is at least 50% of the device.",
        continues_to: &[],
        actions: &[
            action(
                "find_op",
                "Find the operation that allocates at the jump (a larger batch, a longer sequence, an evaluation step) and bound it.",
            ),
            action(
                "activation_checkpointing",
                "Use gradient accumulation or activation checkpointing to lower the peak of that step.",
            ),
        ],
    },
    NodeDef {
        id: LINGERING,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Lingering gradient buffers",
        condition: "More program outputs have parameter shapes than there are parameters of those shapes: gradient-sized buffers outlive the backward pass (in-place sharding annotations such as MarkShardingFunction did this).",
        continues_to: &[],
        actions: &[action(
            "out_of_place",
            "Make sharding annotations out of place (clone in forward and backward) or use xs.mark_sharding, so gradient arrays are not kept alive.",
        ), action(
            "release_backward",
            "Find what keeps these backward-pass buffers after the step (an in-place custom autograd Function returning its input, a list holding gradients or graph outputs) and release it; free gradients with optimizer.zero_grad(set_to_none=True).",
        )],
    },
    NodeDef {
        id: ACCUMULATION,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Per-step values kept on the device",
        condition: "Memory grows with a sawtooth whose period is the logging interval: per-step values (losses, metrics) stay on the device until they are logged.",
        continues_to: &[],
        actions: &[action(
            "to_host",
            "Move reduced per-step values to the host at once instead of keeping device arrays in a list until the next log.",
        )],
    },
    NodeDef {
        id: PEAK_COMPOSITION,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "What the peak is made of",
        condition: "A PyTorch memory timeline gives the peak's bytes by category: the largest category says which remedy buys the most.",
        continues_to: &[],
        actions: &[
            action(
                "activations",
                "Activations dominate: activation checkpointing (torch.utils.checkpoint) or a smaller batch (with gradient accumulation to keep the effective batch).",
            ),
            action(
                "optimizer_state",
                "Optimizer state dominates: shard it (FSDP, ZeRO) or use a lighter optimizer (SGD, Adafactor, 8-bit Adam).",
            ),
            action(
                "gradients",
                "Gradients dominate: free them as soon as they are applied (optimizer.zero_grad(set_to_none=True), optimizer step in backward) and shard them (FSDP, ZeRO-2).",
            ),
            action(
                "parameters",
                "Parameters dominate: shard them (FSDP, ZeRO-3) or keep them in bf16.",
            ),
            action(
                "snapshot",
                "The profiler could not categorise most of the peak: record a memory snapshot (torch.cuda.memory._record_memory_history) to see the stacks that hold it.",
            ),
        ],
    },
    NodeDef {
        id: DEVICE_BALANCE,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "One device holds more than the others",
        condition: "A JAX device memory profile's heaviest device holds at least 1.5× the mean: it runs out first.",
        continues_to: &[],
        actions: &[
            action(
                "reshard",
                "Shard the arrays that sit on one device (or are split unevenly) across the mesh: check their PartitionSpec / NamedSharding, and that the sharded dimension divides by the mesh axis.",
            ),
            action(
                "replicated",
                "Arrays held in equal copies on every device are replicated or evenly sharded; if replicated (parameters, optimizer state), sharding them (FSDP-style) divides them by the device count.",
            ),
        ],
    },
    NodeDef {
        id: NEAR_LIMIT,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "One step from out of memory",
        condition: "Memory runs within 3% of capacity, or the allocator retries (frees its cache and tries again): the next larger step fails.",
        continues_to: &[],
        actions: &[
            action(
                "expandable_segments",
                "Allocator retries mean the cache is thrashing or fragmented: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
            ),
            action(
                "headroom",
                "Make room before it fails: activation checkpointing, a smaller batch, or sharding optimizer state.",
            ),
        ],
    },
    NodeDef {
        id: TPU_PROGRAM_LOAD,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "The program does not fit beside the buffers (E0101)",
        condition: "Loading a compiled program reserves its code, constants and its temporaries at the bottom of HBM; the buffers already on the device leave too little. Buffers take precedence: the runtime evicts loaded programs for them, so a program that loaded before can fail once more buffers stay live.",
        continues_to: &[],
        actions: &[
            action(
                "free_buffers",
                "Free HBM for the program before it loads: drop references to arrays you no longer need (a live jax.Array keeps its memory), donate inputs (donate_argnums), use a smaller batch or sequence, or shard parameters over more chips.",
            ),
            action(
                "fewer_programs",
                "Each jitted function is a program the runtime keeps loaded: fewer distinct programs in use at once leave this one more room.",
            ),
            action(
                "shared_memory_percent",
                "Lower what the program reserves for its temporaries with the TPU flag tpu_shared_memory_percent (it may cost speed).",
            ),
            action(
                "log_allocations",
                "To list what holds HBM when it fails, run with the TPU flag tpu_log_allocations_on_oom.",
            ),
        ],
    },
    NodeDef {
        id: TPU_BUFFER_ALLOCATION,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "A buffer does not fit in the free HBM (E0100)",
        condition: "A device_put or a program's output needs more HBM than is free, or than any free block holds (the runtime has already retried after pending frees, evicting programs and defragmenting).",
        continues_to: &[],
        actions: &[
            action(
                "reduce_footprint",
                "Make room on the device: a smaller batch or sequence, parameters sharded over more chips, donated inputs (donate_argnums), checkpoints saved sharded or weights only.",
            ),
            action(
                "release_arrays",
                "Drop references to arrays you no longer need: a live jax.Array keeps its HBM.",
            ),
            action(
                "free_in_pieces",
                "The free HBM is in pieces too small even after the runtime's defragmentation: leave more room than the request, with the steps above.",
            ),
            action(
                "log_allocations",
                "To list what holds HBM when it fails, run with the TPU flag tpu_log_allocations_on_oom.",
            ),
        ],
    },
    NodeDef {
        id: TORCH_FRAGMENTATION,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Fragmentation: free memory in pieces too small",
        condition: "The allocator holds at least the request in reserved-but-unallocated memory (or the free chunks add up to the request) but no single free block is large enough.",
        continues_to: &[],
        actions: &[
            action(
                "expandable_segments",
                "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments then grow in place instead of needing one free block of the request's size.",
            ),
            action(
                "max_split_size",
                "On PyTorch before 2.1 (no expandable_segments), set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:<N> so large free blocks are not split for small requests.",
            ),
            action(
                "bfc_async",
                "XLA's BFC allocator: let CUDA's own pool allocate (TF_GPU_ALLOCATOR=cuda_malloc_async, or XLA_PYTHON_CLIENT_ALLOCATOR=platform in JAX).",
            ),
        ],
    },
    NodeDef {
        id: TORCH_NON_PYTORCH,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "Memory used outside the framework",
        condition: "The device or the process uses far more than the framework holds, or reports free memory far above the request: another process, NCCL buffers, the CUDA context, a per-process or MIG limit took it.",
        continues_to: &[],
        actions: &[
            action(
                "other_processes",
                "Look for what else holds the GPU (nvidia-smi: another job, a notebook kernel, a zombie worker; in this process NCCL buffers and the CUDA context).",
            ),
            action(
                "memory_limit",
                "A limit below the device's memory is set (torch.cuda.set_per_process_memory_fraction, a MIG slice, a driver or container limit): raise it or use a larger slice.",
            ),
            action(
                "xla_preallocate",
                "JAX and XLA preallocate 75% of the GPU by default: XLA_PYTHON_CLIENT_MEM_FRACTION raises that share; XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand.",
            ),
        ],
    },
    NodeDef {
        id: TORCH_CAPACITY,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "The device is full",
        condition: "Memory in use is near the device's capacity and the request does not fit in what is left: the job needs less memory.",
        continues_to: &[],
        actions: &[
            action(
                "checkpointing",
                "Use activation checkpointing (torch.utils.checkpoint) to recompute activations in the backward pass.",
            ),
            action(
                "mixed_precision",
                "Use mixed precision (torch.autocast with bfloat16) for activations.",
            ),
            action(
                "batch",
                "Reduce the batch size, with gradient accumulation to keep the effective batch.",
            ),
            action(
                "shard_state",
                "Shard parameters, gradients and optimizer state over the GPUs (FSDP, ZeRO).",
            ),
            // XLA's BFC allocator: the job is JAX's (or TensorFlow's), so the
            // advice names their APIs, not PyTorch's.
            action(
                "preallocation",
                "JAX preallocates 75% of the GPU when it starts and the allocator's limit is that share: XLA_PYTHON_CLIENT_MEM_FRACTION=.95 lets it use more; XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand instead (TensorFlow: tf.config.experimental.set_memory_growth).",
            ),
            action(
                "checkpointing_jax",
                "Recompute activations in the backward pass instead of keeping them: wrap layers in jax.checkpoint (jax.remat), with a policy from jax.checkpoint_policies.",
            ),
            action(
                "mixed_precision_jax",
                "Keep activations (and, where the model allows, parameters) in bfloat16: cast with .astype(jnp.bfloat16), or set dtype=jnp.bfloat16 in the model's layers.",
            ),
            action(
                "shard_state_jax",
                "Shard parameters, gradients and optimizer state over the GPUs: jax.sharding.NamedSharding over a Mesh (FSDP-style, with jax.jit's in_shardings and out_shardings).",
            ),
        ],
    },
    NodeDef {
        id: TORCH_PRIVATE_POOLS,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "CUDA graphs hold memory",
        condition: "Memory allocated in private pools (CUDA graphs) is a large share of what the framework holds, or covers the request.",
        continues_to: &[],
        actions: &[action(
            "cuda_graphs",
            "Private pools belong to captured CUDA graphs (torch.compile mode=\"reduce-overhead\", torch.cuda.graphs): their memory is not returned to the shared pool. Release graphs you no longer replay, or compile without CUDA graphs.",
        )],
    },
    NodeDef {
        id: TORCH_ALLOCATION_LIMIT,
        parent: None,
        tree: TreeKind::RuntimeOom,
        title: "One allocation above the device's single-allocation limit",
        condition: "An Intel GPU (XPU) request of about 4 GiB or more fails while the device has room for it (as much free, or PyTorch holding little of it): the Level Zero driver refuses one allocation larger than its maximum (just under 4 GiB) unless relaxed allocation limits are enabled.",
        continues_to: &[],
        actions: &[
            action(
                "relaxed_limits",
                "Set UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1 in the environment before Python starts: the Level Zero adapter then allows allocations above the single-allocation limit.",
            ),
            action(
                "split_tensor",
                "Or keep each tensor under 4 GiB: compute the large one in chunks (a smaller batch or sequence per call).",
            ),
        ],
    },
    NodeDef {
        id: VERDICT_FITS,
        parent: None,
        tree: TreeKind::None,
        title: "Fits",
        condition: "The peak is under the device's limit.",
        continues_to: &[],
        actions: &[action("headroom", "Headroom left on the device:")],
    },
    NodeDef {
        id: VERDICT_OVER_LIMIT,
        parent: None,
        tree: TreeKind::None,
        title: "Over the limit",
        condition: "No input reports an out-of-memory error, but the run-time peak is over the limit of the picked device (or the one a log gives).",
        continues_to: &[],
        actions: &[
            action(
                "make_room",
                "Bring the peak under the limit: the lines that hold the most at the peak are where to start.",
            ),
        ],
    },
    NodeDef {
        id: VERDICT_PADDING,
        parent: None,
        tree: TreeKind::None,
        title: "Padding dominates the peak",
        condition: "At least a quarter of the peak is padding to the TPU tile.",
        continues_to: &[],
        actions: &[action(
            "align_dims",
            "Make large dimensions multiples of the tile (128 for the minor dimension, 8 for the second-minor).",
        )],
    },
    NodeDef {
        id: VERDICT_NO_LIMIT,
        parent: None,
        tree: TreeKind::None,
        title: "No limit known",
        condition: "The inputs give a peak but no memory limit to compare it with.",
        continues_to: &[],
        actions: &[action(
            "pick_device",
            "Pick the device (or give its memory limit) to compare the peak with.",
        )],
    },
    NodeDef {
        id: VERDICT_NOTHING,
        parent: None,
        tree: TreeKind::None,
        title: "No memory data",
        condition: "No input describes memory use.",
        continues_to: &[],
        actions: &[action(
            "add_inputs",
            "Add the OOM message, the XLA dump (XLA_FLAGS=--xla_dump_to=DIR), an XProf profile or a training log with memory per step.",
        )],
    },
];

/// The whole tree, parents before children.
pub fn tree_definition() -> &'static [NodeDef] {
    TREE
}

/// The definition of node `id`.
pub fn node_def(id: &str) -> Option<&'static NodeDef> {
    TREE.iter().find(|n| n.id == id)
}

/// The advice text of action `key` of node `id` (empty when unknown).
pub(crate) fn action_text(id: &str, key: &str) -> &'static str {
    node_def(id)
        .and_then(|n| n.actions.iter().find(|a| a.key == key))
        .map_or("", |a| a.text)
}
