//! The card of the pinned buffer: its facts, the instructions that define
//! and last use it, and every instruction while it is live.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::ModuleReport;

use super::describe::{flag_text, lifetime_of, padding_note};
use super::index::{category_name, TimelineIndex};
use crate::format::{group_digits, Bytes};

/// Instructions listed for a pinned buffer.
const INSTRUCTION_ROWS: usize = 200;

#[component]
pub fn PinnedBuffer(
    module: Arc<ModuleReport>,
    index: Arc<TimelineIndex>,
    buffer: u32,
    on_close: impl Fn() + 'static,
) -> impl IntoView {
    let Some(b) = module.buffers.get(buffer as usize) else {
        return ().into_any();
    };
    let whole = index.is_whole_program(buffer);
    let end = b.end.max(b.start);
    let name_at = |p: u64| {
        module
            .instructions
            .get(p as usize)
            .filter(|s| !s.is_empty())
            .cloned()
    };
    let defined = name_at(b.start);
    // A heap-simulator trace names a free event after the freed buffer's own
    // instruction; the instruction that last used it is then the nearest
    // earlier position naming another one. A dump's positions are the
    // instructions themselves.
    let last_use = match name_at(end) {
        Some(own) if end > b.start && defined.as_ref() == Some(&own) => (b.start..end)
            .rev()
            .find_map(|p| name_at(p).filter(|n| *n != own))
            .map(|n| format!("{n} (the instruction before its free at {end})")),
        other => other,
    };
    let (defined, last_use) = if whole {
        let why = "(live for the whole program)".to_string();
        (Some(why.clone()), Some(why))
    } else {
        (defined, last_use)
    };
    // A buffer live for the whole program lists no instructions.
    let during: Vec<(u64, String)> = if whole {
        Vec::new()
    } else {
        (b.start..=end)
            .take(INSTRUCTION_ROWS)
            .filter_map(|p| name_at(p).map(|n| (p, n)))
            .collect()
    };
    let more = (end - b.start + 1).saturating_sub(INSTRUCTION_ROWS as u64);
    let flag = index.flags.get(buffer as usize).copied().flatten();
    let (start, name) = (b.start, b.name.clone());
    view! {
        <div class="timeline-pinned" data-buffer=name.clone() aria-label="Pinned buffer">
            <div class="pinned-head">
                <strong class="mono">{name.clone()}</strong>
                <button type="button" class="button small secondary" on:click=move |_| on_close()>"Unpin"</button>
            </div>
            <dl class="pinned-facts">
                <div><dt>"Shape"</dt><dd class="mono">{b.shape.clone()}</dd></div>
                <div><dt>"Size"</dt><dd><Bytes value=b.size_bytes/>{padding_note(b.size_bytes, b.unpadded_bytes)}</dd></div>
                <div><dt>"Kind"</dt><dd>{category_name(b.category)}</dd></div>
                <div><dt>"Lifetime"</dt><dd>{lifetime_of(whole, b.start, b.end)}</dd></div>
                <div><dt>"Defined by"</dt><dd class="mono" data-field="defined">{defined.unwrap_or_else(|| "(not recorded)".into())}</dd></div>
                <div><dt>"Last used by"</dt><dd class="mono" data-field="last-use">{last_use.unwrap_or_else(|| "(not recorded)".into())}</dd></div>
                {(!b.op_name.is_empty()).then(|| view! { <div><dt>"Op"</dt><dd class="mono">{b.op_name.clone()}</dd></div> })}
                {(!b.source.is_empty()).then(|| view! { <div><dt>"Source"</dt><dd class="mono">{b.source.clone()}</dd></div> })}
            </dl>
            {flag.map(|f| view! { <p class="tt-flag">{flag_text(f, b)}</p> })}
            {(!during.is_empty()).then(|| view! {
                <details class="pinned-instructions">
                    <summary>{format!("Instructions while it is live ({})", group_digits(end - start + 1))}</summary>
                    <ol>
                        {during.into_iter().map(|(p, n)| {
                            let role = if p == start { " — defines it" } else if p == end { " — last use" } else { "" };
                            view! { <li value=p.to_string()><span class="mono">{n}</span>{role}</li> }
                        }).collect_view()}
                    </ol>
                    {(more > 0).then(|| view! { <p class="muted">{format!("… and {} more", group_digits(more))}</p> })}
                </details>
            })}
        </div>
    }
    .into_any()
}
