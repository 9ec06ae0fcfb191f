//! The runtime nodes: memory over steps (steady growth, spikes, a sawtooth
//! of values kept on the device until logged) from the step series, the
//! failing request of a runtime OOM, and lingering gradient-sized outputs
//! from a module analysis. Run-time profiles (`profiles.rs`) decide when no
//! step series does, in this order: allocations that accumulate (snapshot,
//! JAX profile series), backward buffers that outlive the step (snapshot),
//! a spike (snapshot), an unbalanced device (JAX profile), what a memory
//! timeline's peak is made of, fragmentation (snapshot).

use oomscope_report::{
    BufferCategory, CitedBuffer, DeviceLimit, OomEvent, Report, StepSeries, TreeKind,
};

use crate::allocator::{allocator_trend, AllocatorShape, AllocatorTrend};
use crate::framework::Framework;
use crate::facts::{
    alloc_from_peak, cite_lifetime, counted, gib, is_compile_kind, pct_fact, pct_text, signed,
    total,
};
use crate::node::NodeEval;
use crate::profiles::{self, Accumulation as ProfileAccumulation, PeakComposition};
use crate::shape::parse_array;
use crate::tree::tree_definition;
use crate::Evaluation;

/// Fitted growth below this share of the first value is flat.
const MIN_GROWTH_FRACTION: f64 = 0.01;
/// A series shorter than this many steps may show the caching allocator
/// warming up (reserved memory grows over the first iterations) rather than a
/// leak, so the growth it shows is stated with that caveat.
const SHORT_SERIES_STEPS: u64 = 20;

use crate::ids::{
    ACCUMULATION as ACCUM, DEVICE_BALANCE, LINGERING as LINGER, PEAK_COMPOSITION, SPIKE,
    STEADY_GROWTH as STEADY, TORCH_FRAGMENTATION,
};

/// What one step series shows.
#[derive(Debug, Clone)]
struct Trend<'a> {
    series: &'a StepSeries,
    first: u64,
    last: u64,
    max: u64,
    first_step: u64,
    last_step: u64,
    /// Bytes per step: the steps crate's fitted slope, else the net average.
    slope: f64,
    slope_fitted: bool,
    /// slope × step span.
    growth: f64,
    /// (step, bytes added at that step) for each reported spike.
    jumps: Vec<(u64, u64)>,
}

impl Trend<'_> {
    fn grows(&self) -> bool {
        self.slope > 0.0
            && self.growth >= self.first as f64 * MIN_GROWTH_FRACTION
            && self.growth > 0.0
    }
    fn jump_total(&self) -> u64 {
        total(self.jumps.iter().map(|j| j.1))
    }
    /// The jumps make at least half of the net growth.
    fn spiky(&self) -> bool {
        let net = self.last.saturating_sub(self.first);
        self.jump_total() > 0 && self.jump_total().saturating_mul(2) >= net
    }
    fn sawtooth(&self) -> Option<u64> {
        self.series.sawtooth_period_steps
    }
    fn name(&self) -> String {
        let s = self.series;
        let mut name = if s.device.is_empty() {
            "the series".to_string()
        } else {
            s.device.clone()
        };
        if !s.metric.is_empty() {
            name = format!("{name} ({})", s.metric);
        }
        name
    }
}

/// The slope of a series that grows (bytes per step), as the growth node
/// reads it.
pub(crate) fn growth_slope(series: &StepSeries) -> Option<f64> {
    trend(series).filter(Trend::grows).map(|t| t.slope)
}

fn trend(series: &StepSeries) -> Option<Trend<'_>> {
    let first = series.points.first()?;
    let last = series.points.last()?;
    if series.points.len() < 3 || last.step <= first.step {
        return None;
    }
    let span = (last.step - first.step) as f64;
    let (slope, slope_fitted) = match series.slope_bytes_per_step {
        Some(s) if s.is_finite() => (s, true),
        _ => ((last.bytes as f64 - first.bytes as f64) / span, false),
    };
    let jumps = series
        .spikes
        .iter()
        .filter_map(|&step| {
            let i = series.points.iter().position(|p| p.step == step)?;
            let prev = series.points.get(i.checked_sub(1)?)?;
            let at = series.points.get(i)?;
            Some((step, at.bytes.saturating_sub(prev.bytes)))
        })
        .collect();
    Some(Trend {
        series,
        first: first.bytes,
        last: last.bytes,
        max: series.points.iter().map(|p| p.bytes).max().unwrap_or(0),
        first_step: first.step,
        last_step: last.step,
        slope,
        slope_fitted,
        growth: slope * span,
        jumps,
    })
}

/// The runtime OOM event that states the most.
pub(crate) fn primary_runtime_event(report: &Report) -> Option<&OomEvent> {
    report
        .oom_events
        .iter()
        .filter(|e| !is_compile_kind(e.kind))
        .max_by_key(|e| {
            (
                e.requested_bytes.is_some(),
                e.limit().is_some(),
                e.extra.len() + e.top_allocations.len(),
            )
        })
}

