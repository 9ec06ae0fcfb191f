//! The card that follows the pointer over a band: the hovered buffer's
//! name, shape, size, lifetime, kind, op, source and flag.

use leptos::prelude::*;

use super::describe::{flag_text, lifetime_of, padding_note};
use super::index::category_name;
use super::{TimelineCtx, HEIGHT};
use crate::format::Bytes;

/// The tooltip of the hovered buffer, if any.
pub fn tooltip(ctx: &TimelineCtx) -> impl Fn() -> Option<AnyView> + Send + Sync + 'static {
    let (module, index, s) = (ctx.module.clone(), ctx.index.clone(), ctx.signals);
    move || {
        let (buffer, x, y) = s.hover.get()?;
        let b = module.buffers.get(buffer as usize)?;
        let flag = index.flags.get(buffer as usize).copied().flatten();
        let left = if x > s.width.get_untracked() * 0.6 {
            x - 360.0
        } else {
            x + 16.0
        };
        let top = if y > HEIGHT * 0.55 {
            y - 170.0
        } else {
            y + 16.0
        };
        Some(view! {
            <div class="timeline-tooltip" role="tooltip" data-buffer=b.name.clone() style:left=format!("{left:.0}px") style:top=format!("{top:.0}px")>
                <div class="tt-name mono">{b.name.clone()}</div>
                <div class="tt-shape mono">{b.shape.clone()}</div>
                <dl>
                    <dt>"Size"</dt><dd><Bytes value=b.size_bytes/>{padding_note(b.size_bytes, b.unpadded_bytes)}</dd>
                    <dt>"Lifetime"</dt><dd>{lifetime_of(index.is_whole_program(buffer), b.start, b.end)}</dd>
                    <dt>"Kind"</dt><dd>{category_name(b.category)}</dd>
                    {(!b.op_name.is_empty()).then(|| view! { <dt>"Op"</dt><dd class="mono">{b.op_name.clone()}</dd> })}
                    {(!b.source.is_empty()).then(|| view! { <dt>"Source"</dt><dd class="mono">{b.source.clone()}</dd> })}
                </dl>
                {flag.map(|f| view! { <div class="tt-flag">{flag_text(f, b)}</div> })}
            </div>
        }.into_any())
    }
}
