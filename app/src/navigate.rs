//! Moving around the report: which page section is which view, showing a
//! new report (and restoring the view a link carries), following the user
//! from section to section for the next link, and scrolling a section into
//! view once it is drawn.
//!
//! The view a link carries is state, not page geometry: opening a link sets
//! [`AppState::open_view`] and [`AppState::buffer_focus`] before the report
//! is drawn, so every section finds its part (the module, the pinned
//! buffer, the opened tree node) when it mounts; only the final scroll
//! needs the laid-out page.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{Report, ViewState};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::state::{AppState, BufferFocus, ReportOrigin, Selection, ShownComparison};

/// Report sections in page order: (view name a link carries, element id).
pub const SECTIONS: &[(&str, &str)] = &[
    ("ranks", "ranks"),
    ("tree", "diagnosis"),
    ("timeline", "modules"),
    ("padding", "padding"),
    ("steps", "steps"),
];

/// The element id of the section showing `view`.
pub fn section_of(view: &str) -> Option<&'static str> {
    SECTIONS.iter().find(|(v, _)| *v == view).map(|(_, id)| *id)
}

fn view_of(section_id: &str) -> Option<&'static str> {
    SECTIONS
        .iter()
        .find(|(_, id)| *id == section_id)
        .map(|(v, _)| *v)
}

/// Shows `report`: forgets the previous report's selection, restores the
/// view a shared report carries, and drops a stale `#r=` link from the
/// address bar when the report is the user's own analysis.
pub fn show_report(state: AppState, report: Report, origin: ReportOrigin) {
    state.comparison.set(None);
    state.buffer_focus.set(None);
    let restored = report.shared.as_ref().map(|s| s.view.clone());
    match &restored {
        Some(view) => {
            state.open_view.set(view.clone());
            if let Some(focus) = focus_of(&report, view) {
                state.buffer_focus.set(Some(focus));
            }
        }
        None => {
            state.open_view.set(ViewState::default());
            clear_link_from_address();
        }
    }
    state.report.set(Some(Arc::new(report)));
    state.origin.set(Some(origin));
    if let Some(id) = restored.as_ref().and_then(|v| section_of(&v.view)) {
        scroll_to(id);
    }
}

/// Shows the comparison of two runs in place of any report, and drops a
/// stale link from the address bar when it is the user's own comparison.
pub fn show_comparison(state: AppState, shown: ShownComparison) {
    if matches!(shown, ShownComparison::Analysed(_)) {
        clear_link_from_address();
    }
    state.report.set(None);
    state.origin.set(None);
    state.buffer_focus.set(None);
    state.open_view.set(ViewState::default());
    state.compare_setup.set(false);
    state.comparison.set(Some(Arc::new(shown)));
    scroll_to(COMPARISON_SECTION);
}

/// The element id of the comparison on the page.
pub const COMPARISON_SECTION: &str = "comparison";

/// The buffer a carried selection names, in the carried module.
fn focus_of(report: &Report, view: &ViewState) -> Option<BufferFocus> {
    let module = report.modules.get(view.module as usize)?;
    let (buffer_id, buffer_name) = match Selection::parse(&view.selection)? {
        Selection::Buffer(id) => {
            let name = module
                .buffers
                .iter()
                .find(|b| b.id == id)
                .map(|b| b.name.clone())
                .unwrap_or_default();
            (Some(id), name)
        }
        Selection::BufferName(name) => (None, name),
        Selection::Node(_) | Selection::Rank(_) => return None,
    };
    Some(BufferFocus {
        module: module.display_name(),
        memory_space: module.memory_space,
        buffer_id,
        buffer_name,
        listing_rank: None,
    })
}

/// Installs `window.__oomscope_load_report(json)`: parses a report and
/// shows it as if the worker had returned it (returns an error text, or
/// nothing on success). For the browser tests and benchmarks (the timeline
/// benchmark loads its synthetic 200k-buffer report with it); harmless for
/// users (it can only show a report).
pub fn install_test_hook(state: AppState) {
    let hook = Closure::<dyn Fn(String) -> JsValue>::new(move |json: String| {
        match serde_json::from_str::<Report>(&json) {
            Ok(report) => {
                show_report(state, report, ReportOrigin::User);
                JsValue::UNDEFINED
            }
            Err(e) => JsValue::from_str(&format!("not a report: {e}")),
        }
    });
    let _ = js_sys::Reflect::set(
        &gloo_utils::window(),
        &JsValue::from_str("__oomscope_load_report"),
        hook.as_ref(),
    );
    // The hook lives as long as the page.
    hook.forget();
}

