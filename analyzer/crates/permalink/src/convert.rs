//! `Report` ⇄ `SharedReport`, the detail reductions, and the validation of
//! decoded links (every field is checked: links are untrusted input).

use crate::bounds::{check_len, downsample_indices, enum_name, enum_parse, truncate};
use crate::{LinkError, LINK_VERSION};
use oomscope_proto::oomscope::report as pb;
use oomscope_report::*;
use std::collections::{BTreeMap, HashMap};

/// Largest string a valid link holds (labels are shortened well below this).
const MAX_STRING: usize = 4096;

fn numbers_of(e: &OomEvent) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    // The JSON is the source of truth for field names: every `*_bytes` number.
    if let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(e) {
        for (k, v) in obj {
            if k.ends_with("_bytes") {
                if let Some(n) = v.as_u64() {
                    m.insert(k, n);
                }
            }
        }
    }
    for (k, v) in &e.extra {
        m.insert(format!("extra.{k}"), *v);
    }
    m
}

pub(crate) fn to_shared(r: &Report, view: &ViewState, created_unix_ms: u64) -> pb::SharedReport {
    let mut shared = pb::SharedReport {
        version: LINK_VERSION,
        created_unix_ms,
        inputs: r
            .inputs
            .iter()
            .map(|i| pb::Input {
                name: i.name.clone(),
                kind: i.kind.as_str().into(),
                size_bytes: i.size_bytes,
                content_hash: i.content_hash.clone(),
            })
            .collect(),
        oom_events: r
            .oom_events
            .iter()
            .map(|e| pb::OomEvent {
                kind: enum_name(&e.kind),
                memory_space: e.memory_space.clone().into(),
                input: e.input.clone(),
                line: e.line,
                repeats: e.repeats,
                message: truncate(&e.message, 600),
                numbers: numbers_of(e).into_iter().collect(),
                ranks: e.ranks.clone(),
                tpu_runtime_failure: crate::typed_words::word(&e.tpu_runtime_failure),
                gpu_platform: crate::typed_words::word(&e.gpu_platform),
                scoped_instruction: crate::typed_words::word(&e.scoped_instruction),
                early_abort: crate::typed_words::word(&e.early_abort),
                padding: e.padding.as_ref().map(padding_to_shared),
                top_allocations: e
                    .top_allocations
                    .iter()
                    .map(|a| pb::TopAllocation {
                        rank: a.rank,
                        size_bytes: a.size_bytes,
                        shape: a.shape.clone(),
                        unpadded_bytes: a.unpadded_bytes,
                        padding_bytes: a.padding_bytes,
                        op_name: a.op_name.clone(),
                        source: a.source.clone(),
                        xla_label: a.xla_label.as_ref().map(|l| truncate(l, 300)),
                        allocation_type: a.allocation_type.clone(),
                    })
                    .collect(),
            })
            .collect(),
        modules: r.modules.iter().map(module_to_shared).collect(),
        step_series: r
            .step_series
            .iter()
            .map(|s| pb::StepSeries {
                source: s.source.clone(),
                input: s.input.clone(),
                device: s.device.clone(),
                metric: s.metric.clone(),
                unit: s.unit.clone(),
                steps: s.points.iter().map(|p| p.step).collect(),
                bytes: s.points.iter().map(|p| p.bytes).collect(),
                limit_bytes: s.limit_bytes,
                slope_bytes_per_step: s.slope_bytes_per_step,
                projected_limit_step: s.projected_limit_step,
                sawtooth_period_steps: s.sawtooth_period_steps,
                spikes: s.spikes.clone(),
                seconds_per_step: s.seconds_per_step,
                projected_limit_seconds: s.projected_limit_seconds,
            })
            .collect(),
        allocator_profiles: r
            .allocator_profiles
            .iter()
            .map(|p| pb::AllocatorProfile {
                allocator: p.allocator.clone(),
                input: p.input.clone(),
                peak_heap_bytes: p.peak_heap_bytes,
                peak_stack_bytes: p.peak_stack_bytes,
                peak_time_ps: p.peak_time_ps,
                capacity_bytes: p.capacity_bytes,
                fragmentation_at_peak: p.fragmentation_at_peak,
                time_ps: p.timeline.iter().map(|t| t.time_ps).collect(),
                heap_bytes: p.timeline.iter().map(|t| t.heap_bytes).collect(),
                stack_bytes: p.timeline.iter().map(|t| t.stack_bytes).collect(),
                free_bytes: p.timeline.iter().map(|t| t.free_bytes).collect(),
                active_at_peak: p
                    .active_at_peak
                    .iter()
                    .map(|a| pb::ActiveAllocation {
                        allocation_bytes: a.allocation_bytes,
                        requested_bytes: a.requested_bytes,
                        op_name: a.op_name.clone(),
                        shape: a.shape.clone(),
                        data_type: a.data_type.clone(),
                        occurrences: a.occurrences,
                    })
                    .collect(),
            })
            .collect(),
        diagnosis: Some(pb::Diagnosis {
            tree: enum_name(&r.diagnosis.tree),
            path: r.diagnosis.path.clone(),
            nodes: r
                .diagnosis
                .nodes
                .iter()
                .map(|n| pb::DiagnosisNode {
                    id: n.id.clone(),
                    title: n.title.clone(),
                    selected: n.selected,
                    reason: n.reason.clone(),
                    facts_json: serde_json::to_string(&n.facts).unwrap_or_else(|_| "{}".into()),
                    actions: n
                        .actions
                        .iter()
                        .map(|a| pb::DiagnosisAction {
                            text: a.text.clone(),
                            estimate_bytes: a.estimate_bytes,
                            how: a.how.clone(),
                            remedy: a.remedy.map(|r| r.as_str().to_string()),
                            predicted_peak_bytes: a.predicted_peak_bytes,
                        })
                        .collect(),
                    cites: n
                        .cites
                        .iter()
                        .map(|c| pb::CitedBuffer {
                            role: c.role.clone(),
                            name: c.name.clone(),
                            shape: c.shape.clone(),
                            size_bytes: c.size_bytes,
                            source: c.source.clone(),
                            module: c.module.clone(),
                            memory_space: c.memory_space.into(),
                            buffer_id: c.buffer_id,
                            listing_rank: c.listing_rank,
                        })
                        .collect(),
                })
                .collect(),
            headline: r.diagnosis.headline.as_ref().map(|h| pb::Headline {
                node: h.node.clone(),
                text: h.text.clone(),
                estimate_bytes: h.estimate_bytes,
                severity: enum_name(&h.severity),
                confidence: h.confidence.as_ref().map(enum_name).unwrap_or_default(),
            }),
            what_if_json: what_if_to_json(&r.diagnosis.what_if),
        }),
        errors: r
            .errors
            .iter()
            .map(|e| pb::InputError {
                input: e.input.clone(),
                message: e.message.clone(),
            })
            .collect(),
        view: Some(pb::ViewState {
            view: view.view.clone(),
            module: view.module,
            selection: view.selection.clone(),
            device_name: view
                .device
                .as_ref()
                .map(|d| d.name.clone())
                .unwrap_or_default(),
            device_limit_bytes: view.device.as_ref().map_or(0, |d| d.limit_bytes),
            what_if: view.what_if.as_ref().map(crate::what_if_view::to_shared),
            snapshot_without: crate::what_if_view::snapshot_replays_to_shared(
                &view.snapshot_without,
            ),
        }),
        reductions: Vec::new(),
        memory_snapshots: r
            .memory_snapshots
            .iter()
            .map(|m| pb::RuntimeSection {
                // The lines the analyzer replayed, with their curves, as
                // the page's replays travel.
                replays: crate::what_if_view::snapshot_replays_to_shared(&m.what_if_curves),
                ..crate::runtime::snapshot_to_shared(m)
            })
            .collect(),
        device_memory_profiles: r
            .device_memory_profiles
            .iter()
            .map(crate::runtime::profile_to_shared)
            .collect(),
        device_memory_series: r
            .device_memory_series
            .iter()
            .map(crate::runtime::series_to_shared)
            .collect(),
        memory_timelines: r
            .memory_timelines
            .iter()
            .map(crate::runtime::timeline_to_shared)
            .collect(),
        compile_usages: r
            .compile_usages
            .iter()
            .map(crate::runtime::compile_usage_to_shared)
            .collect(),
        ..Default::default()
    };
    crate::ranks::to_shared(r, &mut shared);
    shared
}

