//! Predictions by replay (issue 25): the facade keeps the program of each
//! module it analysed (from an HloProto, an XProf profile's HloProtos, or
//! dump text with live ranges), and after the diagnosis replays every
//! remedy on the module that ran out (or is nearest its limit) with
//! `oomscope_whatif`, then joins the predictions to the tree and headline
//! (`oomscope_diagnosis::what_if`).

use oomscope_report::program::HeapProgram;
use oomscope_report::whatif::{
    AbsentRemedy, PanelReplay, Remedy, ReplayedCurve, WhatIf, WhatIfChoice,
};
use oomscope_report::{MemoryColor, PeakKind, Report, SourceKind};
use oomscope_whatif::entries::{cheapest_combination, single_remedies, what_if, Settings};
use oomscope_whatif::WhatIfError;

/// A module counts as near its limit above this share of it.
const NEAR: f64 = 0.9;

/// The HBM limit the report gives (the OOM message's), if any.
pub fn hbm_limit(report: &Report) -> Option<u64> {
    report
        .oom_events
        .iter()
        .filter(|e| e.memory_space.color() == Some(MemoryColor::Device))
        .find_map(|e| e.limit())
}

/// The program to replay: the HBM module with the largest peak among those
/// over or near the limit; without a limit, the largest.
pub fn chosen<'p>(
    report: &Report,
    programs: &'p [HeapProgram],
    limit: Option<u64>,
) -> Option<&'p HeapProgram> {
    let peak_of = |p: &HeapProgram| {
        report
            .modules
            .iter()
            .filter(|m| m.memory_space == p.memory_space && m.display_name() == p.module)
            .map(|m| m.peak_bytes)
            .max()
            .unwrap_or(0)
    };
    programs
        .iter()
        .filter(|p| p.memory_space == MemoryColor::Device)
        .filter(|p| limit.is_none_or(|l| peak_of(p) as f64 >= l as f64 * NEAR))
        .max_by_key(|p| peak_of(p))
}

/// Replays every remedy on the chosen module and joins them to the
/// diagnosis; `device` is the picked device's limit for a report that gives none.
pub fn attach(report: &mut Report, programs: &[HeapProgram], device: Option<u64>) {
    attach_programs(report, programs, device);
    // A snapshot's what-ifs come with its analysis (its trace replayed).
    let snapshots: Vec<WhatIf> = report
        .memory_snapshots
        .iter()
        .flat_map(|s| s.what_if.iter().cloned())
        .collect();
    report
        .diagnosis
        .what_if
        .retain(|w| !Remedy::SNAPSHOT.contains(&w.remedy));
    report.diagnosis.what_if.extend(snapshots);
}

/// The remedies' defaults on `program`: sharding over the chips its
/// module runs on (or 2), the others as [`Settings::default`].
pub fn settings_for(report: &Report, program: &HeapProgram) -> Settings {
    let chips = report
        .modules
        .iter()
        .filter(|m| m.memory_space == program.memory_space && m.display_name() == program.module)
        .find_map(|m| m.chips);
    Settings {
        devices: oomscope_report::whatif::default_devices(chips),
        ..Settings::default()
    }
}

/// The HBM module the replay would take when it has no program, why it
/// has none in one line (said for every remedy, never a zero), and its peak.
fn unreplayable(
    report: &Report,
    programs: &[HeapProgram],
    limit: Option<u64>,
) -> Option<(String, String, u64)> {
    let module = report
        .modules
        .iter()
        .filter(|m| m.memory_space == MemoryColor::Device)
        .filter(|m| limit.is_none_or(|l| m.peak_bytes as f64 >= l as f64 * NEAR))
        .max_by_key(|m| m.peak_bytes)?;
    let name = module.display_name();
    if programs.iter().any(|p| p.module == name) {
        return None;
    }
    let why = match (&module.source_kind, &module.peak_kind) {
        (SourceKind::XlaDumpText, PeakKind::BufferLivenessEstimated) => {
            oomscope_dump::analysis::NO_LIVE_RANGES.to_string()
        }
        (SourceKind::XlaDumpText, _) => {
            "the dump has no buffer assignment of this module to replay".to_string()
        }
        _ => {
            "its input holds no heap-simulator trace and no buffer assignment to replay".to_string()
        }
    };
    Some((name, why, module.peak_bytes))
}

