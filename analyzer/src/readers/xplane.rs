//! XProf profiles (`*.xplane.pb`, an `XSpace`): the Memory Viewer of every
//! compiled module (plane `/host:metadata`, with the program the what-if
//! engine replays) and the allocator timelines
//! (planes `/host:CPU`). Read by slices: only those planes are decoded.

use super::{Access, Offer, Out, Reader};
use crate::{InputFile, Progress, ReadAt};
use oomscope_report::InputKind;

/// Host planes (`/host:CPU`, one per host) read from one profile.
const MAX_HOST_PLANES: u64 = 64;

pub struct Xplane;

impl Reader for Xplane {
    fn name(&self) -> &'static str {
        "xplane"
    }

    /// By name: a protobuf has no magic number.
    fn recognises(&self, input: &Offer) -> bool {
        input.base.ends_with(".xplane.pb")
    }

    fn access(&self) -> Access {
        Access::Slices
    }

    fn read(&mut self, file: &InputFile, _explicit: bool, out: &mut Out) -> InputKind {
        read_profile(&file.name, &file.data, out);
        InputKind::Xplane
    }

    fn read_slices(&mut self, name: &str, src: &dyn ReadAt, out: &mut Out) -> InputKind {
        read_profile(name, src, out);
        InputKind::Xplane
    }
}

/// A profile holding only one of the two planes is fine; holding neither is
/// an error naming the file.
fn read_profile(name: &str, src: &dyn ReadAt, out: &mut Out) {
    let progress = &mut *out.progress;
    let mut on_progress = |d: u64, t: u64| {
        progress(Progress {
            input: name.to_string(),
            done_bytes: d,
            total_bytes: t,
            stage: "decoding profile".into(),
        })
    };
    // One pass over the source reads both planes (for a gzipped profile, one
    // decompression); every other plane is skipped unread. A profile has one
    // host plane per host; past MAX_HOST_PLANES the rest are skipped too, so
    // a profile of thousands of them cannot exhaust memory.
    let host_planes = std::cell::Cell::new(0u64);
    let wanted = |plane: &str| {
        if plane == oomscope_xla::HOST_CPU_PLANE {
            host_planes.set(host_planes.get() + 1);
            host_planes.get() <= MAX_HOST_PLANES
        } else {
            plane == oomscope_xla::METADATA_PLANE
        }
    };
    let (planes, hostnames) = match oomscope_xla::read_space(name, src, &wanted, &mut on_progress) {
        Ok(p) => p,
        Err(e) => return out.error(name, e.to_string()),
    };
    let host = hostnames.into_iter().find(|h| !h.trim().is_empty()).unwrap_or_default();
    if host_planes.get() > MAX_HOST_PLANES {
        out.error(
            name,
            format!(
                "{name}: the profile has {} {} planes; the allocator timelines of the first {MAX_HOST_PLANES} are shown",
                host_planes.get(),
                oomscope_xla::HOST_CPU_PLANE
            ),
        );
    }
    // The programs of its modules go to the what-if replay, as an HloProto's do.
    let modules =
        oomscope_xla::analyze_planes_keeping_programs(name, &planes).map(|(modules, programs)| {
            out.programs.extend(programs);
            modules
        });
    let profiles: Result<Vec<_>, oomscope_xla::XlaError> = Ok(planes
        .iter()
        .filter(|p| p.name == oomscope_xla::HOST_CPU_PLANE)
        .flat_map(|p| oomscope_xla::allocator_profiles_from_plane(name, p))
        .map(|mut profile| {
            profile.host = host.clone();
            profile
        })
        .collect());
    let report = &mut *out.report;
    match (modules, profiles) {
        (Ok(m), Ok(p)) => {
            report.modules.extend(m);
            report.allocator_profiles.extend(p);
        }
        (Err(e), Ok(p)) if !p.is_empty() && e.kind == oomscope_xla::XlaErrorKind::NoHlo => {
            report.allocator_profiles.extend(p)
        }
        (Ok(m), Err(_)) if !m.is_empty() => report.modules.extend(m),
        (Err(e), _) | (_, Err(e)) => out.error(name, e.to_string()),
    }
}