/// Whether the series or allocator timelines alone show a memory problem
/// (for the `memory_growth` tree).
pub(crate) fn series_show_problem(report: &Report) -> bool {
    report
        .step_series
        .iter()
        .filter_map(trend)
        .any(|t| t.grows() || t.spiky() || t.sawtooth().is_some())
        || main_allocator_trend(report).is_some()
        || crate::near_limit::find(report).is_some()
        || profiles::accumulation(report).is_some()
        || profiles::lingering(report).is_some()
        || profiles::spike(report).is_some()
        || profiles::balance(report).is_some_and(|b| b.2)
    // What a peak is made of, and fragmentation, are problems only when
    // memory runs out (an OOM event, or a device the user picked that the
    // peak exceeds: `verdict::none_verdict`); alone they are the peak's
    // description, not a reason to change the program.
}

/// The allocator timeline that grows or spikes (the largest change), if any.
pub(crate) fn main_allocator_trend(report: &Report) -> Option<AllocatorTrend<'_>> {
    report
        .allocator_profiles
        .iter()
        .filter_map(allocator_trend)
        .filter(|t| !matches!(t.shape, AllocatorShape::Flat { .. }))
        .max_by_key(|t| match t.shape {
            AllocatorShape::Spike { bytes, .. } => bytes,
            AllocatorShape::SteadyGrowth {
                first_quarter,
                last_quarter,
                ..
            } => last_quarter.saturating_sub(first_quarter),
            AllocatorShape::Flat { .. } => 0,
        })
}

/// Outputs of a module with a parameter's shape beyond one per parameter.
struct Lingering {
    extra: usize,
    extra_bytes: u64,
    matched: usize,
    module: String,
    /// The extra outputs, largest first.
    outputs: Vec<CitedBuffer>,
}

/// The module whose extra parameter-shaped outputs hold the most bytes.
fn lingering(report: &Report) -> Option<Lingering> {
    let mut best: Option<Lingering> = None;
    for m in report
        .modules
        .iter()
        .filter(|m| m.memory_space == oomscope_report::MemoryColor::Device)
    {
        // (category, shape key, size, index): the parameters and outputs
        // among the buffers with a lifetime when the module has them, else
        // among those at the peak (only they are matched: the others'
        // shapes are not parsed). Only the extra outputs are cited, so only
        // they are copied.
        let matched = |category: BufferCategory| {
            matches!(category, BufferCategory::Parameter | BufferCategory::Output)
        };
        let items: Vec<(BufferCategory, String, u64, usize)> = if m.buffers.is_empty() {
            m.peak_buffers
                .iter()
                .enumerate()
                .filter(|(_, b)| matched(b.category))
                .filter_map(|(i, b)| {
                    Some((b.category, parse_array(&b.shape)?.key(), b.size_bytes, i))
                })
                .collect()
        } else {
            m.buffers
                .iter()
                .enumerate()
                .filter(|(_, b)| matched(b.category))
                .filter_map(|(i, b)| {
                    Some((b.category, parse_array(&b.shape)?.key(), b.size_bytes, i))
                })
                .collect()
        };
        let cite_at = |i: usize| match m.buffers.get(i) {
            Some(b) => cite_lifetime(m, b),
            None => alloc_from_peak(m, &m.peak_buffers[i]).cited(),
        };
        let mut params: Vec<&String> = items
            .iter()
            .filter(|i| i.0 == BufferCategory::Parameter)
            .map(|i| &i.1)
            .collect();
        params.sort();
        let mut found = Lingering {
            extra: 0,
            extra_bytes: 0,
            matched: 0,
            module: m.display_name(),
            outputs: Vec::new(),
        };
        let mut used = vec![false; params.len()];
        for (cat, key, size, i) in &items {
            if *cat != BufferCategory::Output || params.binary_search(&key).is_err() {
                continue;
            }
            match params
                .iter()
                .zip(used.iter_mut())
                .find(|(p, u)| **p == key && !**u)
            {
                Some((_, u)) => {
                    *u = true;
                    found.matched += 1;
                }
                None => {
                    found.extra += 1;
                    found.extra_bytes = found.extra_bytes.saturating_add(*size);
                    found.outputs.push(cite_at(*i));
                }
            }
        }
        if found.extra > 0
            && best
                .as_ref()
                .is_none_or(|b| found.extra_bytes > b.extra_bytes)
        {
            found
                .outputs
                .sort_by_key(|b| std::cmp::Reverse(b.size_bytes));
            best = Some(found);
        }
    }
    best
}

