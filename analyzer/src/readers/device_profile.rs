//! JAX device memory profiles (`save_device_memory_profile()`: pprof
//! `profile.proto`, gunzipped by the archive step). Kept until every input
//! is read, so that the profiles of one run are compared as a series.

use super::{Offer, Out, Reader};
use crate::InputFile;
use oomscope_report::InputKind;

#[derive(Default)]
pub struct DeviceProfile {
    profiles: Vec<oomscope_runtime::DecodedDeviceProfile>,
}

impl Reader for DeviceProfile {
    fn name(&self) -> &'static str {
        "device_memory_profile"
    }

    /// By content, and by name (`*.prof`, `*.pprof`, as users name them) so
    /// that a damaged one gets an error saying what is wrong with it.
    fn recognises(&self, input: &Offer) -> bool {
        input.base.ends_with(".prof")
            || input.base.ends_with(".pprof")
            || oomscope_runtime::is_pprof(input.data)
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        match oomscope_runtime::read_device_memory_profile(&file.name, &file.data) {
            Ok(p) => self.profiles.push(p),
            Err(e) => out.error(&file.name, e.to_string()),
        }
        InputKind::DeviceMemoryProfile
    }

    /// Profiles of one run taken at several steps: what grows between them.
    fn finish(&mut self, out: &mut Out) {
        let profiles = std::mem::take(&mut self.profiles);
        out.report.device_memory_series = oomscope_runtime::device_memory_series(&profiles);
        out.report
            .device_memory_profiles
            .extend(profiles.into_iter().map(|d| d.profile));
    }
}
