//! The What-ifs the sender made on the page, in links: the module view's
//! panel (`ViewState.what_if`, proto `WhatIfPanel`: the remedies picked
//! with their parameters) and the snapshot lines replayed without
//! (`ViewState.snapshot_without`, proto `SnapshotReplay`), each with the
//! replay the sender saw, its curve downsampled to [`CURVE_POINTS`] with
//! the peak kept. Decoding validates every field.

use crate::bounds::{check_len, downsample_indices};
use crate::runtime::{delta, undelta};
use crate::LinkError;
use oomscope_proto::oomscope::report as pb;
use oomscope_report::whatif::{
    DonationScope, Remedy, ReplayedCurve, WhatIf, WhatIfChoice, WhatIfView,
};
use oomscope_report::MemorySnapshot;

/// Points of the replayed curve a link carries.
pub(crate) const CURVE_POINTS: usize = 200;
/// Largest `replay_json` a valid link holds.
const MAX_JSON: usize = 16 * 1024;
/// Largest k or N a valid link holds.
const MAX_DIVISOR: u32 = 1 << 20;
/// Most snapshot lines replayed without a valid link holds.
pub(crate) const MAX_SNAPSHOT_REPLAYS: usize = 32;

/// A replayed curve as a link carries it: its `WhatIf` JSON without the
/// changed buffers, and its curve as delta-encoded x and y columns.
fn curve_to_shared(curve: &ReplayedCurve) -> (String, Vec<i64>, Vec<u64>) {
    let what_if = WhatIf {
        changed: Vec::new(),
        ..curve.what_if.clone()
    };
    let json = serde_json::to_string(&what_if).unwrap_or_default();
    let keep = downsample_indices(&curve.heap_bytes, CURVE_POINTS.saturating_sub(1));
    let at = |i: usize| curve.positions.get(i).copied().unwrap_or(0);
    let x = delta(
        keep.iter()
            .map(|&i| i64::try_from(at(i)).unwrap_or(i64::MAX)),
    );
    let y = keep
        .iter()
        .filter_map(|&i| curve.heap_bytes.get(i).copied())
        .collect();
    (json, x, y)
}

/// [`curve_to_shared`]'s columns read back, validated (`what` names the
/// part of the link in errors).
fn curve_from_shared(
    what: &str,
    json: &str,
    x: &[i64],
    y: Vec<u64>,
) -> Result<ReplayedCurve, LinkError> {
    let invalid = |why: &str| LinkError::Invalid(format!("{what}: {why}"));
    if json.len() > MAX_JSON {
        return Err(invalid("the replay is too long"));
    }
    let what_if: WhatIf =
        serde_json::from_str(json).map_err(|e| invalid(&format!("the replay: {e}")))?;
    if x.len() != y.len() || y.len() > CURVE_POINTS {
        return Err(invalid("the replayed curve's columns"));
    }
    let positions = undelta(x)?
        .into_iter()
        .map(|x| u64::try_from(x).map_err(|_| invalid("a negative position")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReplayedCurve {
        what_if,
        positions,
        heap_bytes: y,
    })
}

fn snapshot_replay_to_shared(curve: &ReplayedCurve) -> pb::SnapshotReplay {
    let (what_if_json, x, y) = curve_to_shared(curve);
    pb::SnapshotReplay { what_if_json, x, y }
}

/// Snapshot lines replayed without (on the page, or by the analyzer), as
/// many as a link holds.
pub(crate) fn snapshot_replays_to_shared(curves: &[ReplayedCurve]) -> Vec<pb::SnapshotReplay> {
    curves
        .iter()
        .take(MAX_SNAPSHOT_REPLAYS)
        .map(snapshot_replay_to_shared)
        .collect()
}

/// The snapshot lines replayed without, each a `without_allocations`
/// what-if of a snapshot (input and device) of `snapshots` naming its line.
pub(crate) fn snapshot_replays_from_shared(
    replays: Vec<pb::SnapshotReplay>,
    snapshots: &[MemorySnapshot],
) -> Result<Vec<ReplayedCurve>, LinkError> {
    let what = "a snapshot line replayed without";
    if replays.len() > MAX_SNAPSHOT_REPLAYS {
        return Err(LinkError::Invalid(format!("too many of {what}")));
    }
    replays
        .into_iter()
        .map(|r| {
            let curve = curve_from_shared(what, &r.what_if_json, &r.x, r.y)?;
            let w = &curve.what_if;
            let names_a_line = w.remedy == Remedy::WithoutAllocations
                && w.frame.as_deref().is_some_and(|f| !f.is_empty())
                && snapshots
                    .iter()
                    .any(|s| s.input == w.module && Some(s.device) == w.device);
            if !names_a_line {
                return Err(LinkError::Invalid(format!(
                    "{what}: no line of a snapshot the link carries"
                )));
            }
            Ok(curve)
        })
        .collect()
}

pub(crate) fn to_shared(v: &WhatIfView) -> pb::WhatIfPanel {
    let mut panel = pb::WhatIfPanel {
        remedies: v
            .choice
            .remedies
            .iter()
            .map(|r| r.as_str().to_string())
            .collect(),
        donation: v.choice.donation.as_str().to_string(),
        batch_divisor: v.choice.batch_divisor,
        devices: v.choice.devices,
        ..Default::default()
    };
    if let Some(curve) = &v.replay {
        (panel.replay_json, panel.x, panel.y) = curve_to_shared(curve);
    }
    panel
}

pub(crate) fn from_shared(p: pb::WhatIfPanel) -> Result<WhatIfView, LinkError> {
    let invalid = |what: &str| LinkError::Invalid(format!("the what-if panel: {what}"));
    check_len("what-if remedies", &p.remedies)?;
    let remedies = p
        .remedies
        .iter()
        .map(|w| Remedy::from_word(w).ok_or_else(|| invalid("an unknown remedy")))
        .collect::<Result<Vec<_>, _>>()?;
    if remedies.len() > Remedy::ALL.len() {
        return Err(invalid("too many remedies"));
    }
    let donation = match p.donation.as_str() {
        "" => DonationScope::All,
        word => {
            DonationScope::from_word(word).ok_or_else(|| invalid("an unknown donation scope"))?
        }
    };
    for k in [p.batch_divisor, p.devices] {
        if k > MAX_DIVISOR {
            return Err(invalid("a divisor out of range"));
        }
    }
    let choice = WhatIfChoice {
        remedies,
        donation,
        batch_divisor: p.batch_divisor.max(2),
        devices: p.devices.max(2),
    };
    if p.replay_json.is_empty() {
        return Ok(WhatIfView {
            choice,
            replay: None,
        });
    }
    Ok(WhatIfView {
        choice,
        replay: Some(curve_from_shared(
            "the what-if panel",
            &p.replay_json,
            &p.x,
            p.y,
        )?),
    })
}
