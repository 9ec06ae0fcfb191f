//! The troubleshooting decision tree evaluated on the user's data: nodes
//! nested by id (`aggregate.padding` sits under `aggregate`), the selected
//! path highlighted, each node expandable to its reason, facts, actions and
//! the buffers it cites, each linked to the timeline and the padding table
//! (through [`AppState::buffer_focus`]). The node opened last is the
//! selection a link carries.
//!
//! [`AppState::buffer_focus`]: crate::state::AppState

use std::collections::HashSet;
use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{CitedBuffer, DiagnosisNode, Report, TreeKind};

use crate::format::{base_name, fact_label, fact_value_words, Bytes};
use crate::navigate;
use crate::state::{use_state, BufferFocus, Selection};
use crate::widgets::table_head::TableHead;

fn tree_title(tree: TreeKind) -> &'static str {
    match tree {
        TreeKind::CompileHbmOom => "Compile-time HBM out of memory",
        TreeKind::RuntimeOom => "Runtime out of memory",
        TreeKind::MemoryGrowth => "Memory growing over steps",
        TreeKind::None => "",
    }
}

#[component]
pub fn DiagnosisView(report: Arc<Report>) -> impl IntoView {
    let diagnosis = &report.diagnosis;
    // Without a selected node (no OOM, trend or verdict) there is nothing to
    // open: the headline says what to add.
    if diagnosis.nodes.is_empty() || diagnosis.path.is_empty() {
        return ().into_any();
    }
    let path = diagnosis.path.clone();
    // A node whose id prefix names no node is a root: the runtime and
    // `torch.*` nodes share a prefix but have no parent node.
    let ids: HashSet<&str> = diagnosis.nodes.iter().map(|n| n.id.as_str()).collect();
    let roots: Vec<DiagnosisNode> = diagnosis
        .nodes
        .iter()
        .filter(|n| parent_id(&n.id).is_none_or(|p| !ids.contains(p)))
        .cloned()
        .collect();
    let nodes = diagnosis.nodes.clone();
    let links = Arc::new(CiteLinks::new(&report));
    view! {
        <section class="card" id="diagnosis" aria-labelledby="diagnosis-title">
            <div class="section-head">
                <h2 id="diagnosis-title">"What to do: the decision tree"</h2>
                <span class="muted">{tree_title(diagnosis.tree)}</span>
            </div>
            <ul class="tree">
                {roots.into_iter().map(|node| view! { <TreeNode node=node all=nodes.clone() path=path.clone() links=links.clone()/> }).collect_view()}
            </ul>
        </section>
    }
    .into_any()
}

fn parent_id(id: &str) -> Option<&str> {
    id.rsplit_once('.').map(|(parent, _)| parent)
}

/// Cited buffers shown per role before "show more".
const CITES_SHOWN_PER_ROLE: usize = 3;

/// Where a cited buffer can be shown: which timelines and padding tables
/// hold it.
struct CiteLinks {
    /// (module display name, memory space, buffer id) of every buffer with a lifetime.
    timeline: HashSet<(String, oomscope_report::MemoryColor, i64)>,
    padding: Box<dyn Fn(&BufferFocus) -> bool + Send + Sync>,
}

impl CiteLinks {
    fn new(report: &Report) -> Self {
        let timeline = report
            .modules
            .iter()
            .flat_map(|m| {
                let name = m.display_name();
                m.buffers
                    .iter()
                    .map(move |b| (name.clone(), m.memory_space, b.id))
            })
            .collect();
        CiteLinks {
            timeline,
            padding: Box::new(crate::model::padding::lists_buffer(report)),
        }
    }

    fn focus(cite: &CitedBuffer) -> BufferFocus {
        BufferFocus {
            module: cite.module.clone(),
            memory_space: cite.memory_space,
            buffer_id: cite.buffer_id,
            buffer_name: cite.name.clone(),
            listing_rank: cite.listing_rank,
        }
    }

    fn in_timeline(&self, cite: &CitedBuffer) -> bool {
        cite.buffer_id.is_some_and(|id| {
            self.timeline
                .contains(&(cite.module.clone(), cite.memory_space, id))
        })
    }

    fn in_padding(&self, cite: &CitedBuffer) -> bool {
        (self.padding)(&Self::focus(cite))
    }
}

