//! The device picker, for a report that gives no memory limit (a lone
//! HloProto, an XProf profile or dump that fits, a step log): the user picks
//! the device from the one list (`oomscope_report::devices`) and the worker
//! makes the verdict again with its limit
//! (`oomscope_diagnosis::diagnose_with`: it fits with its headroom, or the
//! compile tree with the remedy, or the step at which a growing series
//! runs out); the page links no tree, so a first visit does not download
//! it. The picked device is part of [`AppState::open_view`], so a link
//! carries it, and opening the link shows it picked. A report embedded in
//! a notebook has no worker: it names the command that picks instead.
//!
//! [`AppState::open_view`]: crate::state::AppState

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_app::protocol::Rework;
use oomscope_report::devices::{known_device, KNOWN_DEVICES};
use oomscope_report::{DeviceLimit, Report};

use crate::format::Bytes;
use crate::state::{use_state, AppState};

/// Shows the report's verdict for the picked device (made by the worker)
/// and remembers the pick.
fn pick(state: AppState, report: &Report, device: Option<DeviceLimit>) {
    let picked = device.clone();
    crate::worker_client::rework(
        state,
        report,
        Rework::Device(device),
        Box::new(move |answer| match answer {
            Ok(next) => {
                state.open_view.update(|v| v.device = picked);
                state.report.set(Some(Arc::new(next)));
            }
            Err(message) => state.notice.set(Some(format!(
                "The verdict could not be made for this device: {message}"
            ))),
        }),
    );
}

#[component]
pub fn DevicePicker(report: Arc<Report>) -> impl IntoView {
    if !oomscope_diagnosis::asks_for_device(&report) {
        return ().into_any();
    }
    if crate::embedded::active() {
        return view! {
            <section class="card device-picker">
                <p class="muted">
                    "These inputs give no memory limit: "
                    <code>"oomscope analyze --device NAME"</code>
                    " makes the verdict for a device (or open the report's link on the full page and pick it there)."
                </p>
            </section>
        }
        .into_any();
    }
    let state = use_state();
    let picked = state.open_view.with_untracked(|v| v.device.clone());
    // A link can carry a device outside the list (an older list): it is
    // still offered, as picked.
    let carried = picked
        .clone()
        .filter(|d| known_device(&d.name).is_none_or(|k| k.limit_bytes() != d.limit_bytes));
    let selected_name = picked.as_ref().map(|d| d.name.clone()).unwrap_or_default();
    let on_change = {
        let report = report.clone();
        let carried = carried.clone();
        move |ev: leptos::ev::Event| {
            let name = event_target_value(&ev);
            let device = known_device(&name)
                .map(|d| d.limit())
                .or_else(|| carried.clone().filter(|d| d.name == name));
            pick(state, &report, device);
        }
    };
    let options = KNOWN_DEVICES
        .iter()
        .map(|d| (d.name.to_string(), d.limit_bytes()))
        .chain(carried.map(|d| (d.name, d.limit_bytes)))
        .map(|(name, limit)| {
            let selected = name == selected_name;
            view! {
                <option value=name.clone() selected=selected>
                    {format!("{name} — {}", oomscope_report::units::format_bytes(limit))}
                </option>
            }
        })
        .collect_view();
    let limit = picked.map(|d| d.limit_bytes);
    view! {
        <section class="card device-picker" aria-labelledby="device-picker-title">
            <h2 id="device-picker-title" class="subhead">"Which device will it run on?"</h2>
            <p class="muted">
                "These inputs give no memory limit. Pick the device and the verdict above is made with its limit "
                "(what a compile-time OOM prints for TPUs, PyTorch's total capacity for GPUs)."
            </p>
            <label>
                "Device: "
                <select id="device-picker" on:change=on_change>
                    <option value="" selected=selected_name.is_empty()>"— none —"</option>
                    {options}
                </select>
            </label>
            {limit.map(|l| view! { <span class="stat-note" data-field="device-limit">" limit " <Bytes value=l/></span> })}
        </section>
    }
    .into_any()
}
