//! The header row of the report's data tables: one `<th scope="col">` per
//! column, numeric columns right-aligned (`class="num"`), so every table
//! labels its columns the same way.

use leptos::prelude::*;

/// A column: its label and whether it holds numbers.
pub type Column = (&'static str, bool);

/// `<thead>` for `columns`.
#[component]
pub fn TableHead(columns: Vec<Column>) -> impl IntoView {
    view! {
        <thead>
            <tr>
                {columns
                    .into_iter()
                    .map(|(label, numeric)| view! { <th scope="col" class:num=numeric>{label}</th> })
                    .collect_view()}
            </tr>
        </thead>
    }
}
