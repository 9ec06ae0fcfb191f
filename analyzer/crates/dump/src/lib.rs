//! Parse XLA dump folders (`XLA_FLAGS=--xla_dump_to=DIR`) and analyse each
//! module's memory from the text files alone.
//!
//! - [`hlo`]: zero-copy HLO module text parser (modules, computations,
//!   instructions, shapes as printed, metadata, stack-frame tables);
//! - [`buffer_assignment`]: `*-buffer-assignment.txt` and `*-buffer-assignment-values.txt`;
//! - [`live_range`]: `*-live-range.txt` (and the same section in older buffer assignments);
//! - [`memory_report`] reads `*-memory-usage-report.txt`;
//! - [`group`]: which files belong to which module;
//! - [`analysis`]: the [`ModuleReport`]s (see there for the peaks it reports and why two),
//!   and (`program`) the module's program for the what-if replay.
//!
//! All parsers borrow from the text, never panic on bad input, and report what
//! they could not read.

pub mod analysis;
pub mod buffer_assignment;
pub mod group;
pub mod hlo;
pub mod live_range;
pub mod memory_report;
mod program;

pub use analysis::{analyze_module, analyze_module_keeping_program};
pub use group::{dump_file_kind, group_modules, is_dump_file, DumpFileKind, DumpModule};
pub use hlo::{HloComputation, HloInstruction, HloModule, HloParse, Metadata};

use oomscope_report::{InputError, ModuleReport};

/// Analyse every module among `(path, text)` files; files that are not XLA
/// dump text are ignored. Each module with live ranges gives two reports (see
/// [`analysis`]); problems with files come back as errors naming the file.
pub fn analyze_dump(files: &[(&str, &str)]) -> (Vec<ModuleReport>, Vec<InputError>) {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for module in group_modules(files) {
        let (module_reports, module_errors) = analyze_module(&module);
        reports.extend(module_reports);
        errors.extend(module_errors);
    }
    (reports, errors)
}

/// [`analyze_dump`], also giving the program of each module that has one
/// for the what-if replay (a module with live ranges and a buffer
/// assignment; [`analysis::NO_LIVE_RANGES`] says why the others have none).
pub fn analyze_dump_keeping_programs(
    files: &[(&str, &str)],
) -> (
    Vec<ModuleReport>,
    Vec<InputError>,
    Vec<oomscope_report::program::HeapProgram>,
) {
    let (mut reports, mut errors, mut programs) = (Vec::new(), Vec::new(), Vec::new());
    for module in group_modules(files) {
        let (module_reports, module_errors, program) =
            analysis::analyze_module_keeping_program(&module);
        programs.extend(program.ok());
        reports.extend(module_reports);
        errors.extend(module_errors);
    }
    (reports, errors, programs)
}

/// Σ of byte counts read from text, saturating: hostile sizes must not
/// overflow (found by the `dump_text` fuzz target).
pub(crate) fn total_bytes(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes.into_iter().fold(0, u64::saturating_add)
}
