//! The verdict at the top of the report: what ran out, where, used against
//! the limit, the excess (bytes and % of the limit), the decision tree's
//! selected leaf, and the largest allocations ranked with their share of the
//! limit.
//!
//! The answer comes first: the diagnosis headline (the decision tree's next
//! step or verdict, its estimate and how sure it is), coloured by severity
//! (red only for a failure). Then the first OOM event of the report; without
//! one it says so and points at the largest module peak instead.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{
    Confidence, DiagnosisNode, Headline, OomEvent, Report, Severity, TopAllocation,
};

use crate::format::{base_name, fact_label, percent, share, Bytes};

pub fn kind_title(event: &OomEvent) -> String {
    format!(
        "{} out of memory ({})",
        event.source_words(),
        event.memory_space.as_str().to_uppercase()
    )
}

/// The limit an event was measured against ([`OomEvent::limit`]).
pub fn limit_of(event: &OomEvent) -> Option<u64> {
    event.limit()
}

/// The excess over the limit ([`OomEvent::excess`]).
pub fn excess_of(event: &OomEvent) -> Option<u64> {
    event.excess()
}

/// The section's accent: red only for a failure.
fn severity_colour(severity: Severity) -> &'static str {
    match severity {
        Severity::Failure => "var(--danger)",
        Severity::Warning => "var(--warn)",
        Severity::Info => "var(--ok)",
    }
}

fn confidence_text(c: Confidence) -> &'static str {
    match c {
        Confidence::High => "high confidence",
        Confidence::Medium => "medium confidence",
        Confidence::Low => "low confidence",
    }
}

/// The diagnosis headline: the node's title, the sentence with the user's
/// numbers, the estimate and how sure it is.
#[component]
fn HeadlineView(headline: Headline, title: String) -> impl IntoView {
    let severity = match headline.severity {
        Severity::Failure => "failure",
        Severity::Warning => "warning",
        Severity::Info => "info",
    };
    let estimate = headline.estimate_bytes.map(|b| {
        let label =
            if headline.node.starts_with("verdict.fits") || headline.node == "runtime.near_limit" {
                "Headroom"
            } else {
                "Estimate"
            };
        view! {
            <span class="stat-note" data-field="headline-estimate">
                {label} ": " <Bytes value=b/>
                {headline.confidence.map(|c| format!(" ({})", confidence_text(c)))}
            </span>
        }
    });
    view! {
        <div class="verdict-headline" data-node=headline.node.clone() data-severity=severity
            style:border-left=format!("4px solid {}", severity_colour(headline.severity))
            style:padding-left="10px" style:margin-bottom="12px">
            {(!title.is_empty()).then(|| view! { <p class="verdict-where"><a href="#diagnosis">{title.clone()}</a></p> })}
            <p class="verdict-answer" style:font-size="17px" style:margin="4px 0">{headline.text.clone()}</p>
            {estimate}
        </div>
    }
}

#[component]
pub fn Verdict(report: Arc<Report>) -> impl IntoView {
    let leaf = selected_leaf(&report).cloned();
    // The same failure in several files (the error and the log of one run)
    // is one OOM, seen in each: grouped, the first of each group shown.
    let groups = same_failures(&report.oom_events);
    let body = match groups.first() {
        Some((event, seen)) => {
            view! { <EventVerdict event=(*event).clone() also_in=seen.clone() leaf=leaf/> }
                .into_any()
        }
        None => view! { <NoOomVerdict report=report.clone()/> }.into_any(),
    };
    let others = groups
        .iter()
        .skip(1)
        .map(|(e, seen)| ((*e).clone(), seen.clone()))
        .collect::<Vec<_>>();
    let others = (!others.is_empty()).then(|| view! { <OtherEvents events=others/> });
    let headline = report.diagnosis.headline.clone();
    let colour = severity_colour(headline.as_ref().map_or(Severity::Info, |h| h.severity));
    let headline_view = headline.map(|h| {
        let title = report
            .diagnosis
            .nodes
            .iter()
            .find(|n| n.id == h.node)
            .map(|n| n.title.clone())
            .unwrap_or_default();
        view! { <HeadlineView headline=h title=title/> }
    });
    view! {
        <section class="card verdict" aria-labelledby="verdict-title" style:border-top-color=colour>
            {headline_view}
            {body}
            {others}
        </section>
    }
}

/// The report's OOM events as [`oomscope_report::same_failures`] groups
/// them: each group's richest event, and where else (`input:line`) the
/// same failure is printed.
fn same_failures(events: &[OomEvent]) -> Vec<(&OomEvent, Vec<String>)> {
    oomscope_report::same_failures(events)
        .into_iter()
        .map(|g| {
            let seen = g[1..]
                .iter()
                .map(|e| format!("{}:{}", e.input, e.line))
                .collect();
            (g[0], seen)
        })
        .collect()
}