fn padding_to_shared(p: &PaddingSummary) -> pb::Padding {
    pb::Padding {
        total_padding_bytes: p.total_padding_bytes,
        peak_padding_bytes: p.peak_padding_bytes,
        top: p
            .top
            .iter()
            .map(|t| pb::PaddingEntry {
                shape: t.shape.clone(),
                count: t.count,
                padding_bytes: t.padding_bytes,
                expansion: t.expansion,
                suggestion: t.suggestion.clone(),
                suggestion_saves_bytes: t.suggestion_saves_bytes,
            })
            .collect(),
    }
}

fn padding_from_shared(p: pb::Padding) -> Result<PaddingSummary, LinkError> {
    check_len("padding rows", &p.top)?;
    Ok(PaddingSummary {
        total_padding_bytes: p.total_padding_bytes,
        peak_padding_bytes: p.peak_padding_bytes,
        top: p
            .top
            .into_iter()
            .map(|t| {
                Ok(PaddingEntry {
                    shape: check_str("shape", t.shape)?,
                    count: t.count,
                    padding_bytes: t.padding_bytes,
                    expansion: finite("expansion", t.expansion)?,
                    suggestion: check_str("suggestion", t.suggestion)?,
                    suggestion_saves_bytes: t.suggestion_saves_bytes,
                })
            })
            .collect::<Result<_, LinkError>>()?,
    })
}

