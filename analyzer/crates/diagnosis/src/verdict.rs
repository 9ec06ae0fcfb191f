//! The headline of every report: the verdict or the next step, with the
//! estimate that justifies it. Failures are red; a fit is information; a
//! trend towards the limit or a padding-dominated peak is a warning.

use oomscope_report::{
    CompileUsage, Confidence, DeviceLimit, DiagnosisNode, Headline, MemoryColor, MemorySpace,
    ModuleReport, PeakKind, Report, Severity, TreeKind,
};

use crate::facts::{gib, pct_text};
use crate::ids::*;
use crate::node::NodeEval;

/// Padding at least this share of the peak dominates it.
const PADDING_DOMINATES: f64 = 0.25;

/// The HBM module with the largest peak (heap analyses before live-range sums).
pub(crate) fn largest_module(report: &Report) -> Option<&ModuleReport> {
    report
        .modules
        .iter()
        .filter(|m| m.memory_space == MemoryColor::Device && m.peak_bytes > 0)
        .max_by_key(|m| (m.peak_kind != PeakKind::LiveRange, m.peak_bytes))
}

/// The headline of a runtime or memory-growth walk: the selected node's
/// first action, with its estimate.
pub(crate) fn runtime_headline(
    report: &Report,
    tree: TreeKind,
    leaf: Option<&str>,
    nodes: &[DiagnosisNode],
    summary: &str,
    series_device: Option<&DeviceLimit>,
) -> Headline {
    let severity = if tree == TreeKind::RuntimeOom {
        Severity::Failure
    } else {
        Severity::Warning
    };
    if leaf == Some(NEAR_LIMIT) {
        if let Some(n) = crate::near_limit::find(report) {
            return crate::near_limit::headline(&n);
        }
    }
    let Some(node) = leaf.and_then(|l| nodes.iter().find(|n| n.id == l)) else {
        let step = if tree == TreeKind::RuntimeOom {
            ". Next step: load a log with memory per step, a memory snapshot or a profile of the failing run"
        } else {
            ""
        };
        return Headline {
            node: String::new(),
            text: format!("{summary}{step}"),
            estimate_bytes: None,
            severity,
            confidence: None,
        };
    };
    let action = node
        .actions
        .iter()
        .find(|a| a.estimate_bytes.is_some_and(|e| e > 0));
    let mut text = summary.to_string();
    if node.id == STEADY_GROWTH || node.id == ACCUMULATION {
        if let (Some(slope), Some(step)) = (
            node.facts
                .get("slope_bytes_per_step")
                .and_then(|v| v.as_f64()),
            node.facts
                .get("projected_limit_step")
                .and_then(|v| v.as_u64()),
        ) {
            let limit = series_device
                .map(|d| format!("the limit of {} ({})", d.name, gib(d.limit_bytes)))
                .unwrap_or_else(|| "the limit".into());
            text = format!(
                "Growing {} per step: {limit} is reached at step {step} ({summary})",
                gib(slope.max(0.0).round() as u64)
            );
        } else if let Some(slope) = node
            .facts
            .get("slope_bytes_per_step")
            .and_then(|v| v.as_f64())
        {
            text = format!(
                "Growing {} per step; no limit known: pick the device to see at which step it runs out ({summary})",
                gib(slope.max(0.0).round() as u64)
            );
        }
    }
    if let Some(a) = node.actions.first() {
        text = format!("{text}. Next step: {}", a.text);
    }
    Headline {
        node: node.id.clone(),
        text,
        estimate_bytes: action
            .and_then(|a| a.estimate_bytes)
            .and_then(|e| u64::try_from(e).ok()),
        severity,
        confidence: action.map(|_| Confidence::Medium),
    }
}

