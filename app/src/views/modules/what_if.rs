//! The What-if panel of the module view (issue 25): toggles for the
//! remedies the analyzer can replay on this module, with their parameters,
//! and the replayed heap drawn over today's with the new peak and the limit.
//!
//! The page never replays: each change of the toggles asks the worker
//! (`worker_client::replay`), which holds the module's program from the
//! analysis and answers with `oomscope_report::whatif::PanelReplay`. The
//! toggles and the replay shown live in `AppState::open_view`, so a link
//! carries them; whoever opens the link has no program, so the panel then
//! shows the sender's replay with its toggles fixed.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::whatif::{
    DonationScope, PanelReplay, Remedy, ReplayedCurve, WhatIf, WhatIfChoice, WhatIfView,
};
use oomscope_report::{ModuleReport, PeakKind, SourceKind};

use crate::draw::line_chart::{LineChart, Marker, RefLine, Series, Stroke};
use crate::format::Bytes;
use crate::state::{use_state, ReportOrigin};
use oomscope_app::protocol::WhatIfRequest;

/// Largest k and N the inputs offer.
const MAX_DIVISOR: u32 = 4096;

/// The remedy as a toggle's label.
fn label(remedy: Remedy) -> &'static str {
    match remedy {
        Remedy::Donation => "Donate arguments (donate_argnums)",
        Remedy::Bf16 => "bfloat16 (optimizer state kept f32)",
        Remedy::Batch => "Smaller batch (÷ k)",
        Remedy::Remat => "jax.checkpoint on the repeated block",
        Remedy::Sharding => "Shard parameters and optimizer state (over N)",
        Remedy::Offload => "Optimizer state to host memory",
        Remedy::Padding => "The padding fixes",
        // Snapshot what-ifs are never offered on a module.
        Remedy::WithoutAllocations => "Without these allocations",
        Remedy::ExpandableSegments => "expandable_segments",
        Remedy::FailedAllocationPlaced => "The failed allocation, placed",
    }
}

/// What the replay shows: the latest answer, or why there is none.
#[derive(Clone, PartialEq)]
enum Shown {
    Waiting,
    Replayed(Box<PanelReplay>),
    Failed(String),
}

