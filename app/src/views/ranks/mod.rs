//! Many ranks side by side (issue 26): what the analyzer recognised as the
//! job's ranks and how, a table of every rank (peak, final, growth per step,
//! OOM; the median rank marked as the reference), one chart with every
//! rank's memory over steps, the ranks that differ with the line that makes
//! the difference, and OOMs printed by several ranks once each. Picking a
//! rank (a row) is `rank:N` in `AppState::open_view`, so a link reopens it.
//! Below, every file with the rank and step recognised in it, which the
//! user can correct: the ranks are then grouped again from the report on
//! the page (`oomscope_ranks::regroup`, in the worker), no file read again. The analyzer
//! computes every number; this view only draws.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_ranks::ItemKind;
use oomscope_report::units::format_bytes;
use oomscope_report::{
    RankFinding, RankFindingKind, RankNoteKind, RankOverride, RankSource, RankSummary, Report,
};

use crate::draw::line_chart::{LineChart, Series, Stroke, PALETTE};
use crate::format::{base_name, Bytes};
use crate::state::{use_state, Selection};
use crate::widgets::table_head::TableHead;

#[component]
pub fn RanksView(report: Arc<Report>) -> impl IntoView {
    if report.ranks.is_empty() && report.rank_ooms.is_empty() {
        return ().into_any();
    }
    let notes = report
        .rank_notes
        .iter()
        .map(|n| {
            let class = match n.kind {
                RankNoteKind::Clash | RankNoteKind::Failed => "rank-note warning",
                _ => "rank-note muted",
            };
            view! { <li class=class data-kind=format!("{:?}", n.kind).to_lowercase()>{n.text.clone()}</li> }
        })
        .collect_view();
    let findings = report
        .rank_findings
        .iter()
        .map(|f| view! { <FindingItem finding=f.clone()/> })
        .collect_view();
    let ooms = report
        .rank_ooms
        .iter()
        .map(|o| {
            let ranks: Vec<String> = o.ranks.iter().map(|r| r.to_string()).collect();
            let differing = o
                .differing
                .iter()
                .map(|d| {
                    let per: Vec<String> = d
                        .by_rank
                        .iter()
                        .map(|(r, b)| format!("rank {r}: {}", format_bytes(*b)))
                        .collect();
                    view! { <li><code>{d.field.clone()}</code> " differs: " {per.join(", ")}</li> }
                })
                .collect_view();
            view! {
                <div class="rank-oom" data-ranks=ranks.join(",")>
                    <p>
                        <strong>{format!("One OOM printed by {} rank{} ({})", o.ranks.len(), if o.ranks.len() == 1 { "" } else { "s" }, ranks.join(", "))}</strong>
                        " · " <span class="mono">{base_name(&o.input).to_string()}</span> {format!(" line {}", o.line)}
                    </p>
                    <p class="mono small">{o.message.clone()}</p>
                    <ul>{differing}</ul>
                </div>
            }
        })
        .collect_view();
    let chart = chart(&report.ranks);
    let table = (!report.ranks.is_empty()).then(
        || view! { <RankTable ranks=report.ranks.clone() findings=report.rank_findings.clone()/> },
    );
    let files = (!report.ranks.is_empty()).then(|| view! { <RankFiles report=report.clone()/> });
    view! {
        <section class="card" id="ranks" aria-labelledby="ranks-title">
            <h2 id="ranks-title">"Ranks"</h2>
            <ul class="rank-notes">{notes}</ul>
            <ul class="rank-findings">{findings}</ul>
            {table}
            {chart}
            {files}
            {ooms}
        </section>
    }
    .into_any()
}