/// The peak of runtime inputs (snapshots, timelines, device memory
/// profiles, allocator profiles), the largest, and what it is.
fn other_peak(report: &Report) -> Option<(u64, String)> {
    let snapshots = report.memory_snapshots.iter().map(|s| {
        (
            s.peak_allocated_bytes,
            "the memory snapshot's peak allocated".to_string(),
        )
    });
    let timelines = report.memory_timelines.iter().map(|t| {
        (
            t.peak_bytes,
            format!("the memory timeline's peak on {}", t.device),
        )
    });
    let profiles = report.device_memory_profiles.iter().flat_map(|p| {
        p.devices.iter().map(|d| {
            (
                d.buffer_bytes,
                format!("the device memory profile's buffers on {}", d.device),
            )
        })
    });
    let allocators = report.allocator_profiles.iter().map(|a| {
        (
            a.peak_heap_bytes,
            format!("allocator {}'s peak", a.allocator),
        )
    });
    snapshots
        .chain(timelines)
        .chain(profiles)
        .chain(allocators)
        .filter(|(p, _)| *p > 0)
        .max_by_key(|(p, _)| *p)
}

/// The HBM usage the compiler logged that comes closest to its limit.
pub(crate) fn largest_compile_usage(report: &Report) -> Option<&CompileUsage> {
    report
        .compile_usages
        .iter()
        .filter(|u| u.memory_space == MemorySpace::Hbm && u.used_bytes() > 0)
        .max_by(|a, b| {
            let share = |u: &CompileUsage| match u.limit_bytes {
                Some(l) if l > 0 => u.used_bytes() as f64 / l as f64,
                _ => 0.0,
            };
            share(a)
                .total_cmp(&share(b))
                .then(a.used_bytes().cmp(&b.used_bytes()))
        })
}

/// What a compile usage's figure is, in words.
fn compile_usage_words(u: &CompileUsage) -> String {
    let module = if u.module.is_empty() {
        "the program".to_string()
    } else {
        format!("{}'s program", u.module)
    };
    match u.arguments_bytes {
        Some(a) => format!(
            "{module} ({}) with its arguments ({}), as the compiler logged them",
            gib(u.program_bytes),
            gib(a)
        ),
        None => format!("{module}, as the compiler logged it"),
    }
}