/// `series_device`: the picked device whose limit the step series were
/// given (they had none), named in the headline.
pub(crate) fn evaluate(
    report: &Report,
    tree: TreeKind,
    series_device: Option<&DeviceLimit>,
) -> Evaluation {
    let trends: Vec<Trend<'_>> = report.step_series.iter().filter_map(trend).collect();
    // The series that tells the most: the largest growth, else the largest jumps.
    let main = trends
        .iter()
        .filter(|t| t.grows() || t.spiky() || t.sawtooth().is_some())
        .max_by(|a, b| {
            a.growth
                .total_cmp(&b.growth)
                .then(a.jump_total().cmp(&b.jump_total()))
        })
        .or_else(|| trends.first());
    let event = primary_runtime_event(report);
    let capacity = event.and_then(OomEvent::limit);
    let request_spike = match (event.and_then(|e| e.requested_bytes), capacity) {
        (Some(r), Some(c)) if c > 0 => Some((r, c, r.saturating_mul(2) >= c)),
        _ => None,
    };
    let linger = lingering(report);
    let profile_accum = profiles::accumulation(report);
    let snapshot_linger = profiles::lingering(report);
    let snapshot_spike = profiles::spike(report);
    let composition = profiles::peak_composition(report);
    let balance = profiles::balance(report);
    let fragmentation = profiles::fragmentation(report);

    let series_leaf = main.and_then(|t| {
        if t.sawtooth().is_some() {
            Some(ACCUM)
        } else if t.spiky() {
            Some(SPIKE)
        } else if t.grows() {
            Some(STEADY)
        } else {
            None
        }
    });
    let alloc = main_allocator_trend(report);
    let alloc_leaf = alloc.as_ref().map(|a| match a.shape {
        AllocatorShape::Spike { .. } => SPIKE,
        _ => STEADY,
    });
    let leaf = if tree == TreeKind::CompileHbmOom || tree == TreeKind::None {
        None
    } else {
        series_leaf
            .or(alloc_leaf)
            .or_else(|| profile_accum.as_ref().map(|_| ACCUM))
            .or_else(|| snapshot_linger.map(|_| LINGER))
            .or_else(|| linger.as_ref().map(|_| LINGER))
            .or_else(|| snapshot_spike.map(|_| SPIKE))
            .or_else(|| request_spike.filter(|r| r.2).map(|_| SPIKE))
            // A lone TPU run-time message: its own page (E0101, E0100).
            .or_else(|| crate::tpu_runtime::leaf(event))
            .or_else(|| balance.filter(|b| b.2).map(|_| DEVICE_BALANCE))
            // Without an OOM these describe the peak, they are no problem
            // to fix (see series_show_problem).
            .or_else(|| {
                composition
                    .as_ref()
                    .filter(|_| event.is_some())
                    .map(|_| PEAK_COMPOSITION)
            })
            .or_else(|| {
                fragmentation
                    .filter(|f| f.1 && event.is_some())
                    .map(|_| TORCH_FRAGMENTATION)
            })
    };
    // One step from an OOM comes first: it is what the user must act on now.
    let near = crate::near_limit::find(report);
    let leaf = match (&near, tree) {
        (Some(_), TreeKind::MemoryGrowth | TreeKind::RuntimeOom)
            if series_leaf.is_none() || tree == TreeKind::MemoryGrowth =>
        {
            Some(crate::ids::NEAR_LIMIT)
        }
        _ => leaf,
    };

    let mut nodes = Vec::new();

    // Steady growth.
    let mut steady = NodeEval::new(STEADY, "");
    match main {
        Some(t) => {
            steady.fact("device", t.series.device.clone());
            steady.fact("first_bytes", t.first);
            steady.fact("last_bytes", t.last);
            steady.fact("max_bytes", t.max);
            steady.fact("first_step", t.first_step);
            steady.fact("last_step", t.last_step);
            steady.fact("slope_bytes_per_step", t.slope);
            if let Some(limit) = t.series.limit_bytes {
                steady.fact("limit_bytes", limit);
                steady.fact("max_pct_of_limit", pct_fact(t.max, limit));
            }
            if let Some(step) = t.series.projected_limit_step {
                steady.fact("projected_limit_step", step);
            }
            let slope_text = format!(
                "{}/step{}",
                gib(t.slope.abs().round() as u64),
                if t.slope_fitted {
                    " (fitted)"
                } else {
                    " (net average)"
                }
            );
            steady.reason = if t.grows() {
                format!(
                    "{} grows from {} at step {} to {} at step {}: {}{}{}.",
                    t.name(),
                    gib(t.first),
                    t.first_step,
                    gib(t.last),
                    t.last_step,
                    slope_text,
                    t.series
                        .projected_limit_step
                        .map(|s| format!("; the limit is reached at step {s}"))
                        .unwrap_or_default(),
                    if t.spiky() {
                        "; jumps make most of it"
                    } else {
                        ""
                    }
                )
            } else {
                format!(
                    "{} stays flat ({} to {} over steps {}–{}, {}).",
                    t.name(),
                    gib(t.first),
                    gib(t.last),
                    t.first_step,
                    t.last_step,
                    slope_text
                )
            };
            if t.grows() {
                // What the series itself shows, not an extrapolation: a fixed
                // "every 1000 steps" turned six warm-up steps into 980 GiB.
                let observed = t.growth.max(0.0) as u64;
                let steps = t.last_step.saturating_sub(t.first_step);
                let framework = Framework::of_series(t.series, report);
                steady.fact("framework", framework.name());
                steady.action_worded(
                    framework.no_persistent_tensors(),
                    &format!(
                        "About {} accumulated over the {} steps of the series ({}–{}){}.",
                        gib(observed),
                        steps,
                        t.first_step,
                        t.last_step,
                        if steps < SHORT_SERIES_STEPS {
                            "; over so few steps this may be the caching allocator warming up: check a longer run"
                        } else {
                            ""
                        }
                    ),
                    Some((signed(observed), format!("slope × {steps} steps ({slope_text})"))),
                );
                steady.action_worded(framework.sync(), "", None);
                let restart = t
                    .series
                    .projected_limit_step
                    .map(|s| format!("Restart before step {s}, where the trend reaches the limit."))
                    .unwrap_or_default();
                steady.action("checkpoint_restart", &restart, None);
            }
        }
        None => {
            steady.reason = if report.step_series.is_empty() {
                "No memory-over-steps series is loaded: load a training log with per-step memory (or tpu-info samples) to tell steady growth from a spike.".into()
            } else {
                "The series have fewer than 3 points: a trend needs more steps.".into()
            };
        }
    }
    if series_leaf.is_none() {
        allocator_steady(&mut steady, report, alloc.as_ref());
    }
    nodes.push(steady);

    // Spike.
    let mut spike = NodeEval::new(SPIKE, "");
    let mut spike_reasons = Vec::new();
    if let Some(t) = main {
        if let Some(&(step, bytes)) = t.jumps.iter().max_by_key(|j| j.1) {
            spike.fact(
                "spike_steps",
                t.jumps.iter().map(|j| j.0).collect::<Vec<_>>(),
            );
            spike.fact("jump_bytes", t.jump_total());
            spike_reasons.push(format!(
                "{} jumps by {} at step {step} ({} jump{}, {} in all, vs {} net growth)",
                t.name(),
                gib(bytes),
                t.jumps.len(),
                if t.jumps.len() == 1 { "" } else { "s" },
                gib(t.jump_total()),
                gib(t.last.saturating_sub(t.first))
            ));
            spike.action(
                "find_op",
                &format!("Look at what step {step} does differently."),
                Some((
                    signed(bytes),
                    "bytes at the spike step − bytes at the step before".into(),
                )),
            );
            spike.action("activation_checkpointing", "", None);
        } else {
            spike_reasons.push(format!("{} shows no sudden jump", t.name()));
        }
    }
    if let Some((r, c, big)) = request_spike {
        spike.fact("requested_bytes", r);
        spike.fact("capacity_bytes", c);
        spike.fact("requested_pct_of_capacity", pct_fact(r, c));
        spike_reasons.push(format!(
            "the failing request of {} is {} of the {} device ({} 50%)",
            gib(r),
            pct_text(r, c),
            gib(c),
            if big { "at least" } else { "under" }
        ));
        if big && main.is_none_or(|t| t.jumps.is_empty()) {
            spike.action(
                "find_op",
                &format!("Find the operation that asks for {}.", gib(r)),
                Some((signed(r), "requested bytes from the error".into())),
            );
        }
    }
    if series_leaf.is_none() {
        if let Some(a) = &alloc {
            if let AllocatorShape::Spike {
                bytes,
                median,
                peak,
                at_seconds,
            } = a.shape
            {
                spike.fact("allocator", a.profile.allocator.clone());
                spike.fact("spike_bytes", bytes);
                spike.fact("spike_at_seconds", at_seconds);
                spike_reasons.push(format!(
                    "{} jumps once to {} at {:.3} s, {} above its median of {}",
                    a.name(),
                    gib(peak),
                    at_seconds,
                    gib(bytes),
                    gib(median)
                ));
                spike.action(
                    "find_op",
                    &format!("Look at what runs {at_seconds:.3} s into the profile."),
                    Some((
                        signed(bytes),
                        "allocator peak − median level of the timeline".into(),
                    )),
                );
            } else if report
                .allocator_profiles
                .iter()
                .any(|p| !p.timeline.is_empty())
            {
                spike_reasons.push("the allocator timelines show no single spike".into());
            }
        }
    }
    if let Some((s, sp)) = snapshot_spike {
        spike.fact("spike_bytes", sp.size_bytes);
        spike.fact("peak_allocated_bytes", s.peak_allocated_bytes);
        spike.fact("steady_bytes", sp.final_allocated_bytes);
        let what = match (sp.frame.is_empty(), sp.phase.is_empty()) {
            (false, false) => format!("{} (phase {})", sp.frame, sp.phase),
            (false, true) => sp.frame.clone(),
            (true, false) => format!("phase {}", sp.phase),
            (true, true) => format!("trace event {}", sp.alloc_event_index),
        };
        spike_reasons.push(format!(
            "in {}, one allocation of {} at {what} lifts the peak to {} ({} of it) above a steady {}",
            s.input,
            gib(sp.size_bytes),
            gib(s.peak_allocated_bytes),
            pct_text(sp.size_bytes, s.peak_allocated_bytes),
            gib(sp.final_allocated_bytes)
        ));
        if main.is_none_or(|t| t.jumps.is_empty()) {
            spike.action(
                "find_op",
                &format!("The allocation comes from {what}."),
                Some((
                    signed(sp.size_bytes),
                    "size of the short-lived allocation alive at the snapshot's peak".into(),
                )),
            );
        }
    }
    spike.reason = if spike_reasons.is_empty() {
        "Neither a step series nor a failing request is loaded.".into()
    } else {
        let mut s = spike_reasons.join("; ");
        if let Some(first) = s.get(..1) {
            s = first.to_uppercase() + s.get(1..).unwrap_or("");
        }
        s + "."
    };
    nodes.push(spike);

    // Lingering buffers.
    let mut lingering_node = NodeEval::new(LINGER, "");
    match &linger {
        Some(Lingering {
            extra,
            extra_bytes: bytes,
            matched,
            module,
            outputs,
        }) => {
            lingering_node.fact("extra_outputs", *extra);
            lingering_node.fact("extra_output_bytes", *bytes);
            lingering_node.fact("matched_outputs", *matched);
            lingering_node.cite("parameter-shaped output", outputs.iter().cloned());
            lingering_node.reason = format!(
                "{module} returns {extra} output{} with a parameter's shape beyond the {matched} that update parameters ({}): gradient-sized buffers outlive the backward pass.",
                if *extra == 1 { "" } else { "s" },
                gib(*bytes)
            );
            let framework = Framework::of_report(report);
            lingering_node.fact("framework", framework.name());
            let detail = format!("That keeps {} alive per step.", gib(*bytes));
            let how = "Σ sizes of outputs whose shape matches a parameter's, beyond one output per parameter";
            // The out-of-place sharding annotation is PyTorch/XLA's remedy
            // (seed 001); other frameworks release what holds the buffers.
            if framework == Framework::PyTorchXla {
                lingering_node.action("out_of_place", &detail, Some((signed(*bytes), how.into())));
            } else {
                lingering_node.action_worded(
                    framework.release_backward(),
                    &detail,
                    Some((signed(*bytes), how.into())),
                );
            }
        }
        None if snapshot_linger.is_some() => {
            if let Some((s, l)) = snapshot_linger {
                snapshot_lingering(&mut lingering_node, s, l);
            }
        }
        None => {
            lingering_node.reason = if report
                .modules
                .iter()
                .any(|m| m.memory_space == oomscope_report::MemoryColor::Device)
            {
                "No module returns more parameter-shaped outputs than it has parameters of those shapes.".into()
            } else {
                "No module analysis is loaded: add the XLA dump or a profile of the training step to check for gradient-sized outputs.".into()
            };
        }
    }
    nodes.push(lingering_node);

    // Device accumulation.
    let mut accum = NodeEval::new(ACCUM, "");
    match main.and_then(|t| t.sawtooth().map(|p| (t, p))) {
        Some((t, period)) => {
            accum.fact("sawtooth_period_steps", period);
            accum.fact("slope_bytes_per_step", t.slope);
            accum.reason = format!(
                "{} grows {}/step with a sawtooth every {period} steps: values kept on the device until each log.",
                t.name(),
                gib(t.slope.max(0.0).round() as u64)
            );
            let per_period = (t.slope * period as f64).max(0.0) as u64;
            accum.action(
                "to_host",
                &format!(
                    "{} About {} builds up per {period}-step period.",
                    Framework::of_series(t.series, report).to_host(),
                    gib(per_period)
                ),
                Some((signed(per_period), "slope × sawtooth period".into())),
            );
        }
        None if profile_accum.is_some() => {
            if let Some(a) = &profile_accum {
                profile_accumulation(&mut accum, a);
            }
        }
        None => {
            accum.reason = match main {
                Some(t) => format!("{} shows no sawtooth.", t.name()),
                None => "No step series to look for a sawtooth in.".into(),
            };
        }
    }
    nodes.push(accum);

    nodes.push(composition_node(composition.as_ref()));
    nodes.push(balance_node(balance));
    if let Some((s, _)) = fragmentation {
        nodes.push(snapshot_fragmentation(s));
    }

    nodes.extend(crate::tpu_runtime::nodes(event, leaf));
    nodes.push(crate::near_limit::node(
        near.as_ref(),
        leaf == Some(crate::ids::NEAR_LIMIT),
    ));

    let mut ordered = Vec::new();
    for def in tree_definition()
        .iter()
        .filter(|d| d.tree == TreeKind::RuntimeOom)
    {
        if let Some(i) = nodes.iter().position(|n| n.id == def.id) {
            let mut node = nodes.swap_remove(i);
            node.selected = leaf == Some(def.id);
            ordered.push(node.build());
        }
    }

    let from_profiles = profile_summary(
        leaf,
        main.is_some_and(|t| t.sawtooth().is_some()),
        profile_accum.as_ref(),
        snapshot_linger,
        snapshot_spike,
        composition.as_ref(),
        balance,
        fragmentation,
    );
    let summary = runtime_headline(event, main, leaf, tree, from_profiles);
    Evaluation {
        tree,
        path: leaf.map(|l| vec![l.to_string()]).unwrap_or_default(),
        headline: crate::verdict::runtime_headline(
            report,
            tree,
            leaf,
            &ordered,
            &summary,
            series_device,
        ),
        nodes: ordered,
        summary,
    }
}

