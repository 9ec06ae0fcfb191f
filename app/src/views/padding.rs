//! Padding: bytes lost to TPU tiled layouts, per module, with the shapes
//! that waste most. (The padding issue builds the full view on this.)

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;

use crate::format::{percent, Bytes};

#[component]
pub fn PaddingView(report: Arc<Report>) -> impl IntoView {
    let modules: Vec<_> = report
        .modules
        .iter()
        .filter_map(|m| {
            m.padding
                .clone()
                .map(|p| (m.display_name(), m.memory_space, m.peak_bytes, p))
        })
        .filter(|(_, _, _, p)| p.total_padding_bytes > 0 || !p.top.is_empty())
        .collect();
    if modules.is_empty() {
        return ().into_any();
    }
    let sections = modules
        .into_iter()
        .map(|(name, space, peak, padding)| {
            let rows = padding
                .top
                .iter()
                .map(|entry| {
                    view! {
                        <tr>
                            <td class="mono shape">{entry.shape.clone()}</td>
                            <td class="num">{entry.count}</td>
                            <td class="num"><Bytes value=entry.padding_bytes/></td>
                            <td class="num">{format!("{:.2}×", entry.expansion)}</td>
                            <td>{entry.suggestion.clone()}</td>
                            <td class="num">{entry.suggestion_saves_bytes.map(|b| view! { <Bytes value=b/> })}</td>
                        </tr>
                    }
                })
                .collect_view();
            let key = name.clone();
            view! {
                <div class="padding-module" data-module=key>
                    <h3 class="subhead">{name} <span class="muted">{format!(" · space {space}")}</span></h3>
                    <dl class="stats">
                        <div class="stat" data-field="peak_padding">
                            <dt>"Padding at the peak"</dt>
                            <dd>
                                <Bytes value=padding.peak_padding_bytes/>
                                <span class="stat-note">{percent(padding.peak_padding_bytes, peak).map(|p| format!("{p} of the peak"))}</span>
                            </dd>
                        </div>
                        <div class="stat" data-field="total_padding">
                            <dt>"Padding, all buffers"</dt>
                            <dd><Bytes value=padding.total_padding_bytes/></dd>
                        </div>
                    </dl>
                    {(!padding.top.is_empty()).then(|| view! {
                        <div class="table-scroll">
                            <table class="data">
                                <thead>
                                    <tr>
                                        <th scope="col">"Shape"</th>
                                        <th scope="col" class="num">"Buffers"</th>
                                        <th scope="col" class="num">"Padding"</th>
                                        <th scope="col" class="num">"Expansion"</th>
                                        <th scope="col">"Suggestion"</th>
                                        <th scope="col" class="num">"Would save"</th>
                                    </tr>
                                </thead>
                                <tbody>{rows}</tbody>
                            </table>
                        </div>
                    })}
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="card" id="padding" aria-labelledby="padding-title">
            <h2 id="padding-title">"Padding"</h2>
            {sections}
        </section>
    }
    .into_any()
}
