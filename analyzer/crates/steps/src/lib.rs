//! Memory over time: step-series readers for training logs, trends, spikes
//! and leaks. (Allocator profiles of XProf profiles are read beside the
//! Memory Viewer, in `oomscope-xla`: format crates don't know each other.)
//!
//! Two jobs, one module each:
//! - [`readers`]: training logs → [`StepSeries`] (torchtitan, maxtext memstats,
//!   PyTorch allocated/reserved prints, `tpu-info` tables, `step,bytes` CSV),
//!   one series per source, device and metric;
//! - [`analysis`]: a robust trend (Theil–Sen), change points, a periodic
//!   sawtooth, the projection to the limit, and the [`Trend`] class the
//!   decision tree uses.

pub mod analysis;
pub mod readers;

pub use analysis::{analyze_series, classify, Trend};
pub use readers::{looks_like_step_log, parse_step_log};

pub use oomscope_report::{AllocatorProfile, StepPoint, StepSeries};
