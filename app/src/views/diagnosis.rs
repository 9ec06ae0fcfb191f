//! The troubleshooting decision tree evaluated on the user's data: nodes
//! nested by id (`aggregate.padding` sits under `aggregate`), the selected
//! path highlighted, each node expandable to its reason, facts and actions.
//! (The decision-tree issue builds the full view on this.)

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{DiagnosisNode, Report, TreeKind};

use crate::format::Bytes;

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
    // Without an OOM or a growth trend there is no tree to walk.
    if diagnosis.nodes.is_empty() || (diagnosis.tree == TreeKind::None && diagnosis.path.is_empty())
    {
        return ().into_any();
    }
    let path = diagnosis.path.clone();
    let roots: Vec<DiagnosisNode> = diagnosis
        .nodes
        .iter()
        .filter(|n| parent_id(&n.id).is_none())
        .cloned()
        .collect();
    let nodes = diagnosis.nodes.clone();
    view! {
        <section class="card" id="diagnosis" aria-labelledby="diagnosis-title">
            <div class="section-head">
                <h2 id="diagnosis-title">"What to do: the decision tree"</h2>
                <span class="muted">{tree_title(diagnosis.tree)}</span>
            </div>
            <ul class="tree">
                {roots.into_iter().map(|node| view! { <TreeNode node=node all=nodes.clone() path=path.clone()/> }).collect_view()}
            </ul>
        </section>
    }
    .into_any()
}

fn parent_id(id: &str) -> Option<&str> {
    id.rsplit_once('.').map(|(parent, _)| parent)
}

#[component]
fn TreeNode(node: DiagnosisNode, all: Vec<DiagnosisNode>, path: Vec<String>) -> impl IntoView {
    let on_path = path.contains(&node.id);
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
    let facts = node
        .facts
        .iter()
        .map(|(key, value)| {
            let shown = match value {
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
            view! { <div class="fact"><dt class="mono">{key.clone()}</dt><dd>{shown}</dd></div> }
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
        <li class="tree-node" class:current=on_path class:selected=node.selected data-node=node.id.clone()>
            <details open=on_path>
                <summary>
                    <span class="node-title">{title}</span>
                    {on_path.then(|| view! { <span class="badge selected-badge">"your data"</span> })}
                </summary>
                <p class="node-reason">{node.reason.clone()}</p>
                {(!node.facts.is_empty()).then(|| view! { <dl class="facts">{facts}</dl> })}
                {(!node.actions.is_empty()).then(|| view! { <ul class="actions">{actions}</ul> })}
            </details>
            {(!children.is_empty()).then(|| view! {
                <ul class="tree">
                    {children.into_iter().map(|child| view! { <TreeNode node=child all=all.clone() path=path.clone()/> }.into_any()).collect_view()}
                </ul>
            })}
        </li>
    }
}
