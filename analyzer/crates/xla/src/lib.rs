//! Decode XProf profiles (`*.xplane.pb`, an `XSpace`, possibly gzipped) and
//! `xla.HloProto` files, and compute XProf's Memory Viewer analysis from them
//! with the same numbers as `xprof==2.24.2`.
//!
//! - [`source`]: [`ReadAt`], the random-access byte source (a slice, or a
//!   `File` read by slices in the browser worker) and the bounded wire reader;
//! - [`hlo`]: a lazy view of an `xla.HloProto` (what the analysis reads, no more);
//! - [`xspace`]: lazy plane lookup (`/host:metadata`, `/host:CPU`), gzip streaming;
//! - [`memory_viewer`]: the Memory Viewer analysis → [`ModuleReport`];
//! - [`allocator`]: XProf's `memory_profile` (allocator timelines) from the
//!   `MemoryAllocation`/`MemoryDeallocation` events of `/host:CPU`;
//! - [`shape`]: `ShapeProto` → `oomscope_layout::Shape`, shape text, unpadded sizes.

pub mod allocator;
mod dataflow_proto;
mod dims;
pub mod error;
pub mod hlo;
mod ids;
pub mod memory_viewer;
pub mod program;
pub mod shape;
pub mod source;
pub mod xspace;

pub use allocator::{allocator_profiles, allocator_profiles_from_plane};
pub use error::{XlaError, XlaErrorKind};
pub use source::ReadAt;
pub use xspace::{
    read_plane, read_planes, read_space, ProfiledModule, HOST_CPU_PLANE, METADATA_PLANE,
};

use memory_viewer::Module;
use oomscope_proto::tensorflow::profiler::XPlane;
use oomscope_report::ModuleReport;

pub use hlo::Hlo;

/// Decodes a serialized `xla.HloProto` (the `*.hlo.pb` of an XLA dump) into
/// the view the analysis reads ([`hlo`]).
pub fn decode_hlo_proto<'a>(input_name: &str, bytes: &'a [u8]) -> Result<Hlo<'a>, XlaError> {
    let hlo = hlo::decode(bytes).map_err(|e| {
        XlaError::new(
            input_name,
            XlaErrorKind::Malformed,
            format!("not an xla.HloProto (truncated or another format): {e}"),
        )
    })?;
    if hlo
        .module
        .as_ref()
        .is_none_or(|m| m.computations.is_empty())
    {
        return Err(XlaError::new(
            input_name,
            XlaErrorKind::Malformed,
            "not an xla.HloProto: it holds no HLO module",
        ));
    }
    Ok(hlo)
}

/// The Memory Viewer analysis of every memory space of one HloProto. A space
/// whose heap trace XProf would reject is left out; when every space fails the
/// first error is returned.
pub fn analyze_hlo(
    input_name: &str,
    hlo: &Hlo<'_>,
    program_id: Option<i64>,
) -> Result<Vec<ModuleReport>, XlaError> {
    let module = Module::new(input_name, hlo)?;
    analyze_module(input_name, &module, program_id)
}