fn attach_programs(report: &mut Report, programs: &[HeapProgram], device: Option<u64>) {
    let limit = hbm_limit(report).or(device);
    let Some(program) = chosen(report, programs, limit) else {
        if let Some((module, why, peak_bytes)) = unreplayable(report, programs, limit) {
            let why = format!("cannot replay {module}: {why}");
            oomscope_diagnosis::what_if::attach(
                &mut report.diagnosis,
                oomscope_diagnosis::what_if::Replayed {
                    singles: Vec::new(),
                    combination: None,
                    absent: Remedy::ALL.iter().map(|&r| (r, why.clone())).collect(),
                    peak_bytes,
                    limit_bytes: limit,
                },
            );
        }
        return;
    };
    let settings = settings_for(report, program);
    let (singles, absent) = single_remedies(program, &settings, limit);
    let peak_bytes = oomscope_whatif::baseline(program).map_or(0, |c| c.peak_bytes);
    let fits =
        |w: &WhatIf| limit.is_some_and(|l| oomscope_diagnosis::what_if::fits_with_margin(w, l));
    let combination = match limit {
        Some(_) if !singles.iter().any(|w| fits(w)) => {
            let applicable: Vec<Remedy> = singles.iter().map(|w| w.remedy).collect();
            cheapest_combination(program, &applicable, &settings, limit, fits)
        }
        _ => None,
    };
    oomscope_diagnosis::what_if::attach(
        &mut report.diagnosis,
        oomscope_diagnosis::what_if::Replayed {
            singles,
            combination,
            absent,
            peak_bytes,
            limit_bytes: limit,
        },
    );
}

/// One combination on the chosen module (the CLI's `--what-if a,b`).
pub fn combination(
    report: &Report,
    programs: &[HeapProgram],
    remedies: &[Remedy],
    device: Option<u64>,
) -> Result<WhatIf, String> {
    let limit = hbm_limit(report).or(device);
    let program = chosen(report, programs, limit)
        .or_else(|| chosen(report, programs, None))
        .ok_or("no module with a heap-simulator trace (an HloProto with its buffer assignment) to replay")?;
    what_if(program, remedies, &settings_for(report, program), limit).map_err(|e| match e {
        WhatIfError::NotApplicable(why) => format!("does not apply: {why}"),
        WhatIfError::CannotReplay(why) => format!("cannot replay {}: {why}", program.module),
    })
}

/// What the page's worker keeps between two replays of the panel: the
/// module's [`Basis`](oomscope_whatif::Basis) (its replay, facts and parsed
/// shapes), and its single remedies for the last parameters and limit.
#[derive(Default)]
pub struct PanelCache {
    basis: Option<(String, MemoryColor, std::sync::Arc<oomscope_whatif::Basis>)>,
    singles: Option<(Settings, Option<u64>, Vec<WhatIf>, Vec<AbsentRemedy>)>,
}

/// The module view's What-if panel: `choice` replayed on the program of
/// `module` (its display name) in `space`. `cache` keeps what the next
/// request on the same module can reuse.
pub fn panel(
    programs: &[HeapProgram],
    cache: &mut PanelCache,
    module: &str,
    space: MemoryColor,
    choice: &WhatIfChoice,
    limit: Option<u64>,
) -> Result<PanelReplay, String> {
    let program = programs
        .iter()
        .find(|p| p.memory_space == space && p.module == module)
        .ok_or_else(|| format!("{module}: no program to replay (an HloProto, an XProf profile's HloProto, or dump text with live ranges and a buffer assignment gives one)"))?;
    let basis = match &cache.basis {
        Some((m, s, basis)) if m == module && *s == space => basis.clone(),
        _ => {
            cache.singles = None;
            match oomscope_whatif::Basis::of(program) {
                Ok(basis) => {
                    let basis = std::sync::Arc::new(basis);
                    cache.basis = Some((module.to_string(), space, basis.clone()));
                    basis
                }
                // Says why on every remedy.
                Err(_) => return Ok(oomscope_whatif::entries::panel(program, choice, limit)),
            }
        }
    };
    let prepared = oomscope_whatif::Prepared { program, basis };
    let settings = Settings::of(choice);
    let known = cache
        .singles
        .as_ref()
        .filter(|(s, l, _, _)| *s == settings && *l == limit)
        .map(|(_, _, singles, absent)| (singles.clone(), absent.clone()));
    let answer = oomscope_whatif::entries::panel_on(&prepared, choice, limit, known);
    cache.singles = Some((
        settings,
        limit,
        answer.singles.clone(),
        answer.absent.clone(),
    ));
    Ok(answer)
}

