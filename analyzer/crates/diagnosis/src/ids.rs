//! Node ids of the decision tree. They are part of the JSON interface and of
//! permalinks; code names nodes only through these constants, so a typo is a
//! compile error rather than a node that silently never matches.

// Compile-time scoped VMEM of one instruction (OpenXLA E1001).
pub const SCOPED_VMEM: &str = "scoped_vmem";
// Compile-time HBM OOM (OpenXLA E1000), section 1.
pub const TC_SC_BALANCE: &str = "tc_sc_balance";
pub const SPARSECORE_HIGH: &str = "tc_sc_balance.sparsecore_high";
pub const TENSORCORE_HIGH: &str = "tc_sc_balance.tensorcore_high";
pub const BALANCED: &str = "tc_sc_balance.balanced";
// Section 2.
pub const LARGE_ALLOCATIONS: &str = "large_allocations";
pub const DEBUG_ARTIFACTS: &str = "large_allocations.debug_artifacts";
pub const LARGE_SHARDING: &str = "large_allocations.sharding";
// Section 3.
pub const AGGREGATE: &str = "aggregate";
pub const PADDING: &str = "aggregate.padding";
pub const CONFIG: &str = "aggregate.config";
pub const ARCHITECTURE: &str = "aggregate.architecture";
pub const FLAGS: &str = "aggregate.flags";
pub const REMAT: &str = "aggregate.remat";
pub const PROFILE: &str = "aggregate.profile";

// Runtime memory problems (seeds 000, 001, 003).
pub const STEADY_GROWTH: &str = "runtime.steady_growth";
pub const SPIKE: &str = "runtime.spike";
pub const LINGERING: &str = "runtime.lingering_buffers";
pub const ACCUMULATION: &str = "runtime.device_accumulation";
pub const NEAR_LIMIT: &str = "runtime.near_limit";
pub const PEAK_COMPOSITION: &str = "runtime.peak_composition";
pub const DEVICE_BALANCE: &str = "runtime.device_balance";
// TPU run-time failures told by their message alone (OpenXLA E0101, E0100).
pub const TPU_PROGRAM_LOAD: &str = "runtime.tpu_program_load";
pub const TPU_BUFFER_ALLOCATION: &str = "runtime.tpu_buffer_allocation";

// GPU allocator OOMs (PyTorch CUDA/HIP caching allocator, XLA's BFC allocator).
pub const TORCH_FRAGMENTATION: &str = "torch.fragmentation";
pub const TORCH_NON_PYTORCH: &str = "torch.non_pytorch_memory";
pub const TORCH_CAPACITY: &str = "torch.capacity";
pub const TORCH_PRIVATE_POOLS: &str = "torch.private_pools";
pub const TORCH_ALLOCATION_LIMIT: &str = "torch.allocation_limit";

// Verdicts of inputs without an OOM.
pub const VERDICT_FITS: &str = "verdict.fits";
pub const VERDICT_OVER_LIMIT: &str = "verdict.over_limit";
pub const VERDICT_PADDING: &str = "verdict.padding";
pub const VERDICT_NO_LIMIT: &str = "verdict.no_limit";
pub const VERDICT_NOTHING: &str = "verdict.nothing";