fn module_to_shared(m: &ModuleReport) -> pb::Module {
    let positions: Vec<u64> = if m.heap_positions.is_empty() {
        (0..m.heap_bytes.len() as u64).collect()
    } else {
        m.heap_positions.clone()
    };
    let program_points = if m.heap_positions.is_empty() {
        m.heap_bytes.len() as u64
    } else {
        positions.last().map_or(0, |p| p + 1)
    };
    let mut peak_buffers: Vec<(&PeakBuffer, Option<&BufferLifetime>)> = m
        .peak_buffers
        .iter()
        .zip(m.peak_buffer_lifetimes())
        .collect();
    peak_buffers.sort_by_key(|(b, _)| std::cmp::Reverse(b.size_bytes));
    pb::Module {
        name: m.name.clone(),
        program_id: m.program_id,
        memory_space: m.memory_space.into(),
        source_kind: m.source_kind.clone().into(),
        input: m.input.clone(),
        peak_kind: m.peak_kind.clone().into(),
        peak_bytes: m.peak_bytes,
        peak_unpadded_bytes: m.peak_unpadded_bytes,
        peak_position: m.peak_position,
        heap_positions: positions,
        heap_bytes: m.heap_bytes.clone(),
        unpadded_heap_bytes: m.unpadded_heap_bytes.clone(),
        peak_buffers: peak_buffers
            .into_iter()
            .map(|(b, lifetime)| pb::PeakBuffer {
                name: b.name.clone(),
                shape: b.shape.clone(),
                size_bytes: b.size_bytes,
                unpadded_bytes: b.unpadded_bytes,
                op_name: truncate(&b.op_name, 200),
                source: b.source.clone(),
                category: enum_name(&b.category),
                logical_buffer_id: b.logical_buffer_id,
                opcode: b.opcode.clone(),
                start: lifetime.map(|l| l.start),
                end: lifetime.map(|l| l.end),
                offset_bytes: lifetime.map(|l| l.offset_bytes),
                maybe_live_out: b.maybe_live_out,
            })
            .collect(),
        parameters_bytes: m.parameters_bytes,
        maybe_live_out_bytes: m.maybe_live_out_bytes,
        total_allocation_bytes: m.total_allocation_bytes,
        indefinite_bytes: m.indefinite_bytes,
        compiler_peak_bytes: m.compiler_peak_bytes,
        padding: m.padding.as_ref().map(padding_to_shared),
        program_points,
    }
}

fn downsample_module(m: &mut pb::Module, max_points: usize) {
    let keep = downsample_indices(&m.heap_bytes, max_points);
    if keep.len() == m.heap_bytes.len() {
        return;
    }
    let pick = |v: &[u64]| {
        keep.iter()
            .filter_map(|&i| v.get(i).copied())
            .collect::<Vec<_>>()
    };
    m.heap_positions = pick(&m.heap_positions);
    m.unpadded_heap_bytes = pick(&m.unpadded_heap_bytes);
    m.heap_bytes = pick(&m.heap_bytes);
}

fn downsample_series(steps: &mut Vec<u64>, values: &mut Vec<u64>, max_points: usize) {
    let keep = downsample_indices(values, max_points);
    if keep.len() == values.len() {
        return;
    }
    *steps = keep.iter().filter_map(|&i| steps.get(i).copied()).collect();
    *values = keep
        .iter()
        .filter_map(|&i| values.get(i).copied())
        .collect();
}

/// A module's display name as [`ModuleReport::display_name`] writes it.
fn display_name(m: &pb::Module) -> String {
    match m.program_id {
        Some(id) => format!("{}({id})", m.name),
        None => m.name.clone(),
    }
}

/// Finds the carried peak buffer a cite names by module and logical id,
/// through maps, so that resolving every cite of a hostile link stays
/// linear in its size (and no string is copied per buffer).
struct PeakBufferIndex<'a> {
    modules: &'a [pb::Module],
    by_name: HashMap<String, Vec<usize>>,
    by_id: HashMap<(usize, i64), &'a pb::PeakBuffer>,
}

impl<'a> PeakBufferIndex<'a> {
    fn new(modules: &'a [pb::Module]) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_id = HashMap::new();
        for (i, m) in modules.iter().enumerate() {
            by_name.entry(display_name(m)).or_default().push(i);
            for b in &m.peak_buffers {
                if let Some(id) = b.logical_buffer_id {
                    by_id.entry((i, id)).or_insert(b);
                }
            }
        }
        PeakBufferIndex {
            modules,
            by_name,
            by_id,
        }
    }

    fn get(&self, c: &pb::CitedBuffer) -> Option<&'a pb::PeakBuffer> {
        let id = c.buffer_id?;
        self.by_name
            .get(c.module.as_str())?
            .iter()
            .filter(|&&i| self.modules[i].memory_space == c.memory_space)
            .find_map(|&i| self.by_id.get(&(i, id)).copied())
    }
}

/// Leaves out the name, shape and source of cited buffers that the link
/// carries as peak buffers; [`expand_cites`] restores them on decoding.
pub(crate) fn compact_cites(s: &mut pb::SharedReport) {
    let Some(d) = &mut s.diagnosis else { return };
    let index = PeakBufferIndex::new(&s.modules);
    for c in d.nodes.iter_mut().flat_map(|n| &mut n.cites) {
        if let Some(b) = index.get(c) {
            if b.name == c.name
                && b.shape == c.shape
                && b.source == c.source
                && b.size_bytes == c.size_bytes
            {
                c.name.clear();
                c.shape.clear();
                c.source.clear();
            }
        }
    }
}

