//! The headline of every report: the verdict or the next step, with the
//! estimate that justifies it. Failures are red; a fit is information; a
//! trend towards the limit or a padding-dominated peak is a warning.

use oomscope_report::{
    CompileUsage, Confidence, DeviceLimit, DiagnosisNode, Headline, InputError, InputKind,
    MemoryColor, MemorySpace, ModuleReport, PeakKind, Report, Severity, TreeKind,
};

use crate::facts::{gib, pct_text, signed};
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
            // A picked device projects step series only (lib.rs
            // series_with_limit): ask for it only then.
            let ask = if report.step_series.iter().any(|s| !s.points.is_empty()) {
                "; no limit known: pick the device to see at which step it runs out"
            } else {
                ""
            };
            text = format!(
                "Growing {} per step{ask} ({summary})",
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

/// The peak of a run-time input (snapshot, timeline, device memory
/// profile, allocator profile): its bytes, what it is, and what makes it
/// (the lines or categories that hold the most at that peak).
pub(crate) struct OtherPeak {
    pub bytes: u64,
    pub what: String,
    /// `most of it from …`, empty when the input does not say.
    pub made_of: String,
}

/// How the snapshot reader names allocations whose trace has no frames.
const NO_STACK: &str = oomscope_report::NO_STACK_LINE;

/// The largest run-time peak of the report.
pub(crate) fn other_peak(report: &Report) -> Option<OtherPeak> {
    let lines = |parts: Vec<(String, u64)>, peak: u64| {
        let parts: Vec<String> = parts
            .into_iter()
            .filter(|(_, b)| *b > 0)
            .take(3)
            .map(|(what, b)| {
                if what == NO_STACK {
                    format!(
                        "{} ({}) allocated with no stack recorded",
                        gib(b),
                        pct_text(b, peak)
                    )
                } else {
                    format!("{what} ({}, {})", gib(b), pct_text(b, peak))
                }
            })
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("at the peak: {}", parts.join("; "))
        }
    };
    let snapshots = report.memory_snapshots.iter().map(|s| OtherPeak {
        bytes: s.peak_allocated_bytes,
        what: format!("the memory snapshot's peak allocated (device {})", s.device),
        made_of: lines(
            s.top_lines_at_peak
                .iter()
                .map(|l| (l.frame.clone(), l.bytes))
                .collect(),
            s.peak_allocated_bytes,
        ),
    });
    let timelines = report.memory_timelines.iter().map(|t| {
        let mut parts: Vec<(String, u64)> = t
            .peak_by_category
            .iter()
            .map(|(n, b)| (n.replace('_', " "), *b))
            .collect();
        parts.sort_by_key(|(_, b)| std::cmp::Reverse(*b));
        OtherPeak {
            bytes: t.peak_bytes,
            what: if t.device.is_empty() {
                "the memory timeline's peak".to_string()
            } else {
                format!("the memory timeline's peak on {}", t.device)
            },
            made_of: lines(parts, t.peak_bytes),
        }
    });
    // A profile's lines count executables and every device together, so
    // they do not say what makes one device's buffers.
    let profiles = report.device_memory_profiles.iter().flat_map(|p| {
        p.devices.iter().map(|d| OtherPeak {
            bytes: d.buffer_bytes,
            what: format!("the device memory profile's buffers on {}", d.device),
            made_of: String::new(),
        })
    });
    let allocators = report.allocator_profiles.iter().map(|a| OtherPeak {
        bytes: a.peak_heap_bytes,
        what: format!("allocator {}'s peak", a.allocator),
        made_of: String::new(),
    });
    snapshots
        .chain(timelines)
        .chain(profiles)
        .chain(allocators)
        .filter(|p| p.bytes > 0)
        .max_by_key(|p| p.bytes)
}