/// The lingering node from a snapshot: backward-allocated buffers still
/// live at the end of the trace, with the lines that allocated them.
fn snapshot_lingering(
    node: &mut NodeEval,
    s: &oomscope_report::MemorySnapshot,
    l: &oomscope_report::LingeringBuffers,
) {
    node.fact("lingering_count", l.count);
    node.fact("lingering_bytes", l.bytes);
    node.fact(
        "frames",
        l.lines.iter().map(|x| x.frame.clone()).collect::<Vec<_>>(),
    );
    let lines: Vec<String> = l
        .lines
        .iter()
        .take(3)
        .map(|x| format!("{} ({} in {})", x.frame, gib(x.bytes), x.count))
        .collect();
    node.reason = format!(
        "In {}, {} buffer{} ({}) allocated during the backward pass {} still live at the end of the trace: gradient-sized buffers outlive the step. Allocated at {}.",
        s.input,
        l.count,
        if l.count == 1 { "" } else { "s" },
        gib(l.bytes),
        if l.count == 1 { "is" } else { "are" },
        if lines.is_empty() { "unknown frames".to_string() } else { lines.join("; ") }
    );
    node.action(
        "release_backward",
        &format!("That keeps {} alive per step.", gib(l.bytes)),
        Some((
            signed(l.bytes),
            "Σ bytes of backward-pass allocations still live at the end of the snapshot's trace"
                .into(),
        )),
    );
}