/// `index` is the module's place in `report.modules` (what a link names).
#[component]
pub fn WhatIfPanel(module: ModuleReport, index: usize, limit: Option<u64>) -> impl IntoView {
    let state = use_state();
    let shared = state
        .report
        .with_untracked(|r| r.as_ref().map(|r| r.shared.is_some()))
        .unwrap_or(false);
    // What was open: a link's panel, or this session's for this module.
    let restored = state.open_view.with_untracked(|v| {
        (v.module as usize == index)
            .then(|| v.what_if.clone())
            .flatten()
    });
    if shared {
        return match restored {
            Some(view) => view! { <SharedPanel module=module view=view limit=limit/> }.into_any(),
            None => ().into_any(),
        };
    }
    // An HloProto (alone or in an XProf profile) or dump text with live
    // ranges brings the program a replay needs (the compiler's own
    // live-range view of a dump is not a heap curve to replay over), and
    // only the worker's own analysis has it (the built-in example is a
    // saved report). A dump module without live ranges gets the worker's
    // one line saying why.
    let analysed_here = state
        .origin
        .with_untracked(|o| matches!(o, Some(ReportOrigin::User)));
    let replayable = match module.source_kind {
        SourceKind::HloProto | SourceKind::Xplane => true,
        SourceKind::XlaDumpText => module.peak_kind != PeakKind::LiveRange,
        SourceKind::Other(_) => false,
    };
    if !replayable || !analysed_here {
        return ().into_any();
    }
    let chips = module.chips;
    let choice = RwSignal::new(
        restored
            .map(|v| v.choice)
            .unwrap_or_else(|| WhatIfChoice::for_chips(chips)),
    );
    let shown = RwSignal::new(Shown::Waiting);
    let elapsed_ms = RwSignal::new(None::<f64>);
    let name = module.display_name();
    let space = module.memory_space;
    Effect::new(move |_| {
        let picked = choice.get();
        let started = now_ms();
        let request = WhatIfRequest {
            job: 0,
            module: name.clone(),
            memory_space: space,
            choice: picked.clone(),
            limit_bytes: limit,
        };
        crate::worker_client::replay(
            state,
            request,
            Box::new(move |answer| {
                elapsed_ms.set(now_ms().zip(started).map(|(b, a)| b - a));
                let replay = answer.as_ref().ok().and_then(|r| r.combination.clone());
                state.open_view.update(|v| {
                    v.what_if = Some(WhatIfView {
                        choice: picked,
                        replay,
                    })
                });
                shown.set(match answer {
                    Ok(r) => Shown::Replayed(Box::new(r)),
                    Err(e) => Shown::Failed(e),
                });
            }),
        );
    });

    let toggles = move || {
        let Shown::Replayed(replay) = shown.get() else {
            return None;
        };
        Some(
            Remedy::ALL
                .into_iter()
                .map(|remedy| view! { <Toggle remedy=remedy replay=replay.clone() choice=choice/> })
                .collect_view(),
        )
    };
    let today = module.clone();
    let result = move || {
        match shown.get() {
        Shown::Waiting => view! { <p class="muted">"Replaying…"</p> }.into_any(),
        Shown::Failed(why) => view! { <p class="what-if-failed">{why}</p> }.into_any(),
        Shown::Replayed(replay) => match (&replay.combination, &replay.failed) {
            (Some(curve), _) => view! {
                <Outcome today=today.clone() curve=curve.clone() limit=limit/>
            }
            .into_any(),
            (None, Some(why)) => view! { <p class="what-if-failed">"No prediction: " {why.clone()}</p> }.into_any(),
            (None, None) => view! {
                <p class="muted">"Pick one or more remedies: each is applied to this program's own buffers and the heap replayed as the Memory Viewer replays it."</p>
            }
            .into_any(),
        },
    }
    };
    let timing = move || {
        elapsed_ms.get().map(|ms| {
            view! { <span class="muted what-if-time" data-ms=format!("{ms:.0}")>{format!("replayed in the worker in {ms:.0} ms")}</span> }
        })
    };
    view! {
        <section class="what-if" aria-labelledby="what-if-title">
            <div class="section-head">
                <h3 id="what-if-title" class="subhead">"What if"</h3>
                {timing}
            </div>
            <div class="what-if-toggles">{toggles}</div>
            <div class="what-if-result">{result}</div>
        </section>
    }
    .into_any()
}