/// Every input a rank was looked for in, with the rank and step recognised
/// (and by which clue); the user corrects a rank or a step here and the
/// ranks are grouped again from the report on the page, no file read again
/// (`oomscope_ranks::regroup`, then the verdict for the picked device, in
/// the worker).
#[component]
fn RankFiles(report: Arc<Report>) -> impl IntoView {
    let state = use_state();
    let items: Vec<(String, &'static str, Option<u32>, String, Option<u64>)> =
        oomscope_ranks::items(&report)
            .iter()
            .map(|i| {
                let kind = match i.kind {
                    ItemKind::DeviceMemoryProfile => "device memory profile",
                    ItemKind::MemorySnapshot => "memory snapshot",
                    ItemKind::StepLog => "step log",
                    ItemKind::XprofProfile => "XProf profile",
                };
                let (rank, how) = match &i.rank {
                    Some((r, source)) => (Some(*r), source_words(source).to_string()),
                    None => (None, "not recognised".to_string()),
                };
                (i.input.to_string(), kind, rank, how, i.step)
            })
            .collect();
    let count = items.len();
    // A notebook's embedded report has no worker to group the ranks again.
    let embedded = crate::embedded::active();
    let correct = move |input: String, rank: Option<u32>, step: Option<u64>| {
        let Some(rank) = rank else {
            return;
        };
        let Some(current) = state.report.get_untracked() else {
            return;
        };
        // Grouped again in the worker (with the verdict, for the device
        // picked): the page links no analysis.
        let correction = RankOverride { input, rank, step };
        let device = state.open_view.with_untracked(|v| v.device.clone());
        crate::worker_client::rework(
            state,
            &current,
            oomscope_app::protocol::Rework::Rank { correction, device },
            Box::new(move |answer| match answer {
                Ok(next) => state.report.set(Some(Arc::new(next))),
                Err(message) => state.notice.set(Some(format!(
                    "The ranks could not be grouped again: {message}"
                ))),
            }),
        );
    };
    let rows = items
        .into_iter()
        .map(|(input, kind, rank, how, step)| {
            let (rank_text, step_text) = (
                rank.map_or(String::new(), |r| r.to_string()),
                step.map_or(String::new(), |s| s.to_string()),
            );
            // Each field edits its own number and keeps the other as shown.
            let (rank_now, step_now) = (RwSignal::new(rank), RwSignal::new(step));
            let on_rank = {
                let input = input.clone();
                move |ev: leptos::ev::Event| {
                    let rank = event_target_value(&ev).trim().parse().ok();
                    rank_now.set(rank);
                    correct(input.clone(), rank, step_now.get_untracked());
                }
            };
            let on_step = {
                let input = input.clone();
                move |ev: leptos::ev::Event| {
                    let step = event_target_value(&ev).trim().parse().ok();
                    step_now.set(step);
                    correct(input.clone(), rank_now.get_untracked(), step);
                }
            };
            let label = base_name(&input).to_string();
            view! {
                <tr data-input=input.clone()>
                    <td class="mono" title=input.clone()>{input.clone()}</td>
                    <td>{kind}</td>
                    <td class="num">
                        <input type="number" min="0" step="1" class="rank-input" data-field="rank"
                            aria-label=format!("Rank of {label}") prop:value=rank_text disabled=embedded on:change=on_rank/>
                    </td>
                    <td class="num">
                        <input type="number" min="0" step="1" class="rank-input" data-field="step"
                            aria-label=format!("Step of {label}") prop:value=step_text disabled=embedded on:change=on_step/>
                    </td>
                    <td class="muted" data-field="how">{how}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <details class="rank-files">
            <summary>{format!(
                "What was recognised in {count} files ({})",
                if embedded { "correct a rank or a step on the full page" } else { "correct a rank or a step here" }
            )}</summary>
            <table class="data">
                <TableHead columns=vec![
                    ("File", false),
                    ("Kind", false),
                    ("Rank", true),
                    ("Step", true),
                    ("Recognised by", false),
                ]/>
                <tbody>{rows}</tbody>
            </table>
        </details>
    }
}

/// How a rank was recognised, in the table's words.
fn source_words(source: &RankSource) -> &str {
    match source {
        RankSource::Name => "the file or folder name",
        RankSource::DeviceId => "the device id in the profile",
        RankSource::SnapshotDevice => "the snapshot's CUDA device",
        RankSource::LogPrefix => "the log's rank prefix",
        RankSource::Hostname => "the profile's host",
        RankSource::User => "you",
        RankSource::Other(word) => word,
    }
}

#[component]
fn FindingItem(finding: RankFinding) -> impl IntoView {
    let kind = match finding.kind {
        RankFindingKind::Growth => "Grows",
        RankFindingKind::Excess => "Holds more",
        RankFindingKind::OomFirst => "Failed first",
        RankFindingKind::Other(_) => "Differs",
    };
    // The analyzer's text already names the line (`finding.line`), so it is
    // not repeated beside it.
    view! {
        <li class="rank-finding" data-kind=finding.kind.as_str().to_string() data-rank=finding.rank.to_string()>
            <strong>{format!("{kind}: rank {}", finding.rank)}</strong> " — " {finding.text.clone()}
        </li>
    }
}

#[component]
fn RankTable(ranks: Vec<RankSummary>, findings: Vec<RankFinding>) -> impl IntoView {
    let state = use_state();
    let selected = move || {
        state
            .open_view
            .with(|v| match Selection::parse(&v.selection) {
                Some(Selection::Rank(r)) => Some(r),
                _ => None,
            })
    };
    let rows = ranks
        .into_iter()
        .map(|k| {
            let rank = k.rank;
            let differs = findings.iter().any(|f| f.rank == rank);
            let growth = k.growth_per_step_bytes.map_or("–".to_string(), |g| {
                let sign = if g < 0 { "−" } else { "" };
                format!("{sign}{}", format_bytes(g.unsigned_abs()))
            });
            let inputs = k.inputs.join("\n");
            let count = k.inputs.len();
            view! {
                <tr
                    data-rank=rank.to_string()
                    class:median=k.median
                    class:differs=differs
                    class:selected=move || selected() == Some(rank)
                    tabindex="0"
                    on:click=move |_| state.open_view.update(|v| v.selection = Selection::Rank(rank).text())
                >
                    <td class="num">{rank} {k.median.then_some(" (median)")}</td>
                    <td class="mono">{k.device.clone()}</td>
                    <td class="num" data-field="peak"><Bytes value=k.peak_bytes/></td>
                    <td class="num" data-field="final"><Bytes value=k.final_bytes/></td>
                    <td class="num" data-field="growth">{growth}</td>
                    <td>{if k.oom { "OOM" } else { "–" }}</td>
                    <td class="num" title=inputs>{count}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="data ranks-table">
            <TableHead columns=vec![
                ("Rank", true),
                ("Device", false),
                ("Peak", true),
                ("Final", true),
                ("Growth per step", true),
                ("OOM", false),
                ("Inputs", true),
            ]/>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// Every rank's bytes over steps (or over its inputs' order), the ranks
/// that differ drawn solid, the others dashed.
fn chart(ranks: &[RankSummary]) -> Option<impl IntoView> {
    if ranks.iter().all(|k| k.bytes_per_input.len() < 2) {
        return None;
    }
    let steps = ranks
        .iter()
        .all(|k| k.steps.len() == k.bytes_per_input.len() && !k.steps.is_empty());
    let series = ranks
        .iter()
        .enumerate()
        .map(|(i, k)| Series {
            label: format!("rank {}", k.rank),
            points: k
                .bytes_per_input
                .iter()
                .enumerate()
                .map(|(j, &b)| (if steps { k.steps[j] as f64 } else { j as f64 }, b as f64))
                .collect(),
            color: PALETTE[i % PALETTE.len()],
            stroke: if k.median {
                Stroke::Dashed
            } else {
                Stroke::Solid
            },
            steps: false,
        })
        .collect::<Vec<_>>();
    let description = format!(
        "Memory of {} ranks over {}",
        ranks.len(),
        if steps { "steps" } else { "their inputs" }
    );
    Some(view! {
        <LineChart
            series=series
            marker=None
            x_label=if steps { "step" } else { "input (in order)" }
            description=description
        />
    })
}
