//! The module view's What-if panel in links (`ViewState.what_if`, proto
//! `WhatIfPanel`): the remedies picked with their parameters, and the
//! replay the sender saw, its curve downsampled to [`CURVE_POINTS`] with
//! the peak kept. Decoding validates every field.

use crate::bounds::{check_len, downsample_indices};
use crate::runtime::{delta, undelta};
use crate::LinkError;
use oomscope_proto::oomscope::report as pb;
use oomscope_report::whatif::{
    DonationScope, Remedy, ReplayedCurve, WhatIf, WhatIfChoice, WhatIfView,
};

/// Points of the replayed curve a link carries.
pub(crate) const CURVE_POINTS: usize = 200;
/// Largest `replay_json` a valid link holds.
const MAX_JSON: usize = 16 * 1024;
/// Largest k or N a valid link holds.
const MAX_DIVISOR: u32 = 1 << 20;

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
        let what_if = WhatIf {
            changed: Vec::new(),
            ..curve.what_if.clone()
        };
        panel.replay_json = serde_json::to_string(&what_if).unwrap_or_default();
        let keep = downsample_indices(&curve.heap_bytes, CURVE_POINTS.saturating_sub(1));
        let at = |i: usize| curve.positions.get(i).copied().unwrap_or(0);
        panel.x = delta(
            keep.iter()
                .map(|&i| i64::try_from(at(i)).unwrap_or(i64::MAX)),
        );
        panel.y = keep
            .iter()
            .filter_map(|&i| curve.heap_bytes.get(i).copied())
            .collect();
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
    if p.replay_json.len() > MAX_JSON {
        return Err(invalid("the replay is too long"));
    }
    let what_if: WhatIf =
        serde_json::from_str(&p.replay_json).map_err(|e| invalid(&format!("the replay: {e}")))?;
    if p.x.len() != p.y.len() || p.y.len() > CURVE_POINTS {
        return Err(invalid("the replayed curve's columns"));
    }
    let positions = undelta(&p.x)?
        .into_iter()
        .map(|x| u64::try_from(x).map_err(|_| invalid("a negative position")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WhatIfView {
        choice,
        replay: Some(ReplayedCurve {
            what_if,
            positions,
            heap_bytes: p.y,
        }),
    })
}