fn analyze_module(
    input_name: &str,
    module: &Module<'_>,
    program_id: Option<i64>,
) -> Result<Vec<ModuleReport>, XlaError> {
    let mut reports = Vec::new();
    let mut first_error = None;
    for space in module.memory_spaces() {
        match module.analyze(input_name, space) {
            Ok(mut report) => {
                report.program_id = program_id;
                reports.push(report);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match (reports.is_empty(), first_error) {
        (true, Some(e)) => Err(e),
        (true, None) => Err(XlaError::new(
            input_name,
            XlaErrorKind::NoBufferAssignment,
            "the buffer assignment has no allocations",
        )),
        _ => Ok(reports),
    }
}

/// The program the Memory Viewer replays, for every memory space of one
/// HloProto that has a heap-simulator trace (the what-if engine's input,
/// issue 25). `module` is named `name(program_id)` as the reports are.
pub fn heap_programs(
    input_name: &str,
    hlo: &Hlo<'_>,
    program_id: Option<i64>,
) -> Result<Vec<oomscope_report::program::HeapProgram>, XlaError> {
    let module = Module::new(input_name, hlo)?;
    Ok(named_programs(&module, program_id))
}

fn named_programs(
    module: &Module<'_>,
    program_id: Option<i64>,
) -> Vec<oomscope_report::program::HeapProgram> {
    module
        .programs()
        .into_iter()
        .map(|mut p| {
            if let Some(id) = program_id {
                p.module = format!("{}({id})", p.module);
            }
            p
        })
        .collect()
}

/// [`analyze_hlo`] and [`heap_programs`] of one HloProto, indexed once (the
/// CLI and the page want both). The programs are `None` when the analysis
/// failed.
pub fn analyze_hlo_with_programs(
    input_name: &str,
    hlo: &Hlo<'_>,
    program_id: Option<i64>,
) -> Result<
    (
        Vec<ModuleReport>,
        Vec<oomscope_report::program::HeapProgram>,
    ),
    XlaError,
> {
    let module = Module::new(input_name, hlo)?;
    let reports = analyze_module(input_name, &module, program_id)?;
    Ok((reports, named_programs(&module, program_id)))
}

/// Decodes an `*.hlo.pb` and analyses it ([`analyze_hlo`]).
pub fn analyze_hlo_proto(input_name: &str, bytes: &[u8]) -> Result<Vec<ModuleReport>, XlaError> {
    let hlo = decode_hlo_proto(input_name, bytes)?;
    analyze_hlo(input_name, &hlo, None)
}

/// The compiled modules of the `/host:metadata` planes among `planes`.
pub fn modules_of_planes<'a>(
    input_name: &str,
    planes: &'a [XPlane],
) -> Result<Vec<ProfiledModule<'a>>, XlaError> {
    let metadata: Vec<&XPlane> = planes.iter().filter(|p| p.name == METADATA_PLANE).collect();
    if metadata.is_empty() {
        return Err(XlaError::new(
            input_name,
            XlaErrorKind::NoHlo,
            "the profile has no /host:metadata plane, so no HLO modules (not an XProf profile, or captured without HLO)",
        ));
    }
    let modules: Vec<ProfiledModule> = metadata
        .into_iter()
        .flat_map(xspace::hlo_protos_from_metadata_plane)
        .collect();
    if modules.is_empty() {
        return Err(XlaError::new(
            input_name,
            XlaErrorKind::NoHlo,
            "the profile's /host:metadata plane holds no HloProto",
        ));
    }
    Ok(modules)
}

/// The Memory Viewer analysis of every module (and memory space) found in the
/// `/host:metadata` planes among `planes` (other planes are ignored), for
/// callers that read several planes in one pass with [`read_planes`].
/// Modules without a usable buffer assignment are left out; when none is
/// usable the first error is returned.
pub fn analyze_planes(input_name: &str, planes: &[XPlane]) -> Result<Vec<ModuleReport>, XlaError> {
    analyze_planes_with(input_name, planes, None)
}

/// [`analyze_planes`], also giving the program of every module analysed
/// ([`heap_programs`]: the what-if engine's input, issue 25). A profile's
/// `/host:metadata` plane holds each module's HloProto, so its programs are
/// those of the same HloProto read alone, named `name(program_id)`.
pub fn analyze_planes_keeping_programs(
    input_name: &str,
    planes: &[XPlane],
) -> Result<
    (
        Vec<ModuleReport>,
        Vec<oomscope_report::program::HeapProgram>,
    ),
    XlaError,
> {
    let mut programs = Vec::new();
    let reports = analyze_planes_with(input_name, planes, Some(&mut programs))?;
    Ok((reports, programs))
}

fn analyze_planes_with(
    input_name: &str,
    planes: &[XPlane],
    mut programs: Option<&mut Vec<oomscope_report::program::HeapProgram>>,
) -> Result<Vec<ModuleReport>, XlaError> {
    let modules = modules_of_planes(input_name, planes)?;
    let mut reports = Vec::new();
    let mut first_error = None;
    for module in &modules {
        match analyze_hlo(input_name, &module.hlo, Some(module.program_id)) {
            Ok(mut r) => {
                for report in &mut r {
                    report.source_kind = oomscope_report::SourceKind::Xplane;
                }
                reports.extend(r);
                if let Some(programs) = programs.as_deref_mut() {
                    if let Ok(p) = heap_programs(input_name, &module.hlo, Some(module.program_id)) {
                        programs.extend(p);
                    }
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if reports.is_empty() {
        return Err(first_error.unwrap_or_else(|| {
            XlaError::new(
                input_name,
                XlaErrorKind::NoHlo,
                "no module of the profile has a buffer assignment",
            )
        }));
    }
    Ok(reports)
}

/// The Memory Viewer analysis of every module (and memory space) of an XProf
/// profile ([`analyze_planes`]). Reads only the `/host:metadata` plane;
/// `progress(done, total)` reports bytes of the source read.
pub fn analyze_xspace(
    input_name: &str,
    src: &dyn ReadAt,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<ModuleReport>, XlaError> {
    let planes = read_planes(input_name, src, &|name| name == METADATA_PLANE, progress)?;
    analyze_planes(input_name, &planes)
}