/// The tree's answer shown under the verdict: the node the headline names
/// when it is on the path (a report of several failures has a path through
/// each, and the headline speaks of the first), else the path's end.
fn selected_leaf(report: &Report) -> Option<&DiagnosisNode> {
    let path = &report.diagnosis.path;
    let leaf_id = report
        .diagnosis
        .headline
        .as_ref()
        .map(|h| &h.node)
        .filter(|node| path.contains(node))
        .or(path.last())?;
    report.diagnosis.nodes.iter().find(|n| &n.id == leaf_id)
}

#[component]
fn EventVerdict(
    event: OomEvent,
    also_in: Vec<String>,
    leaf: Option<DiagnosisNode>,
) -> impl IntoView {
    let limit = limit_of(&event);
    let excess = excess_of(&event);
    let location = format!(
        "{}, line {}{}{}",
        event.input,
        event.line,
        if event.repeats > 1 {
            format!(" (repeated {}×)", event.repeats)
        } else {
            String::new()
        },
        if also_in.is_empty() {
            String::new()
        } else {
            format!(
                "; the same out-of-memory error is also in {}",
                also_in.join(", ")
            )
        }
    );
    let excess_share = excess.zip(limit).and_then(|(e, l)| percent(e, l));

    let stat = |label: &str, field: &str, value: Option<u64>, note: Option<String>| {
        let (label, field) = (label.to_string(), field.to_string());
        value.map(|v| {
            view! {
                <div class="stat" data-field=field>
                    <dt>{label}</dt>
                    <dd><Bytes value=v/>{note.map(|n| view! { <span class="stat-note">{n}</span> })}</dd>
                </div>
            }
        })
    };
    let extras: Vec<(String, u64)> = event
        .extra
        .iter()
        .filter(|(key, _)| key.ends_with("_bytes"))
        .map(|(key, v)| (key.clone(), *v))
        .collect();
    // A need beyond every device has no meaningful share of the limit.
    let impossible = event.is_impossible();
    let share_of_limit = |x: Option<u64>| {
        if impossible {
            return Some("an impossible requirement: no device holds that much".to_string());
        }
        x.zip(limit)
            .and_then(|(x, l)| percent(x, l))
            .map(|p| format!("{p} of the limit"))
    };
    let used_share = share_of_limit(event.used_bytes);
    let requested_share = share_of_limit(event.requested_bytes);
    let excess_share = if impossible { None } else { excess_share };
    // "Requires X, has Y available": the compiler's estimate before it gave
    // up, not memory in use.
    let (used_label, used_field) = if event.is_requirement() {
        ("Requires (the compiler's estimate)", "requires")
    } else {
        ("Used", "used")
    };

    let leaf_view = leaf.map(|node| {
        let title = if node.title.is_empty() {
            node.id.clone()
        } else {
            node.title.clone()
        };
        view! {
            <p class="verdict-leaf" data-node=node.id.clone()>
                <span class="label">"Decision tree: "</span>
                <a href="#diagnosis">{title}</a>
                " — " {node.reason.clone()}
            </p>
        }
    });
    let allocations = (!event.top_allocations.is_empty()).then(|| {
        view! { <TopAllocations allocations=event.top_allocations.clone() limit=limit/> }
    });

    view! {
        <div class="verdict-head">
            <h2 id="verdict-title" class="verdict-title">{kind_title(&event)}</h2>
            <p class="verdict-where">
                <span class="badge">{event.memory_space.as_str().to_uppercase()}</span>
                " " {location}
            </p>
        </div>
        {(!event.message.is_empty()).then(|| view! { <pre class="verdict-message">{event.message.clone()}</pre> })}
        <dl class="stats">
            {stat(used_label, used_field, event.used_bytes, used_share)}
            {stat("Limit", "limit", limit, None)}
            {stat("Over the limit by", "excess", excess, excess_share.map(|p| format!("{p} of the limit")))}
            {stat("Requested", "requested", event.requested_bytes, requested_share)}
            {stat("Free", "free", event.free_bytes, None)}
            {stat("Program", "program", event.program_bytes, None)}
            {stat("Arguments", "arguments", event.arguments_bytes, None)}
            {stat("HLO temporaries", "hlo_temp", event.hlo_temp_bytes, None)}
            {stat("TensorCore", "tensorcore", event.tensorcore_bytes, None)}
            {stat("SparseCore", "sparsecore", event.sparsecore_bytes, None)}
            {stat("Allocated", "allocated", event.allocated_bytes, None)}
            {stat("Reserved", "reserved", event.reserved_bytes, None)}
            {stat("Reserved but unallocated", "reserved_unallocated", event.reserved_unallocated_bytes, None)}
            {stat("In private pools", "private_pools", event.private_pools_bytes, None)}
            {stat("Outputs", "output", event.output_bytes, None)}
            {stat("Fragmentation", "fragmentation", event.fragmentation_bytes, None)}
            // Every other number the message states (`extra`), so none is
            // read and then left off the page.
            {extras
                .into_iter()
                .map(|(key, v)| stat(&fact_label(&key), &key, Some(v), None))
                .collect_view()}
        </dl>
        {leaf_view}
        {allocations}
    }
}

