//! How to get the padding back: the layout model's fix per wasteful shape,
//! with its estimated saving.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::PaddingSummary;

use crate::format::Bytes;

/// The bytes all suggestions together would save (an estimate).
pub fn estimated_saving(summary: &PaddingSummary) -> u64 {
    summary
        .top
        .iter()
        .filter_map(|e| e.suggestion_saves_bytes)
        .sum()
}

#[component]
pub fn Suggestions(summary: PaddingSummary) -> impl IntoView {
    let items = summary
        .top
        .iter()
        .filter(|e| !e.suggestion.is_empty())
        .map(|e| {
            view! {
                <li data-shape=e.shape.clone()>
                    <span class="mono">{e.shape.clone()}</span>
                    {format!(
                        " ({} buffer{}, {} of padding): ",
                        e.count,
                        if e.count == 1 { "" } else { "s" },
                        format_bytes(e.padding_bytes)
                    )}
                    {e.suggestion.clone()}
                    {e.suggestion_saves_bytes.map(|b| view! {
                        <span class="estimate">
                            {if e.count == 1 { " Estimated saving on this buffer: ".to_string() } else { format!(" Estimated saving over all {} buffers: ", e.count) }}
                            <Bytes value=b/> " (estimate)"
                        </span>
                    })}
                </li>
            }
        })
        .collect::<Vec<_>>();
    (!items.is_empty()).then(|| view! {
        <h3 class="subhead">"How to get it back"</h3>
        <p class="muted">"Each suggestion is sized with the same layout model. They are estimates: the compiler may pick other tiles for a changed shape."</p>
        <ul class="suggestions">{items}</ul>
    })
}