/// The accumulation node from a snapshot or a profile series.
fn profile_accumulation(node: &mut NodeEval, a: &ProfileAccumulation) {
    let per = a.per.word();
    node.fact("frame", a.frame.clone());
    node.fact(&format!("count_per_{per}"), a.count_per_period);
    node.fact(&format!("bytes_per_{per}"), a.bytes_per_period);
    node.fact(&format!("{per}s"), a.periods);
    node.fact("live_bytes", a.bytes);
    if a.per == profiles::Per::Step {
        node.fact("slope_bytes_per_step", a.bytes_per_period as f64);
    }
    node.reason = format!(
        "In {}, allocations from {} are never freed and keep coming: {} and {} more per {per} over {} {per}s ({} live).",
        a.input,
        a.frame,
        counted(a.count_per_period, "more allocation", "more allocations"),
        gib(a.bytes_per_period),
        a.periods,
        gib(a.bytes)
    );
    // Snapshots are PyTorch's; a series of profiles is JAX's.
    let framework = match a.per {
        profiles::Per::Step => Framework::PyTorch,
        profiles::Per::Profile => Framework::Jax,
    };
    node.action(
        "to_host",
        &format!(
            "{} The line {} keeps {} per {per}.",
            framework.to_host(),
            a.frame,
            gib(a.bytes_per_period)
        ),
        Some((
            signed(a.bytes),
            format!("live bytes of the line's allocations at the last {per}"),
        )),
    );
}