/// Removes a `#r=…` or `#c=…` fragment without reloading or adding a history entry
/// (a `replaceState` fires no `hashchange`, so the link is not reopened).
fn clear_link_from_address() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let location = window.location();
    let holds_link = location
        .hash()
        .is_ok_and(|h| SharedLink::parse(&h).is_some());
    if !holds_link {
        return;
    }
    let path = format!(
        "{}{}",
        location.pathname().unwrap_or_default(),
        location.search().unwrap_or_default()
    );
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&path));
    }
}

/// The link's target: this page, without its fragment.
pub fn base_url() -> String {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return String::new();
    };
    format!(
        "{}{}",
        location.origin().unwrap_or_default(),
        location.pathname().unwrap_or_default()
    )
}

/// What a URL fragment carries: a report (`#r=…`) or a comparison (`#c=…`).
#[derive(Debug, Clone, PartialEq)]
pub enum SharedLink {
    Report(String),
    Comparison(String),
}

impl SharedLink {
    /// The link in `fragment` (with or without its `#`), if it holds one.
    pub fn parse(fragment: &str) -> Option<SharedLink> {
        let bare = fragment.trim_start_matches('#');
        if bare.starts_with("r=") {
            Some(SharedLink::Report(fragment.to_string()))
        } else if bare.starts_with("c=") {
            Some(SharedLink::Comparison(fragment.to_string()))
        } else {
            None
        }
    }

    /// Opens it in the worker: the report or comparison replaces what is
    /// on screen, or the page says why the link is refused.
    pub fn open(self, state: AppState) {
        match self {
            SharedLink::Report(link) => crate::worker_client::open_link(state, link),
            SharedLink::Comparison(link) => crate::worker_client::open_comparison_link(state, link),
        }
    }
}

/// Notes the section a pointer press or focus change happened in as the
/// one the user has open.
pub fn note_section(state: AppState, ev: &web_sys::Event) {
    let section = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|e| e.closest("section[id]").ok().flatten());
    if let Some(view) = section.and_then(|s| view_of(&s.id())) {
        if state.open_view.with_untracked(|v| v.view != view) {
            state.open_view.update(|v| v.view = view.to_string());
        }
    }
}

/// What the user has open now, for a link: [`AppState::open_view`], with
/// the section the user last worked in when it is still on screen, else
/// the section at the top of the viewport.
pub fn current_view(state: AppState) -> ViewState {
    let mut view = state.open_view.get_untracked();
    let Some(window) = web_sys::window() else {
        return view;
    };
    let Some(document) = window.document() else {
        return view;
    };
    let height = window
        .inner_height()
        .ok()
        .and_then(|h| h.as_f64())
        .unwrap_or(800.0);
    let on_screen = |id: &str| {
        document.get_element_by_id(id).is_some_and(|e| {
            let r = e.get_bounding_client_rect();
            r.bottom() > 0.0 && r.top() < height
        })
    };
    let worked_in = section_of(&view.view).is_some_and(on_screen);
    if !worked_in {
        // The last section whose top is above the upper third of the viewport.
        view.view = SECTIONS
            .iter()
            .rfind(|(_, id)| {
                document
                    .get_element_by_id(id)
                    .is_some_and(|e| e.get_bounding_client_rect().top() < height / 3.0)
            })
            .map_or("verdict", |(v, _)| v)
            .to_string();
    }
    // A selection belongs to its section: a tree node to the tree, a buffer
    // to the timeline and padding views.
    let keep = match Selection::parse(&view.selection) {
        Some(Selection::Node(_)) => view.view == "tree",
        Some(Selection::Rank(_)) => view.view == "ranks",
        Some(_) => view.view == "timeline" || view.view == "padding",
        None => false,
    };
    if !keep {
        view.selection.clear();
    }
    view
}

/// Scrolls the element `id` to the top of the viewport, below the sticky
/// page header, once the page has laid it out (after the next two
/// animation frames, when Leptos has mounted the report and the charts
/// have their size).
pub fn scroll_to(id: &'static str) {
    after_layout(move || {
        let Some(window) = web_sys::window() else {
            return;
        };
        let Some(document) = window.document() else {
            return;
        };
        let Some(element) = document.get_element_by_id(id) else {
            return;
        };
        let header = document
            .query_selector(".page-header")
            .ok()
            .flatten()
            .map_or(0.0, |h| h.get_bounding_client_rect().bottom().max(0.0));
        let y = element.get_bounding_client_rect().top() + window.scroll_y().unwrap_or(0.0)
            - header
            - SCROLL_GAP;
        window.scroll_to_with_x_and_y(0.0, y.max(0.0));
    });
}

/// Space left between the sticky header and a section scrolled to, in CSS pixels.
const SCROLL_GAP: f64 = 8.0;

/// Runs `f` after the next two animation frames.
fn after_layout(f: impl FnOnce() + 'static) {
    request_animation_frame(move || request_animation_frame(f));
}