/// The verdict of a report with no OOM and no trend, and its nodes.
pub(crate) fn none_verdict(
    report: &Report,
    device: Option<&DeviceLimit>,
) -> (Headline, Vec<NodeEval>) {
    let module = largest_module(report);
    let series_limit = report.step_series.iter().find_map(|s| s.limit_bytes);
    let limit = device
        .map(|d| d.limit_bytes)
        .filter(|l| *l > 0)
        .or(series_limit);
    let on = device
        .filter(|d| !d.name.is_empty())
        .map(|d| format!(" on {}", d.name))
        .unwrap_or_default();
    let series_max = report
        .step_series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.bytes))
        .max();
    let alloc_capacity = report
        .allocator_profiles
        .iter()
        .map(|p| p.capacity_bytes)
        .filter(|c| *c > 0)
        .max();
    let compiled = largest_compile_usage(report);
    let limit = limit
        .or(alloc_capacity)
        .or(compiled.and_then(|u| u.limit_bytes));
    let (peak, what) = match (module, compiled) {
        (Some(m), _) => (
            Some(m.peak_bytes),
            format!("{}'s {}", m.display_name(), m.peak_kind.words()),
        ),
        (None, Some(u)) => (Some(u.used_bytes()), compile_usage_words(u)),
        (None, None) => other_peak(report)
            .map(|(p, w)| (Some(p), w))
            .unwrap_or((series_max, "the largest memory in the step log".to_string())),
    };
    let padding = module.and_then(|m| {
        let p = m.padding.as_ref()?.peak_padding_bytes;
        (p as f64 >= m.peak_bytes as f64 * PADDING_DOMINATES).then_some((m, p))
    });
    let mut fits = NodeEval::new(VERDICT_FITS, "");
    let mut pad = NodeEval::new(VERDICT_PADDING, "");
    let mut no_limit = NodeEval::new(VERDICT_NO_LIMIT, "");
    let mut nothing = NodeEval::new(VERDICT_NOTHING, "");
    let fit_text = match (peak, limit) {
        (Some(p), Some(l)) => Some(format!(
            "fits, with {} headroom{on}: {what} is {} of {} ({})",
            gib(l.saturating_sub(p)),
            gib(p),
            gib(l),
            pct_text(p, l)
        )),
        _ => None,
    };
    let headline = if let Some((m, p)) = padding {
        pad.selected = true;
        pad.fact("padding_bytes", p);
        pad.fact("peak_bytes", m.peak_bytes);
        pad.reason = format!(
            "Padding is {} of the peak: {} of {} in {}.",
            pct_text(p, m.peak_bytes),
            gib(p),
            gib(m.peak_bytes),
            m.display_name()
        );
        let top = m.padding.as_ref().and_then(|s| s.top.first());
        let detail = top
            .map(|t| {
                // The suggestion is a clause ("transpose so that …"); here it
                // starts a sentence.
                let mut suggestion = t.suggestion.chars();
                let suggestion = suggestion
                    .next()
                    .map(|c| c.to_uppercase().chain(suggestion).collect::<String>())
                    .unwrap_or_default();
                format!(
                    "The largest: {} ×{} ({} of padding). {suggestion}",
                    t.shape,
                    t.count,
                    gib(t.padding_bytes),
                )
            })
            .unwrap_or_default();
        pad.action(
            "align_dims",
            &detail,
            Some((
                crate::facts::signed(p),
                "padding model: Σ (padded − unpadded size) over the buffers live at the peak"
                    .into(),
            )),
        );
        Headline {
            node: VERDICT_PADDING.into(),
            text: format!(
                "Padding is {} of the peak ({} of {}){}: the fix is to align the padded dimensions to the tile. {detail}",
                pct_text(p, m.peak_bytes),
                gib(p),
                gib(m.peak_bytes),
                fit_text.as_ref().map(|f| format!("; it {f}")).unwrap_or_default()
            ),
            estimate_bytes: Some(p),
            severity: Severity::Warning,
            confidence: Some(Confidence::High),
        }
    } else if let (Some(text), Some(p), Some(l)) = (&fit_text, peak, limit) {
        fits.selected = true;
        fits.fact("peak_bytes", p);
        fits.fact("limit_bytes", l);
        fits.fact("headroom_bytes", l.saturating_sub(p));
        fits.reason = format!("It {text}.");
        Headline {
            node: VERDICT_FITS.into(),
            text: format!("No out-of-memory error: it {text}"),
            estimate_bytes: Some(l.saturating_sub(p)),
            severity: Severity::Info,
            confidence: Some(Confidence::High),
        }
    } else if let Some(p) = peak {
        no_limit.selected = true;
        no_limit.fact("peak_bytes", p);
        no_limit.reason = format!(
            "{what} is {}, but no input gives the device's limit.",
            gib(p)
        );
        no_limit.action("pick_device", "", None);
        Headline {
            node: VERDICT_NO_LIMIT.into(),
            text: format!(
                "No out-of-memory error; {what} is {}. No limit known: pick the device to see whether it fits",
                gib(p)
            ),
            estimate_bytes: None,
            severity: Severity::Info,
            confidence: None,
        }
    } else {
        nothing.selected = true;
        nothing.reason =
            "No input gives an OOM message, a module analysis or memory per step.".into();
        nothing.action("add_inputs", "", None);
        Headline {
            node: VERDICT_NOTHING.into(),
            text: "Nothing in these inputs describes memory use: add the OOM message, an XLA dump, an XProf profile or a training log with memory per step".into(),
            estimate_bytes: None,
            severity: Severity::Info,
            confidence: None,
        }
    };
    for n in [&mut fits, &mut pad, &mut no_limit, &mut nothing] {
        if n.reason.is_empty() {
            n.reason = "Not selected.".into();
        }
    }
    (headline, vec![fits, pad, no_limit, nothing])
}