/// One remedy's toggle, its parameter, and its own prediction (or why it
/// does not apply to this module).
#[component]
fn Toggle(
    remedy: Remedy,
    replay: Box<PanelReplay>,
    choice: RwSignal<WhatIfChoice>,
) -> impl IntoView {
    let word = remedy.as_str();
    let single = replay.singles.iter().find(|w| w.remedy == remedy).cloned();
    let absent = replay
        .absent
        .iter()
        .find(|a| a.remedy == remedy)
        .map(|a| a.why.clone());
    let picked = move || choice.with(|c| c.remedies.contains(&remedy));
    let on_toggle = move |ev: leptos::ev::Event| {
        let on = event_target_checked(&ev);
        choice.update(|c| {
            c.remedies.retain(|r| *r != remedy);
            if on {
                c.remedies.push(remedy);
                crate::sort::sort_by_key(&mut c.remedies, |r| r.cost_rank());
            }
        });
    };
    let parameter = match remedy {
        Remedy::Donation => Some(
            view! {
                <select data-parameter="donation" aria-label="Which arguments are donated"
                    prop:value=move || choice.with(|c| c.donation.as_str().to_string())
                    on:change=move |ev| {
                        if let Some(d) = DonationScope::from_word(&event_target_value(&ev)) {
                            choice.update(|c| c.donation = d);
                        }
                    }>
                    <option value="all">"every argument XLA can alias"</option>
                    <option value="optimizer_state">"the optimizer state only"</option>
                </select>
            }
            .into_any(),
        ),
        Remedy::Batch => Some(divisor_input(
            "batch",
            "k",
            choice,
            |c| c.batch_divisor,
            |c, k| c.batch_divisor = k,
        )),
        Remedy::Sharding => Some(divisor_input(
            "devices",
            "N",
            choice,
            |c| c.devices,
            |c, n| c.devices = n,
        )),
        _ => None,
    };
    let note = match (&single, &absent) {
        (Some(w), _) => view! { <SingleNote w=w.clone()/> }.into_any(),
        (None, Some(why)) => {
            view! { <span class="muted what-if-absent">{why.clone()}</span> }.into_any()
        }
        (None, None) => ().into_any(),
    };
    let disabled = single.is_none() && !picked();
    view! {
        <div class="what-if-toggle" data-remedy=word class:absent=single.is_none()>
            <label>
                <input type="checkbox" data-remedy=word prop:checked=picked prop:disabled=disabled on:change=on_toggle/>
                " " {label(remedy)}
            </label>
            {parameter}
            {note}
        </div>
    }
}

/// A number input for k or N (2 to [`MAX_DIVISOR`]).
fn divisor_input(
    name: &'static str,
    letter: &'static str,
    choice: RwSignal<WhatIfChoice>,
    get: fn(&WhatIfChoice) -> u32,
    set: fn(&mut WhatIfChoice, u32),
) -> AnyView {
    view! {
        <label class="what-if-parameter">
            {letter} " = "
            <input type="number" min="2" max=MAX_DIVISOR.to_string() step="1" data-parameter=name
                prop:value=move || choice.with(|c| get(c).to_string())
                on:change=move |ev| {
                    if let Ok(v) = event_target_value(&ev).trim().parse::<u32>() {
                        let v = v.clamp(2, MAX_DIVISOR);
                        if choice.with_untracked(|c| get(c) != v) {
                            choice.update(|c| set(c, v));
                        }
                    }
                }/>
        </label>
    }
    .into_any()
}

/// A single remedy's own prediction, beside its toggle.
#[component]
fn SingleNote(w: WhatIf) -> impl IntoView {
    let fits = w
        .fits
        .map(|f| if f { " (fits)" } else { " (does not fit)" })
        .unwrap_or("");
    view! {
        <span class="what-if-single muted" data-predicted-peak-bytes=w.predicted_peak_bytes.to_string()>
            "alone: peak " <Bytes value=w.predicted_peak_bytes/> {fits}
        </span>
    }
}

