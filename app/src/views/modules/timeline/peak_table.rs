//! The buffers live at the peak, linked both ways with the chart: a row
//! pins its buffer, pinning a buffer selects (and scrolls to) its row.
//! Sortable by its headers; past [`PEAK_ROWS`] rows, "Show all" renders
//! only the rows in view.

use std::cmp::Reverse;

use leptos::ev;
use leptos::html;
use leptos::prelude::*;

use super::describe::flag_text;
use super::index::category_name;
use super::TimelineCtx;
use crate::format::{percent, Bytes};
use crate::widgets::sort_header::sort_header;
use crate::widgets::windowed::{centring_offset, visible_rows, ROW_HEIGHT};

/// Rows before "Show all".
const PEAK_ROWS: usize = 100;

/// The columns the table sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
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
    let sort = RwSignal::new((SortKey::Size, true));
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
                SortKey::Name => order.sort_by(|x, y| b(x).name.cmp(&b(y).name)),
                SortKey::Size => order.sort_by_key(|i| Reverse(b(i).size_bytes)),
                SortKey::Padding => order
                    .sort_by_key(|i| Reverse(b(i).size_bytes.saturating_sub(b(i).unpadded_bytes))),
                SortKey::Kind => order.sort_by_key(|i| category_name(b(i).category)),
                SortKey::Lifetime => order.sort_by_key(|i| (b(i).start, b(i).end)),
            }
            // Sizes sort largest first by the comparisons above; the
            // others smallest (or A) first.
            let natural_descending = matches!(key, SortKey::Size | SortKey::Padding);
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
                    <td class="num">{percent(b.size_bytes, module.peak_bytes).unwrap_or_default()}</td>
                    <td class="num">{(b.size_bytes > b.unpadded_bytes).then(|| view! { <Bytes value=b.size_bytes - b.unpadded_bytes/> })}</td>
                    <td>{category_name(b.category)}</td>
                    <td class="num">{format!("{}–{}", b.start, b.end.max(b.start))}</td>
                    <td>{flag.map(|f| view! { <span class="flag" title=flag_text(f, b)>{"⚑ "}{f.label()}</span> })}</td>
                    <td class="mono shape">{b.shape.clone()}</td>
                    <td class="mono" title=b.op_name.clone()>{b.op_name.clone()}</td>
                    <td class="mono">{b.source.clone()}</td>
                </tr>
            }
        }
    };
    let rows = move || {
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
        view! {
            {spacer(above)}
            {order[range].iter().map(|&i| row_view(i)).collect_view()}
            {spacer(below)}
        }
    };
    view! {
        <h4 class="subhead">
            {format!("Buffers live at the peak ({total})")}
            {(flagged > 0).then(|| view! { <span class="flag-count">{format!(" · ⚑ {flagged} flagged as holding memory long")}</span> })}
        </h4>
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