/// Fragmentation seen in a snapshot without an OOM: inactive blocks
/// stranded between live ones, which only expandable segments return.
fn snapshot_fragmentation(s: &oomscope_report::MemorySnapshot) -> NodeEval {
    let mut node = NodeEval::new(TORCH_FRAGMENTATION, "");
    let w = s.expandable_segments_would_return_bytes;
    node.fact("reserved_bytes", s.reserved_bytes);
    node.fact("active_allocated_bytes", s.active_allocated_bytes);
    node.fact("inactive_bytes", s.inactive_bytes);
    node.fact("expandable_segments_would_return_bytes", w);
    node.reason = format!(
        "In {} (device {}), {} is reserved and {} allocated; {} is inactive, of which {} is in free blocks stranded between live ones ({} of reserved; fragmentation): empty_cache() cannot return it, expandable segments would.",
        s.input,
        s.device,
        gib(s.reserved_bytes),
        gib(s.active_allocated_bytes),
        gib(s.inactive_bytes),
        gib(w),
        pct_text(w, s.reserved_bytes)
    );
    node.action(
        "expandable_segments",
        &format!("It would return about {}.", gib(w)),
        Some((
            signed(w),
            "inactive bytes between live blocks of ordinary segments, from the memory snapshot"
                .into(),
        )),
    );
    node
}

/// How evenly a device memory profile's devices hold their buffers.
fn balance_node(
    b: Option<(
        &oomscope_report::DeviceMemoryProfile,
        &oomscope_report::DeviceBalance,
        bool,
    )>,
) -> NodeEval {
    let mut node = NodeEval::new(DEVICE_BALANCE, "");
    let Some((p, b, unbalanced)) = b else {
        node.reason = "No device memory profile of two or more devices is loaded.".into();
        return node;
    };
    node.fact("devices", b.devices);
    node.fact("max_bytes", b.max_bytes);
    node.fact("mean_bytes", b.mean_bytes);
    node.fact("min_bytes", b.min_bytes);
    node.fact("heaviest_device", b.heaviest_device.clone());
    node.fact("even_bytes", b.even_bytes);
    let uneven = b.uneven_stacks.first();
    let ratio = b.max_bytes as f64 / b.mean_bytes.max(1) as f64;
    node.reason = format!(
        "In {}, {} holds {} against a mean of {} over {} devices ({ratio:.1}×; the lightest, {}, holds {}){}; {} is held in equal amounts on every device.",
        p.input,
        b.heaviest_device,
        gib(b.max_bytes),
        gib(b.mean_bytes),
        b.devices,
        b.lightest_device,
        gib(b.min_bytes),
        uneven
            .map(|u| format!(
                "; the most uneven buffers come from {} ({} to {} per device)",
                profiles::frame_text(&u.frame),
                gib(u.min_bytes),
                gib(u.max_bytes)
            ))
            .unwrap_or_default(),
        gib(b.even_bytes)
    );
    if unbalanced {
        let excess = b.max_bytes.saturating_sub(b.mean_bytes);
        node.action(
            "reshard",
            &uneven
                .map(|u| format!("Start with {}.", profiles::frame_text(&u.frame)))
                .unwrap_or_default(),
            Some((
                signed(excess),
                "heaviest device − mean: what an even split would take off it".into(),
            )),
        );
    }
    if b.even_bytes > 0 && b.devices > 1 {
        let per_device = b.even_bytes / u64::from(b.devices);
        let saved = per_device - per_device / u64::from(b.devices);
        node.action(
            "replicated",
            &format!(
                "They are {} per device; if replicated, sharding would free up to {} on each.{}",
                gib(per_device),
                gib(saved),
                b.even_stacks
                    .first()
                    .map(|s| format!(
                        " The largest: {} per device from {}.",
                        gib(s.bytes_per_device),
                        profiles::frame_text(&s.frame)
                    ))
                    .unwrap_or_default()
            ),
            None,
        );
    }
    node
}