/// Undoes [`compact_cites`]. The text restored is bounded (a hostile link
/// could cite one long-named buffer many times).
fn expand_cites(s: &mut pb::SharedReport) -> Result<(), LinkError> {
    let Some(d) = &mut s.diagnosis else {
        return Ok(());
    };
    let index = PeakBufferIndex::new(&s.modules);
    let mut budget = crate::MAX_DECODED_BYTES;
    for c in d.nodes.iter_mut().flat_map(|n| &mut n.cites) {
        if c.name.is_empty() && c.shape.is_empty() {
            if let Some(b) = index.get(c) {
                let restored = b.name.len() + b.shape.len() + b.source.len();
                budget = budget.checked_sub(restored).ok_or_else(|| {
                    LinkError::Invalid("the cited buffers name too much text".into())
                })?;
                c.name = b.name.clone();
                c.shape = b.shape.clone();
                c.source = b.source.clone();
            }
        }
    }
    Ok(())
}

/// Apply reduction `step` of [`crate::REDUCTION_STEPS`].
pub(crate) fn reduce(s: &mut pb::SharedReport, step: usize) {
    match step {
        0 => s.modules.iter_mut().for_each(|m| downsample_module(m, 256)),
        1 => s
            .modules
            .iter_mut()
            .for_each(|m| m.peak_buffers.truncate(20)),
        2 => s.modules.iter_mut().for_each(|m| downsample_module(m, 64)),
        3 => {
            for st in &mut s.step_series {
                downsample_series(&mut st.steps, &mut st.bytes, 64);
            }
            for p in &mut s.allocator_profiles {
                let keep = downsample_indices(&p.heap_bytes, 64);
                let pick = |v: &[u64]| {
                    keep.iter()
                        .filter_map(|&i| v.get(i).copied())
                        .collect::<Vec<_>>()
                };
                p.time_ps = pick(&p.time_ps);
                p.stack_bytes = pick(&p.stack_bytes);
                p.free_bytes = pick(&p.free_bytes);
                p.heap_bytes = pick(&p.heap_bytes);
                p.active_at_peak.truncate(10);
            }
        }
        4 => {
            s.modules
                .iter_mut()
                .for_each(|m| m.peak_buffers.truncate(8));
            s.oom_events
                .iter_mut()
                .for_each(|e| e.top_allocations.truncate(10));
        }
        5 => {
            if let Some(d) = &mut s.diagnosis {
                reduce_what_if(d, usize::MAX, 120);
                for n in d.nodes.iter_mut().filter(|n| !n.selected) {
                    n.actions.clear();
                    n.cites.clear();
                    n.facts_json = "{}".into();
                    n.reason = truncate(&n.reason, 100);
                }
            }
        }
        6 => {
            for m in &mut s.modules {
                if let Some(p) = &mut m.padding {
                    p.top.truncate(5);
                }
                for b in &mut m.peak_buffers {
                    b.op_name = truncate(&b.op_name, 60);
                }
            }
            for e in &mut s.oom_events {
                if let Some(p) = &mut e.padding {
                    p.top.truncate(5);
                }
                e.message = truncate(&e.message, 160);
                for a in &mut e.top_allocations {
                    a.xla_label = a.xla_label.as_ref().map(|l| truncate(l, 60));
                    a.op_name = a.op_name.as_ref().map(|l| truncate(l, 80));
                }
            }
        }
        7 => {
            s.modules.iter_mut().for_each(|m| {
                downsample_module(m, 16);
                m.peak_buffers.truncate(3);
            });
            if let Some(d) = &mut s.diagnosis {
                reduce_what_if(d, 3, 0);
            }
            // The node the sender has open travels with the link.
            let carried = s
                .view
                .as_ref()
                .and_then(|v| v.selection.strip_prefix("node:").map(str::to_string));
            if let Some(d) = &mut s.diagnosis {
                let path = d.path.clone();
                // The headline's node keeps its title for the verdict.
                let answer = d.headline.as_ref().map(|h| h.node.clone());
                d.nodes.retain(|n| {
                    n.selected
                        || path.contains(&n.id)
                        || carried.as_deref() == Some(n.id.as_str())
                        || answer.as_deref() == Some(n.id.as_str())
                });
                for n in &mut d.nodes {
                    n.cites.truncate(3);
                    for a in &mut n.actions {
                        a.text = truncate(&a.text, 240);
                        a.how = a.how.as_ref().map(|h| truncate(h, 120));
                    }
                }
            }
        }
        _ => {
            // The reasons state the numbers the facts hold.
            if let Some(d) = &mut s.diagnosis {
                for n in &mut d.nodes {
                    n.facts_json = "{}".into();
                    n.actions.truncate(2);
                    for a in &mut n.actions {
                        a.how = None;
                    }
                    n.reason = truncate(&n.reason, 160);
                }
                // The headline's prediction (the first) keeps its numbers.
                reduce_what_if(d, 1, 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Decoding: validate everything.

fn check_str(what: &str, s: String) -> Result<String, LinkError> {
    if s.len() > MAX_STRING {
        return Err(LinkError::Invalid(format!(
            "{what} is {} bytes long",
            s.len()
        )));
    }
    Ok(s)
}

fn finite(what: &str, x: f64) -> Result<f64, LinkError> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(LinkError::Invalid(format!("{what} is not a finite number")))
    }
}

pub(crate) fn from_shared(mut s: pb::SharedReport) -> Result<Report, LinkError> {
    let mut r = Report::new();
    check_len("modules", &s.modules)?;
    expand_cites(&mut s)?;
    check_len("inputs", &s.inputs)?;
    for i in s.inputs {
        r.inputs.push(InputInfo {
            name: check_str("input name", i.name)?,
            kind: enum_parse("input kind", &i.kind)?,
            size_bytes: i.size_bytes,
            content_hash: check_str("content hash", i.content_hash)?,
        });
    }
    check_len("oom events", &s.oom_events)?;
    for e in s.oom_events {
        r.oom_events.push(event_from_shared(e)?);
    }
    check_len("modules", &s.modules)?;
    for m in s.modules {
        r.modules.push(module_from_shared(m)?);
    }
    check_len("step series", &s.step_series)?;
    for st in s.step_series {
        if st.steps.len() != st.bytes.len() {
            return Err(LinkError::Invalid(
                "a step series has steps and values of different lengths".into(),
            ));
        }
        check_len("step series points", &st.steps)?;
        r.step_series.push(StepSeries {
            source: check_str("series source", st.source)?,
            input: check_str("series input", st.input)?,
            device: check_str("series device", st.device)?,
            metric: check_str("series metric", st.metric)?,
            unit: check_str("series unit", st.unit)?,
            points: st
                .steps
                .iter()
                .zip(&st.bytes)
                .map(|(&step, &bytes)| StepPoint { step, bytes })
                .collect(),
            limit_bytes: st.limit_bytes,
            slope_bytes_per_step: st
                .slope_bytes_per_step
                .map(|x| finite("slope", x))
                .transpose()?,
            projected_limit_step: st.projected_limit_step,
            sawtooth_period_steps: st.sawtooth_period_steps,
            spikes: {
                check_len("spikes", &st.spikes)?;
                st.spikes
            },
            seconds_per_step: st
                .seconds_per_step
                .map(|x| finite("step time", x))
                .transpose()?,
            projected_limit_seconds: st
                .projected_limit_seconds
                .map(|x| finite("projected time", x))
                .transpose()?,
            // Not carried by links yet.
            allocation_retries: Vec::new(),
        });
    }
    check_len("allocator profiles", &s.allocator_profiles)?;
    for p in s.allocator_profiles {
        let n = p.time_ps.len();
        if p.heap_bytes.len() != n || p.stack_bytes.len() != n || p.free_bytes.len() != n {
            return Err(LinkError::Invalid(
                "an allocator timeline has columns of different lengths".into(),
            ));
        }
        check_len("allocator timeline", &p.time_ps)?;
        check_len("active allocations", &p.active_at_peak)?;
        r.allocator_profiles.push(AllocatorProfile {
            allocator: check_str("allocator", p.allocator)?,
            input: check_str("allocator input", p.input)?,
            // Not carried: a link's ranks travel as their own sections.
            host: String::new(),
            peak_heap_bytes: p.peak_heap_bytes,
            peak_stack_bytes: p.peak_stack_bytes,
            peak_time_ps: p.peak_time_ps,
            capacity_bytes: p.capacity_bytes,
            fragmentation_at_peak: finite("fragmentation", p.fragmentation_at_peak)?,
            timeline: (0..n)
                .map(|i| AllocatorPoint {
                    time_ps: p.time_ps[i],
                    heap_bytes: p.heap_bytes[i],
                    stack_bytes: p.stack_bytes[i],
                    free_bytes: p.free_bytes[i],
                })
                .collect(),
            active_at_peak: p
                .active_at_peak
                .into_iter()
                .map(|a| {
                    Ok(ActiveAllocation {
                        allocation_bytes: a.allocation_bytes,
                        requested_bytes: a.requested_bytes,
                        op_name: check_str("op name", a.op_name)?,
                        shape: check_str("shape", a.shape)?,
                        data_type: check_str("data type", a.data_type)?,
                        occurrences: a.occurrences,
                    })
                })
                .collect::<Result<_, LinkError>>()?,
        });
    }
    // Run-time sections: links made before they were carried have none.
    check_len("memory snapshots", &s.memory_snapshots)?;
    for mut m in s.memory_snapshots {
        let replays = std::mem::take(&mut m.replays);
        let mut snapshot = crate::runtime::snapshot_from_shared(m)?;
        // Each names a line of this snapshot (its input and device).
        snapshot.what_if_curves = crate::what_if_view::snapshot_replays_from_shared(
            replays,
            std::slice::from_ref(&snapshot),
        )?;
        r.memory_snapshots.push(snapshot);
    }
    check_len("device memory profiles", &s.device_memory_profiles)?;
    for p in s.device_memory_profiles {
        r.device_memory_profiles
            .push(crate::runtime::profile_from_shared(p)?);
    }
    check_len("device memory series", &s.device_memory_series)?;
    for p in s.device_memory_series {
        r.device_memory_series
            .push(crate::runtime::series_from_shared(p)?);
    }
    check_len("memory timelines", &s.memory_timelines)?;
    for t in s.memory_timelines {
        r.memory_timelines
            .push(crate::runtime::timeline_from_shared(t)?);
    }
    check_len("compile usages", &s.compile_usages)?;
    for u in s.compile_usages {
        r.compile_usages
            .push(crate::runtime::compile_usage_from_shared(u)?);
    }
    crate::ranks::from_shared(
        [s.ranks, s.rank_findings, s.rank_ooms, s.rank_notes],
        &mut r,
    )?;
    if let Some(d) = s.diagnosis {
        check_len("diagnosis nodes", &d.nodes)?;
        check_len("diagnosis path", &d.path)?;
        r.diagnosis = Diagnosis {
            tree: enum_parse("decision tree", &d.tree)?,
            path: d
                .path
                .into_iter()
                .map(|p| check_str("node id", p))
                .collect::<Result<_, _>>()?,
            nodes: d
                .nodes
                .into_iter()
                .map(|n| {
                    let facts: BTreeMap<String, serde_json::Value> = serde_json::from_str(
                        &check_str("node facts", n.facts_json)?,
                    )
                    .map_err(|_| LinkError::Invalid("node facts are not a JSON object".into()))?;
                    Ok(DiagnosisNode {
                        id: check_str("node id", n.id)?,
                        title: check_str("node title", n.title)?,
                        selected: n.selected,
                        reason: check_str("node reason", n.reason)?,
                        facts,
                        actions: n
                            .actions
                            .into_iter()
                            .map(|a| {
                                Ok(DiagnosisAction {
                                    text: check_str("action", a.text)?,
                                    estimate_bytes: a.estimate_bytes,
                                    how: a
                                        .how
                                        .map(|h| check_str("estimate method", h))
                                        .transpose()?,
                                    // An unknown remedy word (a newer link) is dropped.
                                    remedy: a.remedy.and_then(|w| {
                                        oomscope_report::whatif::Remedy::from_word(&w)
                                    }),
                                    predicted_peak_bytes: a.predicted_peak_bytes,
                                })
                            })
                            .collect::<Result<_, LinkError>>()?,
                        cites: {
                            check_len("cited buffers", &n.cites)?;
                            n.cites
                                .into_iter()
                                .map(|c| {
                                    Ok(CitedBuffer {
                                        role: check_str("citation role", c.role)?,
                                        name: check_str("buffer name", c.name)?,
                                        shape: check_str("shape", c.shape)?,
                                        size_bytes: c.size_bytes,
                                        source: check_str("source", c.source)?,
                                        module: check_str("module name", c.module)?,
                                        memory_space: c.memory_space.into(),
                                        buffer_id: c.buffer_id,
                                        listing_rank: c.listing_rank,
                                    })
                                })
                                .collect::<Result<_, LinkError>>()?
                        },
                    })
                })
                .collect::<Result<_, LinkError>>()?,
            // Links made before the headline existed carry none.
            headline: d.headline.map(headline_from_shared).transpose()?,
            what_if: what_if_from_json(&d.what_if_json)?,
        };
    }
    check_len("errors", &s.errors)?;
    for e in s.errors {
        r.errors.push(InputError {
            input: check_str("error input", e.input)?,
            message: check_str("error message", e.message)?,
        });
    }
    let view = s.view.unwrap_or_default();
    if view.module as usize >= r.modules.len().max(1) {
        return Err(LinkError::Invalid(
            "the selected module does not exist".into(),
        ));
    }
    check_len("reductions", &s.reductions)?;
    r.shared = Some(SharedInfo {
        created_unix_ms: s.created_unix_ms,
        reductions: s
            .reductions
            .into_iter()
            .map(|x| check_str("reduction", x))
            .collect::<Result<_, _>>()?,
        view: ViewState {
            view: check_str("view", view.view)?,
            module: view.module,
            selection: check_str("selection", view.selection)?,
            // A device needs a name and a limit; a link with neither picked none.
            device: match (view.device_name.is_empty(), view.device_limit_bytes) {
                (true, 0) => None,
                (false, limit) if limit > 0 => Some(DeviceLimit {
                    name: check_str("device", view.device_name)?,
                    limit_bytes: limit,
                }),
                _ => {
                    return Err(LinkError::Invalid(
                        "the picked device has no name or no limit".into(),
                    ))
                }
            },
            what_if: view
                .what_if
                .map(crate::what_if_view::from_shared)
                .transpose()?,
            snapshot_without: crate::what_if_view::snapshot_replays_from_shared(
                view.snapshot_without,
                &r.memory_snapshots,
            )?,
        },
    });
    // A snapshot's what-ifs travel once, in `diagnosis.what_if` (see
    // `runtime::snapshot_to_shared`); each snapshot gets its own back.
    for s in &mut r.memory_snapshots {
        s.what_if = r
            .diagnosis
            .what_if
            .iter()
            .filter(|w| w.module == s.input && w.device == Some(s.device))
            .cloned()
            .collect();
    }
    Ok(r)
}

fn headline_from_shared(h: pb::Headline) -> Result<Headline, LinkError> {
    Ok(Headline {
        node: check_str("headline node", h.node)?,
        text: check_str("headline", h.text)?,
        estimate_bytes: h.estimate_bytes,
        severity: enum_parse("severity", &h.severity)?,
        confidence: if h.confidence.is_empty() {
            None
        } else {
            Some(enum_parse("confidence", &h.confidence)?)
        },
    })
}

fn event_from_shared(e: pb::OomEvent) -> Result<OomEvent, LinkError> {
    let typed = (
        e.tpu_runtime_failure,
        e.gpu_platform,
        e.scoped_instruction,
        e.early_abort,
    );
    let mut ev = OomEvent {
        kind: enum_parse("error kind", &e.kind)?,
        memory_space: check_str("memory space", e.memory_space)?.into(),
        input: check_str("event input", e.input)?,
        line: e.line,
        repeats: e.repeats,
        message: check_str("message", e.message)?,
        ..Default::default()
    };
    check_len("event ranks", &e.ranks)?;
    let ranks = e.ranks;
    check_len("numbers", &e.numbers.iter().collect::<Vec<_>>())?;
    let mut known = serde_json::Map::new();
    for (k, v) in e.numbers {
        let k = check_str("number name", k)?;
        if let Some(extra) = k.strip_prefix("extra.") {
            ev.extra.insert(extra.to_string(), v);
        } else {
            known.insert(k, serde_json::Value::from(v));
        }
    }
    // Fill the typed fields through serde so names stay in one place.
    let mut base = serde_json::to_value(&ev).map_err(|e| LinkError::Invalid(e.to_string()))?;
    if let serde_json::Value::Object(obj) = &mut base {
        for (k, v) in known {
            if !obj.contains_key(&k) && !k.ends_with("_bytes") {
                return Err(LinkError::Invalid(format!("unknown number {k:?}")));
            }
            obj.insert(k, v);
        }
    }
    let mut ev: OomEvent = serde_json::from_value(base)
        .map_err(|e| LinkError::Invalid(format!("bad error numbers: {e}")))?;
    ev.ranks = ranks;
    ev.padding = e.padding.map(padding_from_shared).transpose()?;
    check_len("top allocations", &e.top_allocations)?;
    for a in e.top_allocations {
        ev.top_allocations.push(TopAllocation {
            rank: a.rank,
            size_bytes: a.size_bytes,
            shape: check_str("shape", a.shape)?,
            unpadded_bytes: a.unpadded_bytes,
            padding_bytes: a.padding_bytes,
            op_name: a.op_name.map(|x| check_str("op name", x)).transpose()?,
            source: a.source.map(|x| check_str("source", x)).transpose()?,
            xla_label: a.xla_label.map(|x| check_str("XLA label", x)).transpose()?,
            allocation_type: a
                .allocation_type
                .map(|x| check_str("allocation type", x))
                .transpose()?,
        });
    }
    crate::typed_words::set(&mut ev, typed.0, typed.1, typed.2, typed.3)?;
    Ok(ev)
}

fn module_from_shared(m: pb::Module) -> Result<ModuleReport, LinkError> {
    let n = m.heap_bytes.len();
    if m.unpadded_heap_bytes.len() != n || m.heap_positions.len() != n {
        return Err(LinkError::Invalid(
            "a heap curve has columns of different lengths".into(),
        ));
    }
    check_len("heap curve", &m.heap_bytes)?;
    if m.heap_positions.windows(2).any(|w| w[0] >= w[1]) {
        return Err(LinkError::Invalid(
            "heap positions are not increasing".into(),
        ));
    }
    if m.heap_positions
        .last()
        .is_some_and(|&p| p >= m.program_points)
    {
        return Err(LinkError::Invalid(
            "a heap position lies past the program".into(),
        ));
    }
    if m.program_points > 0 && m.peak_position >= m.program_points {
        return Err(LinkError::Invalid("the peak lies past the program".into()));
    }
    check_len("peak buffers", &m.peak_buffers)?;
    let full = n as u64 == m.program_points;
    // The carried peak buffers that have a lifetime, for the timeline (as in
    // the full analysis, buffers live for the whole program have none).
    let mut buffers = Vec::new();
    for b in &m.peak_buffers {
        if let (Some(start), Some(end)) = (b.start, b.end) {
            if start > end || end >= m.program_points.max(1) {
                return Err(LinkError::Invalid(format!(
                    "buffer {:?} lives outside the program",
                    truncate(&b.name, 40)
                )));
            }
            buffers.push(BufferLifetime {
                id: b.logical_buffer_id.unwrap_or(-1),
                name: check_str("buffer name", b.name.clone())?,
                shape: check_str("shape", b.shape.clone())?,
                size_bytes: b.size_bytes,
                unpadded_bytes: b.unpadded_bytes,
                start,
                end,
                category: enum_parse("buffer category", &b.category)?,
                op_name: check_str("op name", b.op_name.clone())?,
                source: check_str("source", b.source.clone())?,
                opcode: check_str("opcode", b.opcode.clone())?,
                offset_bytes: b.offset_bytes.unwrap_or(0),
            });
        }
    }
    Ok(ModuleReport {
        name: check_str("module name", m.name)?,
        program_id: m.program_id,
        memory_space: m.memory_space.into(),
        source_kind: check_str("module source", m.source_kind)?.into(),
        input: check_str("module input", m.input)?,
        peak_kind: check_str("peak kind", m.peak_kind)?.into(),
        peak_bytes: m.peak_bytes,
        peak_unpadded_bytes: m.peak_unpadded_bytes,
        peak_position: m.peak_position,
        heap_positions: if full { Vec::new() } else { m.heap_positions },
        heap_bytes: m.heap_bytes,
        unpadded_heap_bytes: m.unpadded_heap_bytes,
        peak_buffers: m
            .peak_buffers
            .into_iter()
            .map(|b| {
                Ok(PeakBuffer {
                    name: check_str("buffer name", b.name)?,
                    shape: check_str("shape", b.shape)?,
                    size_bytes: b.size_bytes,
                    unpadded_bytes: b.unpadded_bytes,
                    op_name: check_str("op name", b.op_name)?,
                    source: check_str("source", b.source)?,
                    category: enum_parse("buffer category", &b.category)?,
                    logical_buffer_id: b.logical_buffer_id,
                    opcode: check_str("opcode", b.opcode)?,
                    maybe_live_out: b.maybe_live_out,
                })
            })
            .collect::<Result<_, LinkError>>()?,
        parameters_bytes: m.parameters_bytes,
        maybe_live_out_bytes: m.maybe_live_out_bytes,
        total_allocation_bytes: m.total_allocation_bytes,
        indefinite_bytes: m.indefinite_bytes,
        compiler_peak_bytes: m.compiler_peak_bytes,
        buffers,
        padding: m.padding.map(padding_from_shared).transpose()?,
        instructions: Vec::new(),
        // An input of the diagnosis, which the link carries already made.
        chips: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsampling_keeps_the_peak_first_and_last() {
        let v: Vec<u64> = (0..10_000u64)
            .map(|i| (i * 7919) % 1000)
            .chain([5000])
            .chain(0..10)
            .collect();
        let keep = downsample_indices(&v, 64);
        assert!(keep.len() <= 64 + 1);
        assert_eq!(keep[0], 0);
        assert_eq!(*keep.last().unwrap(), v.len() - 1);
        assert!(keep.contains(&10_000), "the peak index must be kept");
    }
}

/// Bytes of `diagnosis.what_if` a link may carry (its JSON).
const MAX_WHAT_IF_JSON: usize = 64 * 1024;

/// `diagnosis.what_if` as JSON for a link, without the changed buffers (the
/// page lists them from the analysis; the link keeps the predictions).
fn what_if_to_json(what_if: &[oomscope_report::whatif::WhatIf]) -> String {
    if what_if.is_empty() {
        return String::new();
    }
    let slim: Vec<oomscope_report::whatif::WhatIf> = what_if
        .iter()
        .map(|w| oomscope_report::whatif::WhatIf {
            changed: Vec::new(),
            ..w.clone()
        })
        .collect();
    serde_json::to_string(&slim).unwrap_or_default()
}

/// The what-if predictions shortened in place: at most `keep` of them (in
/// their order: single remedies first, as the analyzer lists them), each
/// `how` cut to `how_chars` characters (0: dropped). Their numbers stay whole.
fn reduce_what_if(d: &mut pb::Diagnosis, keep: usize, how_chars: usize) {
    let Ok(mut what_if) = what_if_from_json(&d.what_if_json) else {
        return;
    };
    what_if.truncate(keep);
    for w in &mut what_if {
        w.how = if how_chars == 0 {
            String::new()
        } else {
            truncate(&w.how, how_chars)
        };
        w.scope = truncate(&w.scope, 80);
    }
    d.what_if_json = what_if_to_json(&what_if);
}

fn what_if_from_json(json: &str) -> Result<Vec<oomscope_report::whatif::WhatIf>, LinkError> {
    if json.is_empty() {
        return Ok(Vec::new());
    }
    if json.len() > MAX_WHAT_IF_JSON {
        return Err(LinkError::Invalid(
            "the what-if predictions are too long".into(),
        ));
    }
    serde_json::from_str(json).map_err(|_| {
        LinkError::Invalid("the what-if predictions are not a JSON array of predictions".into())
    })
}
