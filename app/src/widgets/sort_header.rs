//! A sortable column header: a button that sorts the table by its column
//! (again: the other way), with `aria-sort` saying the current order.

use leptos::prelude::*;

/// Which column a table is sorted by, and whether descending.
pub type SortState<K> = RwSignal<(K, bool)>;

/// `<th>` for the column `key`; a click sorts by it, descending first for
/// numbers (`numeric`), ascending first for text.
pub fn sort_header<K>(
    label: &'static str,
    key: K,
    numeric: bool,
    sort: SortState<K>,
) -> impl IntoView
where
    K: Copy + PartialEq + Send + Sync + 'static,
{
    let aria = move || match sort.get() {
        (k, _) if k != key => "none",
        (_, true) => "descending",
        (_, false) => "ascending",
    };
    let arrow = move || match sort.get() {
        (k, _) if k != key => "",
        (_, true) => " ▼",
        (_, false) => " ▲",
    };
    view! {
        <th scope="col" class:num=numeric aria-sort=aria>
            <button type="button" class="sort-button" data-sort=label
                on:click=move |_| sort.update(|(k, d)| {
                    if *k == key {
                        *d = !*d;
                    } else {
                        *k = key;
                        *d = numeric;
                    }
                })>
                {label}{arrow}
            </button>
        </th>
    }
}