/// What the largest memory timeline's peak is made of.
fn composition_node(c: Option<&PeakComposition<'_>>) -> NodeEval {
    let mut node = NodeEval::new(crate::ids::PEAK_COMPOSITION, "");
    let Some(c) = c else {
        node.reason =
            "No PyTorch memory timeline with categories is loaded (prof.export_memory_timeline)."
                .into();
        return node;
    };
    let t = c.timeline;
    for (name, bytes) in &t.peak_by_category {
        node.fact(&format!("{name}_bytes"), *bytes);
    }
    node.fact("peak_bytes", t.peak_bytes);
    node.fact("dominant_category", c.name.to_string());
    let mut parts: Vec<(&String, &u64)> =
        t.peak_by_category.iter().filter(|(_, b)| **b > 0).collect();
    parts.sort_by_key(|(_, b)| std::cmp::Reverse(**b));
    let list: Vec<String> = parts
        .iter()
        .take(4)
        .map(|(n, b)| {
            format!(
                "{} {} ({})",
                n.replace('_', " "),
                gib(**b),
                pct_text(**b, t.peak_bytes)
            )
        })
        .collect();
    node.reason = format!(
        "{} peaks at {}: {} is the largest part ({}); {}.",
        t.input,
        gib(t.peak_bytes),
        c.name.replace('_', " "),
        pct_text(c.bytes, t.peak_bytes),
        list.join(", ")
    );
    node.action(
        c.category.action(),
        &format!("They hold {} at the peak.", gib(c.bytes)),
        Some((
            signed(c.bytes),
            format!("{} bytes at the timeline's peak", c.name),
        )),
    );
    node
}

/// The steady-growth node's numbers from an allocator timeline, when no
/// step series decides.
fn allocator_steady(steady: &mut NodeEval, report: &Report, alloc: Option<&AllocatorTrend<'_>>) {
    match alloc.map(|a| (a, &a.shape)) {
        Some((
            a,
            &AllocatorShape::SteadyGrowth {
                bytes_per_second,
                first_quarter,
                last_quarter,
                seconds,
            },
        )) => {
            steady.fact("allocator", a.profile.allocator.clone());
            steady.fact("slope_bytes_per_second", bytes_per_second);
            steady.fact("first_quarter_bytes", first_quarter);
            steady.fact("last_quarter_bytes", last_quarter);
            steady.reason = format!(
                "{} grows steadily: {}/s (fitted) over {seconds:.3} s, from about {} in the first quarter of the profile to {} in the last.",
                a.name(),
                gib(bytes_per_second.max(0.0).round() as u64),
                gib(first_quarter),
                gib(last_quarter)
            );
            // What the profile shows, not an extrapolation past it (a
            // half-second profile says nothing about a minute).
            let observed = (bytes_per_second * seconds).max(0.0) as u64;
            let framework = Framework::of_report(report);
            steady.fact("framework", framework.name());
            steady.action_worded(
                framework.no_persistent_tensors(),
                &format!(
                    "About {} accumulated over the {seconds:.3} s of the profile.",
                    gib(observed)
                ),
                Some((
                    signed(observed),
                    "fitted slope of the allocator's heap + stack bytes × the profile's span"
                        .into(),
                )),
            );
            steady.action_worded(framework.sync(), "", None);
        }
        _ => {
            let flat: Vec<String> = report
                .allocator_profiles
                .iter()
                .filter_map(allocator_trend)
                .filter_map(|t| match t.shape {
                    AllocatorShape::Flat { min, max } => Some(format!(
                        "{} stays between {} and {}",
                        t.name(),
                        gib(min),
                        gib(max)
                    )),
                    _ => None,
                })
                .collect();
            if !flat.is_empty() && report.step_series.is_empty() {
                steady.reason = format!("{}: no growth.", flat.join("; "));
            }
        }
    }
}

