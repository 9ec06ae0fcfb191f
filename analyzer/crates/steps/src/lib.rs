//! Memory over time: step-series readers for training logs, allocator
//! profiles, trends, spikes and leaks.
//!
//! Three jobs, one module each:
//! - [`readers`]: training logs → [`StepSeries`] (torchtitan, maxtext memstats,
//!   PyTorch allocated/reserved prints, `tpu-info` tables, `step,bytes` CSV),
//!   one series per source, device and metric;
//! - [`analysis`]: a robust trend (Theil–Sen), change points, a periodic
//!   sawtooth, the projection to the limit, and the [`Trend`] class the
//!   decision tree uses;
//! - [`allocator`]: XProf's `memory_profile` computed from the
//!   `MemoryAllocation`/`MemoryDeallocation` events of an xplane.

pub mod allocator;
pub mod analysis;
pub mod readers;

pub use allocator::{allocator_profiles, allocator_profiles_from_plane};
pub use analysis::{analyze_series, classify, Trend};
pub use readers::{looks_like_step_log, parse_step_log};

pub use oomscope_report::{AllocatorProfile, StepPoint, StepSeries};
