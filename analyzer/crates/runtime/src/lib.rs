//! Run-time memory profiles (issue 17): what was live on the device, by
//! stack, by category and over time.
//!
//! - JAX device memory profiles (`jax.profiler.save_device_memory_profile()`,
//!   a gzipped pprof `profile.proto`) → [`DeviceMemoryProfile`]: totals per
//!   device and kind, top stacks and lines, device balance
//!   ([`read_device_memory_profile`]); several profiles of one run are a
//!   series whose growing stacks are a leak ([`device_memory_series`]).
//! - PyTorch `export_memory_timeline` raw and JSON forms
//!   ([`read_memory_timeline`]) and Kineto Chrome traces
//!   ([`read_kineto_trace`]) → [`MemoryTimeline`] per device: peak, bytes by
//!   category at the peak, final bytes.
//!
//! Every reader takes the file's bytes (gzipped or not) and its name, and
//! returns an error naming it on bad input. Memory is bounded by the input:
//! JSON is walked element by element (no tree of values), pprof samples are
//! aggregated by location ids before any frame is built.
//!
//! [`DeviceMemoryProfile`]: oomscope_report::DeviceMemoryProfile
//! [`MemoryTimeline`]: oomscope_report::MemoryTimeline

mod curve;
mod device_profile;
mod error;
mod frames;
mod gzip;
mod json_scan;
mod kineto;
mod pprof;
mod series;
mod torch_timeline;

pub use device_profile::{
    read_device_memory_profile, DecodedDeviceProfile, MAX_SERIES_STACKS, TOP_LINES, TOP_STACKS,
};
pub use error::{RuntimeError, RuntimeErrorKind};
pub use frames::frame_kind;
pub use kineto::{is_chrome_trace, read_kineto_trace};
pub use series::device_memory_series;
pub use torch_timeline::{form_of as torch_timeline_form, read_memory_timeline, CATEGORIES};

/// Does this (gunzipped) data look like a pprof `Profile`? The first field
/// of a profile JAX writes is `sample_type` (field 1, length-delimited) and
/// the decoder is cheap, so a full decode decides.
pub fn is_pprof(data: &[u8]) -> bool {
    use oomscope_proto::prost::Message;
    data.first() == Some(&0x0a)
        && oomscope_proto::perftools::profiles::Profile::decode(data).is_ok_and(|p| {
            !p.string_table.is_empty() && p.string_table.iter().any(|s| s == "space")
        })
}