/// The first half of the headline when a profile, not a step series,
/// selected the leaf: what it found, with its numbers.
#[allow(clippy::too_many_arguments)] // one optional finding per profile kind
fn profile_summary(
    leaf: Option<&str>,
    sawtooth: bool,
    accum: Option<&ProfileAccumulation>,
    linger: Option<(
        &oomscope_report::MemorySnapshot,
        &oomscope_report::LingeringBuffers,
    )>,
    spike: Option<(&oomscope_report::MemorySnapshot, &oomscope_report::Spike)>,
    composition: Option<&PeakComposition<'_>>,
    balance: Option<(
        &oomscope_report::DeviceMemoryProfile,
        &oomscope_report::DeviceBalance,
        bool,
    )>,
    fragmentation: Option<(&oomscope_report::MemorySnapshot, bool)>,
) -> Option<String> {
    match leaf? {
        ACCUM if !sawtooth => {
            let a = accum?;
            let per = a.per.word();
            Some(format!(
                "Memory accumulates: {} adds {} per {per} ({}) that are never freed, {} live after {} {per}s",
                a.frame,
                gib(a.bytes_per_period),
                counted(a.count_per_period, "allocation", "allocations"),
                gib(a.bytes),
                a.periods
            ))
        }
        LINGER => {
            let (_, l) = linger?;
            Some(format!(
                "{} of buffers allocated in backward ({}) stay live after the step{}",
                gib(l.bytes),
                l.count,
                l.lines
                    .first()
                    .map(|x| format!(", most from {}", x.frame))
                    .unwrap_or_default()
            ))
        }
        SPIKE => {
            let (s, sp) = spike?;
            let at = if sp.phase.is_empty() {
                sp.frame.clone()
            } else if sp.frame.is_empty() {
                format!("phase {}", sp.phase)
            } else {
                format!("{} (phase {})", sp.frame, sp.phase)
            };
            Some(format!(
                "One allocation of {} at {at} lifts the peak to {} above a steady {}",
                gib(sp.size_bytes),
                gib(s.peak_allocated_bytes),
                gib(sp.final_allocated_bytes)
            ))
        }
        TORCH_FRAGMENTATION => {
            let (s, _) = fragmentation?;
            Some(format!(
                "{} of the {} reserved on device {} is in free blocks stranded between live ones (fragmentation)",
                gib(s.expandable_segments_would_return_bytes),
                gib(s.reserved_bytes),
                s.device
            ))
        }
        DEVICE_BALANCE => {
            let (_, b, _) = balance?;
            Some(format!(
                "{} holds {} of device buffers, {:.1}× the mean of {} over {} devices ({} above it)",
                b.heaviest_device,
                gib(b.max_bytes),
                b.max_bytes as f64 / b.mean_bytes.max(1) as f64,
                gib(b.mean_bytes),
                b.devices,
                gib(b.max_bytes.saturating_sub(b.mean_bytes))
            ))
        }
        PEAK_COMPOSITION => {
            let c = composition?;
            Some(format!(
                "Peak of {}: {} {} ({})",
                gib(c.timeline.peak_bytes),
                c.name.replace('_', " "),
                gib(c.bytes),
                pct_text(c.bytes, c.timeline.peak_bytes)
            ))
        }
        _ => None,
    }
}

fn runtime_headline(
    event: Option<&OomEvent>,
    main: Option<&Trend<'_>>,
    leaf: Option<&str>,
    tree: TreeKind,
    from_profiles: Option<String>,
) -> String {
    let start = match (tree, event) {
        (TreeKind::RuntimeOom, Some(e)) => {
            let loading =
                e.tpu_runtime_failure == Some(oomscope_report::TpuRuntimeFailure::ProgramLoad);
            let mut s = if loading {
                "Out of memory loading a program".to_string()
            } else {
                "Out of memory at run time".to_string()
            };
            if let Some(r) = e.requested_bytes {
                if loading {
                    s.push_str(&format!(": it reserves {}", gib(r)));
                } else {
                    s.push_str(&format!(": asked for {}", gib(r)));
                }
                let in_use = e.allocated_bytes.or(e.extra.get("in_use_bytes").copied());
                match (in_use, e.limit()) {
                    (Some(u), Some(c)) => {
                        s.push_str(&format!(" with {} of {} in use", gib(u), gib(c)))
                    }
                    (None, Some(c)) => s.push_str(&format!(" of {}", gib(c))),
                    _ => {}
                }
            }
            s
        }
        _ => match main {
            _ if from_profiles.is_some() => from_profiles.unwrap_or_default(),
            Some(t) => format!(
                "Memory on {}: {} at step {} → {} at step {}",
                t.name(),
                gib(t.first),
                t.first_step,
                gib(t.last),
                t.last_step
            ),
            None => "No out-of-memory error found".to_string(),
        },
    };
    let end = match leaf {
        Some(id) => format!(
            " → {}",
            crate::node::lower_first(crate::tree::node_def(id).map_or(id, |d| d.title))
        ),
        None if tree == TreeKind::RuntimeOom => {
            "; one event cannot tell steady growth from a spike: load a log with memory per step"
                .to_string()
        }
        None => String::new(),
    };
    format!("{start}{end}")
}