/// The buffers a node cites, each with links to the views that show it.
#[component]
fn CitedBuffers(cites: Vec<CitedBuffer>, links: Arc<CiteLinks>) -> impl IntoView {
    let state = use_state();
    let show = move |cite: &CitedBuffer, view: &'static str| {
        let focus = CiteLinks::focus(cite);
        move |_| {
            state.open_view.update(|v| v.view = view.to_string());
            state.buffer_focus.set(Some(focus.clone()));
            if let Some(id) = navigate::section_of(view) {
                navigate::scroll_to(id);
            }
        }
    };
    // The first few of each role are shown; the rest unfold on request.
    let show_all = RwSignal::new(false);
    let mut seen_per_role: std::collections::HashMap<&str, usize> = Default::default();
    let first_few: Vec<bool> = cites
        .iter()
        .map(|c| {
            let n = seen_per_role.entry(c.role.as_str()).or_default();
            *n += 1;
            *n <= CITES_SHOWN_PER_ROLE
        })
        .collect();
    let folded = first_few.iter().filter(|f| !**f).count();
    let rows = cites
        .iter()
        .zip(first_few)
        .map(|(c, first)| {
            let timeline = links.in_timeline(c).then(|| {
                view! { <button type="button" class="cite-link" data-show="timeline" on:click=show(c, "timeline")
                    title="Pin this buffer in the module's timeline">"timeline"</button> }
            });
            let padding = links.in_padding(c).then(|| {
                view! { <button type="button" class="cite-link" data-show="padding" on:click=show(c, "padding")
                    title="Select this buffer in the padding table">"padding"</button> }
            });
            let place = if c.module.is_empty() {
                c.listing_rank.map(|r| format!("#{r} in the error's listing")).unwrap_or_default()
            } else {
                c.module.clone()
            };
            view! {
                <tr data-buffer=c.name.clone() data-role=c.role.clone() class:folded=move || !first && !show_all.get()>
                    <td>{c.role.clone()}</td>
                    <td class="mono" title=place.clone()>{if c.name.is_empty() { place.clone() } else { c.name.clone() }}</td>
                    <td class="mono shape">{c.shape.clone()}</td>
                    <td class="num"><Bytes value=c.size_bytes/></td>
                    <td class="mono" title=c.source.clone()>{base_name(&c.source).to_string()}</td>
                    <td class="cite-links">{timeline}" "{padding}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class="data cited-buffers">
                <caption class="muted">"The buffers this step is about"</caption>
                <TableHead columns=vec![("Why", false), ("Buffer", false), ("Shape", false), ("Size", true), ("Source", false), ("Show in", false)]/>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Show when=move || { folded > 0 && !show_all.get() }>
            <button type="button" class="button small secondary cites-more" on:click=move |_| show_all.set(true)>
                {format!("Show {folded} more buffers")}
            </button>
        </Show>
    }
}

#[component]
fn TreeNode(
    node: DiagnosisNode,
    all: Vec<DiagnosisNode>,
    path: Vec<String>,
    links: Arc<CiteLinks>,
) -> impl IntoView {
    let state = use_state();
    let on_path = path.contains(&node.id);
    // The node a link opened (or the user opened last) is the selection.
    let selection = Selection::Node(node.id.clone()).text();
    let is_selection = {
        let selection = selection.clone();
        move || state.open_view.with(|v| v.selection == selection)
    };
    let opened_by_link = state.open_view.with_untracked(|v| v.selection == selection);
    // A click on the summary (or Enter on it) toggles the node; opening it
    // by hand makes it the selection. (`toggle` events also fire for nodes
    // opened at mount, so they cannot tell the user's choice.)
    let on_summary = move |ev: leptos::ev::MouseEvent| {
        let opening = ev
            .current_target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .and_then(|summary| summary.parent_element())
            .and_then(|d| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlDetailsElement>(d).ok())
            .is_some_and(|d| !d.open());
        if opening && state.open_view.with_untracked(|v| v.selection != selection) {
            state.open_view.update(|v| {
                v.view = "tree".to_string();
                v.selection = selection.clone();
            });
        }
    };
    let children: Vec<DiagnosisNode> = all
        .iter()
        .filter(|n| parent_id(&n.id) == Some(node.id.as_str()))
        .cloned()
        .collect();
    let title = if node.title.is_empty() {
        node.id.clone()
    } else {
        node.title.clone()
    };
    let has_cites = !node.cites.is_empty();
    let facts = node
        .facts
        .iter()
        // The cited-buffer table shows the buffer lists in full.
        .filter(|(key, _)| !(has_cites && key.as_str() == "buffers"))
        .map(|(key, value)| {
            let words = fact_value_words(key, value);
            let shown = match value {
                _ if words.is_some() => view! { <span>{words}</span> }.into_any(),
                serde_json::Value::Number(n) if key.ends_with("_bytes") && n.as_u64().is_some() => {
                    view! { <Bytes value=n.as_u64().unwrap_or_default()/> }.into_any()
                }
                serde_json::Value::String(text) => view! { <span>{text.clone()}</span> }.into_any(),
                // Lists and records are for the full tree view; here, their size.
                serde_json::Value::Array(items) => {
                    view! { <span class="muted">{format!("{} items", items.len())}</span> }
                        .into_any()
                }
                serde_json::Value::Object(fields) => {
                    view! { <span class="muted">{format!("{} fields", fields.len())}</span> }
                        .into_any()
                }
                other => view! { <span>{other.to_string()}</span> }.into_any(),
            };
            view! { <div class="fact" data-fact=key.clone()><dt>{fact_label(key)}</dt><dd>{shown}</dd></div> }
        })
        .collect_view();
    let actions = node
        .actions
        .iter()
        .map(|action| {
            view! {
                <li>
                    {action.text.clone()}
                    {action.estimate_bytes.map(|b| view! {
                        <span class="estimate">
                            " — estimate: " {if b < 0 { "−" } else { "" }} <Bytes value=b.unsigned_abs()/>
                        </span>
                    })}
                    {action.how.clone().map(|how| view! { <span class="how muted">{format!(" ({how})")}</span> })}
                </li>
            }
        })
        .collect_view();
    view! {
        <li class="tree-node" class:current=on_path class:selected=node.selected class:focused=is_selection data-node=node.id.clone()>
            <details open=on_path || opened_by_link>
                <summary on:click=on_summary>
                    <span class="node-title">{title}</span>
                    {on_path.then(|| view! { <span class="badge selected-badge">"your data"</span> })}
                </summary>
                <p class="node-reason">{node.reason.clone()}</p>
                {(!node.facts.is_empty()).then(|| view! { <dl class="facts">{facts}</dl> })}
                {(!node.actions.is_empty()).then(|| view! { <ul class="actions">{actions}</ul> })}
                {has_cites.then(|| view! { <CitedBuffers cites=node.cites.clone() links=links.clone()/> })}
            </details>
            {(!children.is_empty()).then(|| view! {
                <ul class="tree">
                    {children.into_iter().map(|child| view! { <TreeNode node=child all=all.clone() path=path.clone() links=links.clone()/> }.into_any()).collect_view()}
                </ul>
            })}
        </li>
    }
}