#[component]
fn TopAllocations(allocations: Vec<TopAllocation>, limit: Option<u64>) -> impl IntoView {
    // Columns the message does not fill for any entry are left out.
    let what_of = |a: &TopAllocation| {
        a.op_name
            .clone()
            .or(a.xla_label.clone())
            .unwrap_or_default()
    };
    let has_what = allocations.iter().any(|a| !what_of(a).is_empty());
    let has_source = allocations.iter().any(|a| a.source.is_some());
    let has_padding = allocations
        .iter()
        .any(|a| a.padding_bytes.is_some_and(|p| p > 0));
    let rows = allocations
        .into_iter()
        .map(|a| {
            let of_limit = limit.filter(|l| *l > 0).map(|l| a.size_bytes as f64 * 100.0 / l as f64);
            let share_text = limit.and_then(|l| share(a.size_bytes, l)).unwrap_or_default();
            let bar_width = format!("{:.1}%", of_limit.unwrap_or(0.0).min(100.0));
            let what = what_of(&a);
            let source = a.source.clone().unwrap_or_default();
            let padding = a.padding_bytes.filter(|p| *p > 0);
            view! {
                <tr data-rank=a.rank.to_string()>
                    <td class="num">{a.rank}</td>
                    <td class="num"><Bytes value=a.size_bytes/></td>
                    <td class="share">
                        <span class="share-text">{share_text}</span>
                        <span class="share-bar" aria-hidden="true"><span style:width=bar_width></span></span>
                    </td>
                    <td class="mono shape">{a.shape_words()}</td>
                    {has_what.then(|| view! { <td class="mono" title=what.clone()>{what.clone()}</td> })}
                    {has_source.then(|| view! { <td class="mono">{source.clone()}</td> })}
                    {has_padding.then(|| view! { <td class="num">{padding.map(|p| view! { <Bytes value=p/> })}</td> })}
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3 class="subhead">"Largest allocations"</h3>
        <div class="table-scroll">
            <table class="data allocations">
                <thead>
                    <tr>
                        <th scope="col" class="num">"#"</th>
                        <th scope="col" class="num">"Size"</th>
                        <th scope="col">"Share of limit"</th>
                        <th scope="col">"Shape"</th>
                        {has_what.then(|| view! { <th scope="col">"Operation"</th> })}
                        {has_source.then(|| view! { <th scope="col">"Source"</th> })}
                        {has_padding.then(|| view! { <th scope="col" class="num">"Padding"</th> })}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

#[component]
fn NoOomVerdict(report: Arc<Report>) -> impl IntoView {
    let largest = report.modules.iter().max_by_key(|m| m.peak_bytes).cloned();
    let detail = match largest {
        Some(module) => view! {
            <p>
                "The largest peak among the analysed modules is "
                <strong><Bytes value=module.peak_bytes/></strong>
                " in " <code>{module.display_name()}</code>
                // Which peak it is, in words, is the headline's and the module section's.
                " (from " {base_name(&module.input).to_string()} ")."
            </p>
        }
        .into_any(),
        None if report.inputs.is_empty() && report.errors.is_empty() => {
            view! { <p>"No input was given."</p> }.into_any()
        }
        // Step logs and run-time profiles have their own sections below.
        None if !report.step_series.is_empty()
            || !report.allocator_profiles.is_empty()
            || !report.memory_snapshots.is_empty()
            || !report.device_memory_profiles.is_empty()
            || !report.memory_timelines.is_empty() =>
        {
            view! { <p>"No compiled module in these inputs: memory over time is in the sections below."</p> }.into_any()
        }
        None => view! { <p>"Nothing in these inputs describes memory use; see the inputs and errors below."</p> }
            .into_any(),
    };
    view! {
        <h2 id="verdict-title" class="verdict-title">"No out-of-memory error found"</h2>
        {detail}
    }
}

#[component]
fn OtherEvents(events: Vec<(OomEvent, Vec<String>)>) -> impl IntoView {
    let count = events.len();
    let rows = events
        .into_iter()
        .map(|(e, also_in)| {
            let limit = limit_of(&e);
            let place = std::iter::once(format!("{}:{}", e.input, e.line))
                .chain(also_in)
                .collect::<Vec<_>>()
                .join(", ");
            view! {
                <tr>
                    <td>{kind_title(&e)}</td>
                    <td>{e.memory_space.as_str().to_uppercase()}</td>
                    <td class="mono">{place}</td>
                    <td class="num">{e.used_bytes.or(e.requested_bytes).map(|v| view! { <Bytes value=v/> })}</td>
                    <td class="num">{limit.map(|v| view! { <Bytes value=v/> })}</td>
                    <td class="num">{e.repeats}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="other-events">
            <summary>{format!("{count} more out-of-memory error{} in these inputs", if count == 1 { "" } else { "s" })}</summary>
            <div class="table-scroll">
                <table class="data">
                    <thead>
                        <tr>
                            <th scope="col">"Error"</th>
                            <th scope="col">"Space"</th>
                            <th scope="col">"Where"</th>
                            <th scope="col" class="num">"Used / requested"</th>
                            <th scope="col" class="num">"Limit"</th>
                            <th scope="col" class="num">"Repeats"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </details>
    }
}