/// "Without these allocations" for a frame the user chose (`function
/// file:line`, as a snapshot's lines are named), on one snapshot read again
/// by slices (a snapshot's trace is not kept after its analysis): one entry
/// per device whose trace has allocations with that frame on their stack,
/// with its replayed curve. The page's worker and the CLI's `--without`
/// both come here.
pub fn snapshot_without(
    name: &str,
    source: &dyn crate::ReadAt,
    frame: &str,
) -> Result<Vec<ReplayedCurve>, String> {
    let reader = oomscope_xla::source::SequentialReader::new(source);
    oomscope_snapshot::without_frame(name, reader, source.len(), frame).map_err(|e| e.to_string())
}

/// [`snapshot_without`] on the snapshot `input` that came out of `archive`
/// (a member has no file of its own to read again): the member expanded
/// again alone from the archive's bytes, under the limits of its analysis.
pub fn snapshot_without_in_archive(
    archive: crate::InputFile,
    input: &str,
    frame: &str,
) -> Result<Vec<ReplayedCurve>, String> {
    let data = crate::archive::member(archive, input)?;
    snapshot_without(input, &data, frame)
}

/// Puts snapshot what-ifs made on request ([`snapshot_without`]) into the
/// report: each joins its snapshot's `what_if` and `diagnosis.what_if`,
/// replacing an entry for the same frame and device.
pub fn attach_snapshot_what_ifs(report: &mut Report, entries: Vec<WhatIf>) {
    let same = |a: &WhatIf, b: &WhatIf| {
        a.remedy == b.remedy && a.module == b.module && a.device == b.device && a.frame == b.frame
    };
    for w in entries {
        if let Some(s) = report
            .memory_snapshots
            .iter_mut()
            .find(|s| s.input == w.module && Some(s.device) == w.device)
        {
            s.what_if.retain(|o| !same(o, &w));
            s.what_if.push(w.clone());
        }
        report.diagnosis.what_if.retain(|o| !same(o, &w));
        report.diagnosis.what_if.push(w);
    }
}

/// [`snapshot_without`] on every snapshot among the inputs (a pickle by its
/// first bytes, archives expanded as their analysis expands them), before
/// they are analysed: the entries, and the snapshots that could not be read
/// again, named.
pub fn snapshots_without(
    files: &[crate::InputFile],
    sources: &[crate::InputSource],
    frame: &str,
) -> (Vec<WhatIf>, Vec<oomscope_report::InputError>) {
    let (mut entries, mut errors) = (Vec::new(), Vec::new());
    let mut replay = |name: &str, source: &dyn crate::ReadAt| {
        let mut head = [0u8; 2];
        let is_pickle = source.len() >= 2
            && source.read_at(0, &mut head).is_ok()
            && oomscope_snapshot::looks_like_pickle(&head);
        if !is_pickle {
            return;
        }
        match snapshot_without(name, source, frame) {
            Ok(found) => entries.extend(found.into_iter().map(|c| c.what_if)),
            Err(message) => errors.push(oomscope_report::InputError {
                input: name.to_string(),
                message,
            }),
        }
    };
    for f in files {
        if crate::archive::container_of(&f.name, &f.data).is_none() {
            replay(&f.name, &f.data);
            continue;
        }
        let mut budget = crate::archive::Budget::new(crate::archive::Limits::default());
        // The archive's own errors are the analysis's to report.
        let (inner, _) = crate::archive::expand(f.clone(), &mut budget, 0);
        for m in inner {
            replay(&m.name, &m.data);
        }
    }
    for s in sources {
        replay(&s.name, s.source.as_ref());
    }
    (entries, errors)
}