/// The limit the inputs give (a step log's, an allocator's capacity), or
/// the picked device's.
pub(crate) fn known_limit(report: &Report, device: Option<&DeviceLimit>) -> Option<u64> {
    device
        .map(|d| d.limit_bytes)
        .filter(|l| *l > 0)
        .or_else(|| report.step_series.iter().find_map(|s| s.limit_bytes))
        .or_else(|| {
            report
                .allocator_profiles
                .iter()
                .map(|p| p.capacity_bytes)
                .filter(|c| *c > 0)
                .max()
        })
        .or_else(|| largest_compile_usage(report).and_then(|u| u.limit_bytes))
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
    let limit = known_limit(report, device);
    let on = device
        .filter(|d| !d.name.is_empty())
        .map(|d| format!(" on {}", d.name))
        .unwrap_or_default();
    let series_max = report
        .step_series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.bytes))
        .max();
    let compiled = largest_compile_usage(report);
    let (peak, what, made_of) = match (module, compiled) {
        (Some(m), _) => (
            Some(m.peak_bytes),
            format!("{}'s {}", m.display_name(), m.peak_kind.short_words()),
            String::new(),
        ),
        (None, Some(u)) => (Some(u.used_bytes()), compile_usage_words(u), String::new()),
        (None, None) => other_peak(report)
            .map(|p| (Some(p.bytes), p.what, p.made_of))
            .unwrap_or((
                series_max,
                "the largest memory in the step log".to_string(),
                String::new(),
            )),
    };
    // What makes the peak, then what is held on every device alike.
    let mut detail: Vec<String> = Vec::new();
    if !made_of.is_empty() {
        detail.push(made_of);
    }
    if let Some(r) = crate::profiles::replication(report) {
        detail.push(crate::profiles::replication_text(&r));
    }
    // Then the rank that differs from the others (the ranks view's first
    // finding, with its line), which is what a job of many ranks comes for.
    if let Some(f) = report.rank_findings.first() {
        detail.push(f.text.clone());
    }
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({})", detail.join("; "))
    };
    let padding = module.and_then(|m| {
        let p = m.padding.as_ref()?.peak_padding_bytes;
        (p as f64 >= m.peak_bytes as f64 * PADDING_DOMINATES).then_some((m, p))
    });
    let mut fits = NodeEval::new(VERDICT_FITS, "");
    let mut over = NodeEval::new(VERDICT_OVER_LIMIT, "");
    let mut pad = NodeEval::new(VERDICT_PADDING, "");
    let mut no_limit = NodeEval::new(VERDICT_NO_LIMIT, "");
    let mut nothing = NodeEval::new(VERDICT_NOTHING, "");
    let fit_text = match (peak, limit) {
        (Some(p), Some(l)) if p <= l => Some(format!(
            "fits{on} with {} to spare: {what} is {} of {} ({}){detail}",
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
        // The headline's share is of the peak, so the shape it names is
        // ranked at the peak too; its padding over all buffers (the padding
        // view's "all buffers") is given beside it when larger.
        let top = oomscope_layout::padding::peak_padding_top(m);
        let detail = top
            .map(|t| {
                // The suggestion is a clause ("transpose so that …"); here it
                // starts a sentence.
                let mut suggestion = t.suggestion.chars();
                let suggestion = suggestion
                    .next()
                    .map(|c| c.to_uppercase().chain(suggestion).collect::<String>())
                    .unwrap_or_default();
                let overall = m
                    .padding
                    .as_ref()
                    .and_then(|s| s.top.iter().find(|e| e.shape == t.shape))
                    .filter(|e| e.padding_bytes > t.padding_bytes)
                    .map(|e| format!("; {} over all {} buffers of this shape, live at the peak or not", gib(e.padding_bytes), e.count))
                    .unwrap_or_default();
                format!(
                    "The largest at the peak: {} ({}, {} of padding at the peak{overall}). {suggestion}",
                    t.shape,
                    crate::facts::counted(t.count as f64, "buffer", "buffers"),
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
            text: format!("No out-of-memory error. It {text}"),
            estimate_bytes: Some(l.saturating_sub(p)),
            severity: Severity::Info,
            confidence: Some(Confidence::High),
        }
    } else if let (Some(p), Some(l)) = (peak, limit) {
        // Over a limit the user picked (or a log gave) with no OOM in the
        // inputs: a run-time peak recorded where more memory was available.
        over.selected = true;
        over.fact("peak_bytes", p);
        over.fact("limit_bytes", l);
        over.fact("over_bytes", p - l);
        over.reason = format!(
            "{what} is {}, over the {} limit{on} by {}{detail}.",
            gib(p),
            gib(l),
            gib(p - l)
        );
        // A timeline's categories say which remedy buys the most.
        let remedy = crate::profiles::peak_composition(report)
            .map(|c| {
                format!(
                    "{} They hold {} at the peak.",
                    crate::tree::action_text(PEAK_COMPOSITION, c.category.action()),
                    gib(c.bytes)
                )
            })
            .unwrap_or_default();
        over.action(
            "make_room",
            &remedy,
            Some((signed(p - l), "peak − limit".into())),
        );
        Headline {
            node: VERDICT_OVER_LIMIT.into(),
            text: format!(
                "Does not fit{on}: {what} is {}, over the {} limit by {}{detail}. Next step: {}",
                gib(p),
                gib(l),
                gib(p - l),
                over.actions.first().map_or("", |a| a.text.as_str())
            ),
            estimate_bytes: Some(p - l),
            severity: Severity::Failure,
            confidence: None,
        }
    } else if let Some(p) = peak {
        no_limit.selected = true;
        no_limit.fact("peak_bytes", p);
        no_limit.reason = format!(
            "{what} is {}{detail}, but no input gives the device's limit.",
            gib(p)
        );
        no_limit.action("pick_device", "", None);
        Headline {
            node: VERDICT_NO_LIMIT.into(),
            text: format!(
                "No out-of-memory error; {what} is {}{detail}. No limit known: pick the device to see whether it fits",
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
        // An input of a known kind that could not be read is the likelier
        // answer than "add other data": a truncated snapshot or profile says
        // so first. (A text that is simply no memory data, of kind unknown,
        // is not: the usual advice stands.)
        let damaged: Vec<&InputError> = report
            .errors
            .iter()
            .filter(|e| {
                report
                    .inputs
                    .iter()
                    .any(|i| i.name == e.input && i.kind != InputKind::Unknown)
            })
            .collect();
        let text = match damaged.as_slice() {
            [] => "Nothing in these inputs describes memory use: add the OOM message, an XLA dump, an XProf profile or a training log with memory per step".to_string(),
            [first, rest @ ..] => {
                nothing.reason = format!(
                    "{} {} could not be read.",
                    nothing.reason,
                    if rest.is_empty() { "One input".to_string() } else { format!("{} inputs", rest.len() + 1) }
                );
                let more = match rest.len() {
                    0 => String::new(),
                    1 => " (and 1 more input)".to_string(),
                    n => format!(" (and {n} more inputs)"),
                };
                // Readers' messages often start with the file's name already.
                let message = first
                    .message
                    .strip_prefix(&format!("{}: ", first.input))
                    .unwrap_or(&first.message);
                format!(
                    "Nothing could be read from {}{more}: {message}. Nothing else in these inputs describes memory use",
                    first.input
                )
            }
        };
        Headline {
            node: VERDICT_NOTHING.into(),
            text,
            estimate_bytes: None,
            severity: Severity::Info,
            confidence: None,
        }
    };
    for n in [&mut fits, &mut over, &mut pad, &mut no_limit, &mut nothing] {
        if n.reason.is_empty() {
            n.reason = "Not selected.".into();
        }
    }
    (headline, vec![fits, over, pad, no_limit, nothing])
}