/// The picked remedies' prediction in words, and the replayed heap over
/// today's.
#[component]
fn Outcome(today: ModuleReport, curve: ReplayedCurve, limit: Option<u64>) -> impl IntoView {
    let w = curve.what_if.clone();
    let mut names = vec![w.remedy.as_str()];
    names.extend(w.with.iter().map(|r| r.as_str()));
    let verdict = match (w.fits, w.headroom_bytes) {
        (Some(true), Some(h)) => format!("fits, {} headroom", format_bytes(h.unsigned_abs())),
        (Some(false), Some(h)) => format!(
            "does not fit: {} over the limit",
            format_bytes(h.unsigned_abs())
        ),
        _ => "no limit known".to_string(),
    };
    let at = |i: usize| today.heap_positions.get(i).map_or(i as f64, |p| *p as f64);
    let now: Vec<(f64, f64)> = today
        .heap_bytes
        .iter()
        .enumerate()
        .map(|(i, b)| (at(i), *b as f64))
        .collect();
    let after: Vec<(f64, f64)> = curve
        .positions
        .iter()
        .zip(&curve.heap_bytes)
        .map(|(p, b)| (*p as f64, *b as f64))
        .collect();
    let series = vec![
        Series {
            label: format!("Today (peak {})", format_bytes(today.peak_bytes)),
            points: now,
            color: "#57606a",
            stroke: Stroke::Dashed,
            steps: true,
        },
        Series {
            label: format!(
                "With {} (peak {})",
                names.join(" + "),
                format_bytes(w.predicted_peak_bytes)
            ),
            points: after,
            color: "#0969da",
            stroke: Stroke::Solid,
            steps: true,
        },
    ];
    let lines = limit
        .map(|l| {
            vec![RefLine {
                label: format!("HBM limit {}", format_bytes(l)),
                bytes: l as f64,
                color: "#cf222e",
            }]
        })
        .unwrap_or_default();
    let marker = Some(Marker {
        x: w.predicted_peak_position as f64,
        label: format!(
            "new peak {} at {}",
            format_bytes(w.predicted_peak_bytes),
            w.predicted_peak_position
        ),
    });
    let description = format!(
        "Heap of {} replayed with {}: peak {} at position {}, against {} today.",
        w.module,
        names.join(" + "),
        format_bytes(w.predicted_peak_bytes),
        w.predicted_peak_position,
        format_bytes(today.peak_bytes)
    );
    view! {
        <p class="what-if-outcome" data-predicted-peak-bytes=w.predicted_peak_bytes.to_string() data-fits=w.fits.map(|f| f.to_string())>
            "Peak " <Bytes value=today.peak_bytes/> " → " <strong><Bytes value=w.predicted_peak_bytes/></strong>
            " with " {names.join(" + ")} " (" {verdict} ")"
        </p>
        <LineChart series=series lines=lines marker=marker x_label="program order (heap-simulator event)" description=description/>
        <details class="what-if-how">
            <summary>"What was changed and how it was modelled"</summary>
            <p>{w.scope.clone()}</p>
            <p class="muted">{w.how.clone()}</p>
        </details>
    }
}

/// A link's panel: the sender's toggles and replay, fixed (the program to
/// replay others is not in the link).
#[component]
fn SharedPanel(module: ModuleReport, view: WhatIfView, limit: Option<u64>) -> impl IntoView {
    let picked = view.choice.remedies.clone();
    let toggles = Remedy::ALL
        .into_iter()
        .map(|remedy| {
            let on = picked.contains(&remedy);
            let parameter = match remedy {
                Remedy::Donation if on => Some(match view.choice.donation {
                    DonationScope::All => " (every argument XLA can alias)".to_string(),
                    DonationScope::OptimizerState => " (the optimizer state only)".to_string(),
                }),
                Remedy::Batch if on => Some(format!(" (k = {})", view.choice.batch_divisor)),
                Remedy::Sharding if on => Some(format!(" (N = {})", view.choice.devices)),
                _ => None,
            };
            view! {
                <div class="what-if-toggle" data-remedy=remedy.as_str()>
                    <label>
                        <input type="checkbox" data-remedy=remedy.as_str() prop:checked=on disabled=true/>
                        " " {label(remedy)} {parameter}
                    </label>
                </div>
            }
        })
        .collect_view();
    let outcome = match view.replay {
        Some(curve) => view! { <Outcome today=module limit=limit curve=curve/> }.into_any(),
        None => view! { <p class="muted">"No remedy was picked."</p> }.into_any(),
    };
    view! {
        <section class="what-if shared" aria-labelledby="what-if-title">
            <div class="section-head">
                <h3 id="what-if-title" class="subhead">"What if"</h3>
                <span class="muted">"as the sender replayed it; drop the files to replay other remedies"</span>
            </div>
            <div class="what-if-toggles">{toggles}</div>
            <div class="what-if-result">{outcome}</div>
        </section>
    }
}

/// The worker's clock is not the page's; the page measures the round trip.
fn now_ms() -> Option<f64> {
    web_sys::window()?.performance().map(|p| p.now())
}
