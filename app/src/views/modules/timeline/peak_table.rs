//! The buffers live at the peak, linked both ways with the chart: a row
//! pins its buffer, pinning a buffer selects (and scrolls to) its row.
//! Grouped by kind (parameters, outputs, temporaries, constants, …), each
//! group largest first under a row with its total; a parameter and an
//! output of the same shape name each other (the donation case). Sortable
//! by its headers (which lists it flat); past [`PEAK_ROWS`] rows, "Show
//! all" renders only the rows in view.

use std::cmp::Reverse;

use leptos::ev;
use leptos::html;
use leptos::prelude::*;

use super::describe::flag_text;
use super::index::category_name;
use super::TimelineCtx;
use crate::format::{share, Bytes};
use crate::widgets::sort_header::sort_header;
use crate::widgets::windowed::{centring_offset, visible_rows, ROW_HEIGHT};
use oomscope_report::units::format_bytes;
use oomscope_report::BufferCategory;

/// Rows before "Show all".
const PEAK_ROWS: usize = 100;

/// The columns the table sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    /// By kind, in [`group_rank`]'s order, then largest first.
    Group,
    Name,
    Size,
    Padding,
    Kind,
    Lifetime,
}

#[component]
pub fn PeakTable(ctx: TimelineCtx, flagged: usize) -> impl IntoView {
    let (module, index, pinned) = (ctx.module.clone(), ctx.index.clone(), ctx.signals.pinned);
    let total = index.peak_live.len();
    let show_all = RwSignal::new(false);
    let sort = RwSignal::new((SortKey::Group, true));
    let scroll_top = RwSignal::new(0.0f64);
    let scroller: NodeRef<html::Div> = NodeRef::new();
    let windowed = move || show_all.get() && total > PEAK_ROWS;

    // The buffers in table order.
    let order = {
        let (module, index) = (module.clone(), index.clone());
        Memo::new(move |_| {
            let (key, descending) = sort.get();
            let mut order = index.peak_live.clone();
            let b = |i: &u32| &module.buffers[*i as usize];
            match key {
                SortKey::Group => crate::sort::sort_by_key(&mut order, |i| {
                    (group_rank(b(i).category), Reverse(b(i).size_bytes))
                }),
                SortKey::Name => crate::sort::sort_by(&mut order, |x, y| b(x).name.cmp(&b(y).name)),
                SortKey::Size => crate::sort::sort_by_key(&mut order, |i| Reverse(b(i).size_bytes)),
                SortKey::Padding => crate::sort::sort_by_key(&mut order, |i| {
                    Reverse(b(i).size_bytes.saturating_sub(b(i).unpadded_bytes))
                }),
                SortKey::Kind => {
                    crate::sort::sort_by_key(&mut order, |i| category_name(b(i).category))
                }
                SortKey::Lifetime => {
                    crate::sort::sort_by_key(&mut order, |i| (b(i).start, b(i).end))
                }
            }
            // Sizes sort largest first by the comparisons above; the
            // others smallest (or A) first.
            let natural_descending =
                matches!(key, SortKey::Size | SortKey::Padding | SortKey::Group);
            if descending != natural_descending {
                order.reverse();
            }
            order
        })
    };

    // Pinning from the chart scrolls the table's own box to the row, never
    // the page: the reader is looking at the chart (or at the view that
    // asked for the buffer).
    Effect::new(move |_| {
        let Some(buffer) = pinned.get() else { return };
        let Some(container) = scroller.get_untracked() else {
            return;
        };
        let header = header_height(&container);
        let height = f64::from(container.client_height());
        let row = container
            .query_selector(&format!("tr[data-index=\"{buffer}\"]"))
            .ok()
            .flatten();
        let offset = match row {
            Some(row) => {
                let below = row.get_bounding_client_rect().top()
                    - container.get_bounding_client_rect().top();
                (f64::from(container.scroll_top()) + below - height / 2.0).max(0.0)
            }
            None if windowed() => {
                match order.with_untracked(|o| o.iter().position(|&i| i == buffer)) {
                    Some(at) => centring_offset(at, height, header),
                    None => return,
                }
            }
            None => return,
        };
        container.set_scroll_top(offset as i32);
        scroll_top.set(offset);
    });

    // A parameter's output of the same shape (or an output's parameter),
    // a button that pins it; a donated parameter says so.
    let pair_cell = {
        let (module, index, ctx) = (module.clone(), index.clone(), ctx.clone());
        move |i: u32| -> Option<AnyView> {
            if let Some(p) = index.partner.get(i as usize).copied().flatten() {
                let other = &module.buffers[p as usize];
                let n = index.pair_number[i as usize].unwrap_or(0);
                let ctx = ctx.clone();
                Some(view! {
                    <button type="button" class="link-button pair-link" data-partner=other.name.clone()
                        title="A parameter and an output of the same shape, both live at the peak: donated, the output could reuse the parameter's memory."
                        on:click=move |ev: ev::MouseEvent| { ev.stop_propagation(); ctx.focus(p) }>
                        {format!("pair {n} ⇄ {} {}", category_name(other.category), other.name)}
                    </button>
                }.into_any())
            } else if index.donated(i) {
                Some(view! { <span class="donated" title="Its allocation is also the program's output: the output reuses this parameter's memory.">"donated: the output reuses it"</span> }.into_any())
            } else {
                None
            }
        }
    };
    // The row above each kind's first buffer, when the table is grouped.
    let group_row = {
        let (module, index) = (module.clone(), index.clone());
        move |category: BufferCategory| {
            let members: Vec<&oomscope_report::BufferLifetime> = index
                .peak_live
                .iter()
                .map(|&i| &module.buffers[i as usize])
                .filter(|b| group_rank(b.category) == group_rank(category))
                .collect();
            let bytes = members
                .iter()
                .map(|b| b.size_bytes)
                .fold(0u64, u64::saturating_add);
            let text = format!(
                "{} · {} · {} · {} of the peak",
                group_name(category),
                members.len(),
                format_bytes(bytes),
                share(bytes, module.peak_bytes).unwrap_or_default()
            );
            view! { <tr class="group-row" data-group=group_name(category)><th scope="rowgroup" colspan="11">{text}</th></tr> }
        }
    };
    let row_view = {
        let (module, index, ctx) = (module.clone(), index.clone(), ctx.clone());
        move |i: u32| {
            let b = &module.buffers[i as usize];
            let flag = index.flags[i as usize];
            let (focus, focus_key) = (ctx.clone(), ctx.clone());
            view! {
                <tr data-index=i.to_string() data-buffer=b.name.clone() tabindex="0"
                    class:selected=move || pinned.get() == Some(i)
                    aria-selected=move || (pinned.get() == Some(i)).to_string()
                    on:click=move |_| focus.focus(i)
                    on:keydown=move |ev: ev::KeyboardEvent| if ev.key() == "Enter" { focus_key.focus(i) }>
                    <td class="mono" title=b.name.clone()>{b.name.clone()}</td>
                    <td class="num"><Bytes value=b.size_bytes/></td>
                    <td class="num">{share(b.size_bytes, module.peak_bytes).unwrap_or_default()}</td>
                    <td class="num">{(b.size_bytes > b.unpadded_bytes).then(|| view! { <Bytes value=b.size_bytes - b.unpadded_bytes/> })}</td>
                    <td>{category_name(b.category)}</td>
                    <td class="pair">{pair_cell(i)}</td>
                    <td class="num">{if index.is_whole_program(i) { "whole program".to_string() } else { format!("{}–{}", b.start, b.end.max(b.start)) }}</td>
                    <td>{flag.map(|f| view! { <span class="flag" title=flag_text(f, b)>{"⚑ "}{f.label()}</span> })}</td>
                    <td class="mono shape">{b.shape.clone()}</td>
                    <td class="mono" title=b.op_name.clone()>{b.op_name.clone()}</td>
                    <td class="mono">{b.source.clone()}</td>
                </tr>
            }
        }
    };
    let rows_module = module.clone();
    let rows = move || {
        let module = &rows_module;
        let order = order.get();
        let range = if windowed() {
            let height = scroller
                .get()
                .map_or(420.0, |c| f64::from(c.client_height()));
            let header = scroller.get().map_or(ROW_HEIGHT, |c| header_height(&c));
            visible_rows(scroll_top.get(), height, header, total)
        } else {
            0..total.min(PEAK_ROWS)
        };
        let spacer = |rows: usize| {
            (rows > 0).then(|| view! { <tr class="spacer" aria-hidden="true" style:height=format!("{}px", rows as f64 * ROW_HEIGHT)></tr> })
        };
        let (above, below) = (range.start, if windowed() { total - range.end } else { 0 });
        let grouped = !windowed() && sort.with(|s| s.0 == SortKey::Group);
        let mut last_group = None;
        let rows = order[range]
            .iter()
            .map(|&i| {
                let category = module.buffers[i as usize].category;
                let head = (grouped && last_group != Some(group_rank(category))).then(|| {
                    last_group = Some(group_rank(category));
                    group_row(category)
                });
                view! { {head} {row_view(i)} }
            })
            .collect_view();
        view! {
            {spacer(above)}
            {rows}
            {spacer(below)}
        }
    };
    let pairs: Vec<u32> = index
        .peak_live
        .iter()
        .copied()
        .filter(|&i| {
            module.buffers[i as usize].category == BufferCategory::Parameter
                && index.partner[i as usize].is_some()
        })
        .collect();
    let pair_note = (!pairs.is_empty()).then(|| {
        let bytes = pairs
            .iter()
            .map(|&i| module.buffers[i as usize].size_bytes)
            .fold(0u64, u64::saturating_add);
        let n = pairs.len();
        view! {
            <p class="pair-note" data-testid="pair-note">
                {format!(
                    "{n} {} an output of the same shape live beside {} at the peak ({} on each side, marked pair 1 to {n} in the chart and the table): donated, each output could reuse its parameter's memory.",
                    if n == 1 { "parameter has" } else { "parameters have" },
                    if n == 1 { "it" } else { "them" },
                    format_bytes(bytes),
                )}
            </p>
        }
    });
    view! {
        <h4 class="subhead">
            {format!("Buffers live at the peak ({total})")}
            {(flagged > 0).then(|| view! { <span class="flag-count">{format!(" · ⚑ {flagged} flagged as holding memory long")}</span> })}
        </h4>
        {pair_note}
        <div class="table-scroll timeline-table" node_ref=scroller
            on:scroll=move |_| if windowed() {
                if let Some(c) = scroller.get_untracked() { scroll_top.set(f64::from(c.scroll_top())) }
            }>
            <table class="data timeline-peak" class:windowed=windowed>
                <thead>
                    <tr>
                        {sort_header("Buffer", SortKey::Name, false, sort)}
                        {sort_header("Size", SortKey::Size, true, sort)}
                        <th scope="col" class="num">"Of peak"</th>
                        {sort_header("Padding", SortKey::Padding, true, sort)}
                        {sort_header("Kind", SortKey::Kind, false, sort)}
                        <th scope="col">"Pair"</th>
                        {sort_header("Lifetime", SortKey::Lifetime, true, sort)}
                        <th scope="col">"Flag"</th>
                        <th scope="col">"Shape"</th>
                        <th scope="col">"Operation"</th>
                        <th scope="col">"Source"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Show when=move || { !show_all.get() && total > PEAK_ROWS }>
            <button type="button" class="button small secondary" on:click=move |_| show_all.set(true)>
                {format!("Show all {total} buffers")}
            </button>
        </Show>
    }
}

/// Height of the table's header row in its scroll box.
fn header_height(container: &web_sys::HtmlDivElement) -> f64 {
    container
        .query_selector("thead")
        .ok()
        .flatten()
        .map_or(ROW_HEIGHT, |h| h.get_bounding_client_rect().height())
}

/// The order of the kinds in the grouped table: what lives for the whole
/// program first (as XProf lists it), then what the program makes.
fn group_rank(category: BufferCategory) -> u8 {
    match category {
        BufferCategory::Parameter => 0,
        BufferCategory::Output => 1,
        BufferCategory::Temporary => 2,
        BufferCategory::Constant => 3,
        BufferCategory::ThreadLocal => 4,
        BufferCategory::Small => 5,
    }
}

fn group_name(category: BufferCategory) -> &'static str {
    match category {
        BufferCategory::Parameter => "Parameters",
        BufferCategory::Output => "Outputs (maybe-live-out)",
        BufferCategory::Temporary => "Temporaries",
        BufferCategory::Constant => "Constants",
        BufferCategory::ThreadLocal => "Thread-local",
        BufferCategory::Small => "Small and other whole-program bytes",
    }
}
