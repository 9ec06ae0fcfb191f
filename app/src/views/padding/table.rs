//! The padding table: one row per buffer or group, sortable from its
//! headers; a row selects itself (and its buffer, for the timeline and the
//! link). Past [`TABLE_ROWS`] rows, "Show all" renders only the rows in
//! view.

use leptos::html;
use leptos::prelude::*;

use crate::format::{group_digits, Bytes};
use crate::model::padding::{Grouping, Row, SortKey};
use crate::widgets::sort_header::sort_header;
use crate::widgets::windowed::{centring_offset, visible_rows, ROW_HEIGHT};

/// Table rows before "Show all".
pub const TABLE_ROWS: usize = 100;

/// What the table shows and how the user has it.
#[derive(Clone, Copy)]
pub struct TableState {
    pub rows: Memo<Vec<Row>>,
    pub grouping: RwSignal<Grouping>,
    pub sort: RwSignal<(SortKey, bool)>,
    pub show_all: RwSignal<bool>,
    pub selected: RwSignal<Option<Row>>,
    /// The scroll offset of the windowed box.
    pub scroll_top: RwSignal<f64>,
    pub scroller: NodeRef<html::Div>,
}

impl TableState {
    pub fn windowed(&self) -> bool {
        self.show_all.get() && self.rows.with(|r| r.len()) > TABLE_ROWS
    }

    /// Makes row `position` of the table rendered and in view.
    pub fn reveal(&self, position: usize) {
        if position < TABLE_ROWS {
            return;
        }
        self.show_all.set(true);
        let height = self
            .scroller
            .get_untracked()
            .map_or(480.0, |c| f64::from(c.client_height()).max(ROW_HEIGHT));
        let offset = centring_offset(position, height, ROW_HEIGHT);
        self.scroll_top.set(offset);
        let scroller = self.scroller;
        request_animation_frame(move || {
            if let Some(c) = scroller.get_untracked() {
                c.set_scroll_top(offset as i32);
            }
        });
    }
}

#[component]
pub fn PaddingTable<F>(table: TableState, select: F, has_timeline: bool) -> impl IntoView
where
    F: Fn(Row) + Clone + Send + Sync + 'static,
{
    let TableState {
        rows,
        grouping,
        sort,
        show_all,
        selected,
        scroll_top,
        scroller,
    } = table;
    let row_view = move |row: Row, is_buffer: bool, select: F| {
        let is_selected = {
            let key = row.key.clone();
            move || selected.get().is_some_and(|s| s.key == key)
        };
        let (r1, r2, select2) = (row.clone(), row.clone(), select.clone());
        view! {
            <tr tabindex="0" class:selected=is_selected.clone() aria-selected=move || is_selected().to_string()
                data-key=row.key.clone() data-waste=row.waste.to_string()
                on:click=move |_| select(r1.clone())
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" || ev.key() == " " {
                        ev.prevent_default();
                        select2(r2.clone());
                    }
                }>
                <td class="mono key" title=row.key.clone()>{row.key.clone()}</td>
                {is_buffer.then(|| view! { <td class="mono shape">{row.shape.clone()}</td> })}
                {(!is_buffer).then(|| view! { <td class="num">{group_digits(row.count)}</td> })}
                <td class="num"><Bytes value=row.padded/></td>
                <td class="num"><Bytes value=row.unpadded/></td>
                <td class="num waste"><Bytes value=row.waste/></td>
                <td class="num">{format!("{:.2}×", row.expansion)}</td>
                {is_buffer.then(|| view! { <td class="mono" title=row.op.clone()>{row.op.clone()}</td> })}
            </tr>
        }
    };
    let body = move || {
        let rows = rows.get();
        let total = rows.len();
        let windowed = table.windowed();
        let range = if windowed {
            let height = scroller
                .get()
                .map_or(480.0, |c| f64::from(c.client_height()).max(ROW_HEIGHT));
            visible_rows(scroll_top.get(), height, ROW_HEIGHT, total)
        } else {
            0..total.min(TABLE_ROWS)
        };
        let is_buffer = grouping.get() == Grouping::Buffer;
        let spacer = |rows: usize| {
            (rows > 0).then(|| view! { <tr class="spacer" aria-hidden="true" style:height=format!("{}px", rows as f64 * ROW_HEIGHT)></tr> })
        };
        let below = if windowed { total - range.end } else { 0 };
        let above = range.start;
        let select = select.clone();
        view! {
            {spacer(above)}
            {rows[range].iter().cloned().map(|r| row_view(r, is_buffer, select.clone())).collect_view()}
            {spacer(below)}
        }
    };
    let total_rows = move || rows.with(|r| r.len());
    view! {
        <div class="table-scroll" class:windowed-box=move || table.windowed() node_ref=scroller
            on:scroll=move |_| if let Some(c) = scroller.get_untracked() { scroll_top.set(f64::from(c.scroll_top())) }>
            <table class="data padding-table" class:windowed=move || table.windowed() aria-describedby="padding-table-help">
                <thead>
                    <tr>
                        {move || {
                            let g = grouping.get();
                            let is_buffer = g == Grouping::Buffer;
                            let name = match g {
                                Grouping::Buffer => "Buffer",
                                Grouping::Shape => "Shape",
                                Grouping::Op => "Op",
                                Grouping::Source => "Source line",
                            };
                            view! {
                                {sort_header(name, SortKey::Name, false, sort)}
                                {is_buffer.then(|| view! { <th scope="col">"Shape"</th> })}
                                {(!is_buffer).then(|| sort_header("Buffers", SortKey::Count, true, sort))}
                                {sort_header("Padded", SortKey::Padded, true, sort)}
                                {sort_header("Unpadded", SortKey::Unpadded, true, sort)}
                                {sort_header("Waste", SortKey::Waste, true, sort)}
                                {sort_header("Expansion", SortKey::Expansion, true, sort)}
                                {is_buffer.then(|| view! { <th scope="col">"Op"</th> })}
                            }
                        }}
                    </tr>
                </thead>
                <tbody>{body}</tbody>
            </table>
        </div>
        <p class="muted table-help" id="padding-table-help">
            "Sort with the column headers. Select a row (click, or Enter) for its per-dimension breakdown"
            {has_timeline.then_some("; a buffer row also pins the buffer in the module's timeline")}
            "."
        </p>
        <Show when=move || { !show_all.get() && total_rows() > TABLE_ROWS }>
            <button type="button" class="button small secondary" on:click=move |_| show_all.set(true)>
                {move || format!("Show all {} rows", group_digits(total_rows() as u64))}
            </button>
        </Show>
    }
}
