//! The inputs as the analyzer classified them, and a clear error for each
//! one it could not read (the other inputs still load).

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{InputKind, Report};

use crate::format::Bytes;
use crate::state::use_state;

fn kind_label(kind: InputKind) -> &'static str {
    match kind {
        InputKind::OomLog => "OOM log",
        InputKind::XlaDumpText => "XLA dump text",
        InputKind::HloProto => "HloProto",
        InputKind::Xplane => "XProf profile",
        InputKind::StepLog => "training log",
        InputKind::Archive => "archive",
        InputKind::MemorySnapshot => "PyTorch memory snapshot",
        InputKind::DeviceMemoryProfile => "JAX device memory profile",
        InputKind::MemoryTimeline => "PyTorch memory timeline",
        InputKind::CompileLog => "TPU compile log",
        InputKind::Unknown => "not recognised",
    }
}

/// The per-input problems: what could not be read (or was read only in part) and why.
#[component]
pub fn InputErrors(report: Arc<Report>) -> impl IntoView {
    let state = use_state();
    let mut errors: Vec<(String, String)> = report
        .errors
        .iter()
        .map(|e| (e.input.clone(), e.message.clone()))
        .collect();
    errors.extend(state.gather_errors.get_untracked());
    let error_count = errors.len();
    (!errors.is_empty()).then(|| {
        view! {
            <section class="card errors" role="alert" aria-labelledby="errors-title">
                <h2 id="errors-title">
                    {format!("{error_count} problem{} with the inputs", if error_count == 1 { "" } else { "s" })}
                </h2>
                <p class="muted">"What could be read was analysed; each problem names its input."</p>
                <ul>
                    {errors.into_iter().map(|(input, message)| {
                        let key = input.clone();
                        view! {
                        <li class="input-error" data-input=key>
                            <span class="mono error-input">{input}</span>
                            <span class="error-message">{message}</span>
                        </li>
                        }
                    }).collect_view()}
                </ul>
            </section>
        }
    })
}

/// Every input with the kind the analyzer read it as.
#[component]
pub fn InputsView(report: Arc<Report>) -> impl IntoView {
    let rows = report
        .inputs
        .iter()
        .map(|input| {
            view! {
                <tr data-input=input.name.clone() data-kind=input.kind.as_str()>
                    <td class="mono">{input.name.clone()}</td>
                    <td><span class="kind" class:unknown=input.kind == InputKind::Unknown>{kind_label(input.kind)}</span></td>
                    <td class="num"><Bytes value=input.size_bytes/></td>
                </tr>
            }
        })
        .collect_view();
    let count = report.inputs.len();
    view! {
        <section class="card" id="inputs" aria-labelledby="inputs-title">
            <div class="section-head">
                <h2 id="inputs-title">"Inputs"</h2>
                <span class="muted">{format!("{count} file{}", if count == 1 { "" } else { "s" })}</span>
            </div>
            <div class="table-scroll">
                <table class="data inputs">
                    <thead>
                        <tr>
                            <th scope="col">"File"</th>
                            <th scope="col">"Read as"</th>
                            <th scope="col" class="num">"Size"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}
