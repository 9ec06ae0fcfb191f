//! The report's `diagnosis.what_if` entries: every single remedy with its
//! defaults (donation of every argument XLA could alias, batch halved,
//! sharding over the devices or 2), and any combination, replayed.

use oomscope_report::program::HeapProgram;
use oomscope_report::whatif::{ChangedBuffer, Remedy, WhatIf};

use crate::{predict, Change, DonationScope, ShardScope, WhatIfError};

/// At most this many changed buffers are listed per entry (largest change first).
const MAX_CHANGED: usize = 8;

/// Parameters of the remedies: `k` for the batch, `n` for sharding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub batch_divisor: u32,
    pub devices: u32,
    pub donation: DonationScope,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            batch_divisor: 2,
            devices: 2,
            donation: DonationScope::All,
        }
    }
}

/// The engine's change for a remedy word.
pub fn change_of(remedy: Remedy, settings: &Settings) -> Change {
    match remedy {
        Remedy::Donation => Change::Donation(settings.donation),
        Remedy::Bf16 => Change::Bf16,
        Remedy::Batch => Change::Batch(settings.batch_divisor.max(2)),
        Remedy::Remat => Change::Remat,
        Remedy::Sharding => Change::Sharding(settings.devices.max(2), ShardScope::Parameters),
        Remedy::Offload => Change::Offload,
        Remedy::Padding => Change::Padding,
    }
}

/// Replays `remedies` together on `program`. A combination that changes
/// nothing at the peak, or predicts an empty heap, does not apply.
pub fn what_if(
    program: &HeapProgram,
    remedies: &[Remedy],
    settings: &Settings,
    limit: Option<u64>,
) -> Result<WhatIf, WhatIfError> {
    let Some((&first, rest)) = remedies.split_first() else {
        return Err(WhatIfError::NotApplicable("no remedy named".into()));
    };
    let before = crate::baseline(program)?;
    let changes: Vec<Change> = remedies.iter().map(|&r| change_of(r, settings)).collect();
    let prediction = predict(program, &changes)?;
    let peak = prediction.curve.peak_bytes;
    if peak == 0 {
        return Err(WhatIfError::NotApplicable(
            "the replay leaves no buffer: nothing to predict".into(),
        ));
    }
    if peak == before.peak_bytes {
        return Err(WhatIfError::NotApplicable(format!(
            "replayed, the peak does not change ({})",
            prediction.scope.join("; ")
        )));
    }
    let mut changed: Vec<ChangedBuffer> = prediction.changed.clone();
    changed.sort_by_key(|c| std::cmp::Reverse(c.bytes_before.abs_diff(c.bytes_after)));
    changed.truncate(MAX_CHANGED);
    let signed = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
    Ok(WhatIf {
        remedy: first,
        with: rest.to_vec(),
        module: program.module.clone(),
        memory_space: program.memory_space,
        scope: prediction.scope.join("; "),
        predicted_peak_bytes: peak,
        predicted_peak_position: prediction.curve.peak_position,
        saving_bytes: signed(before.peak_bytes) - signed(peak),
        fits: limit.map(|l| peak <= l),
        headroom_bytes: limit.map(|l| signed(l) - signed(peak)),
        how: prediction.how.join("; "),
        changed,
    })
}

/// Every single remedy on `program`: the entries that apply, and for the
/// others one line saying why not.
pub fn single_remedies(
    program: &HeapProgram,
    settings: &Settings,
    limit: Option<u64>,
) -> (Vec<WhatIf>, Vec<(Remedy, String)>) {
    let mut entries = Vec::new();
    let mut absent = Vec::new();
    for remedy in Remedy::ALL {
        match what_if(program, &[remedy], settings, limit) {
            Ok(w) => entries.push(w),
            Err(WhatIfError::NotApplicable(why)) => absent.push((remedy, why)),
            Err(WhatIfError::CannotReplay(why)) => {
                absent.push((remedy, format!("cannot replay this module ({why}); the numbers above are the compiler's own")));
            }
        }
    }
    (entries, absent)
}

/// The cheapest combination of two or three of `applicable` whose
/// prediction `fits` (fewest remedies first, then the cheapest by
/// [`Remedy::cost_rank`]), replayed in one plan.
pub fn cheapest_combination(
    program: &HeapProgram,
    applicable: &[Remedy],
    settings: &Settings,
    limit: Option<u64>,
    fits: impl Fn(&WhatIf) -> bool,
) -> Option<WhatIf> {
    let mut remedies = applicable.to_vec();
    remedies.sort_by_key(|r| r.cost_rank());
    remedies.dedup();
    let mut combos: Vec<Vec<Remedy>> = Vec::new();
    for i in 0..remedies.len() {
        for j in i + 1..remedies.len() {
            combos.push(vec![remedies[i], remedies[j]]);
            for k in j + 1..remedies.len() {
                combos.push(vec![remedies[i], remedies[j], remedies[k]]);
            }
        }
    }
    combos.sort_by_key(|c| {
        (
            c.len(),
            c.iter().map(|r| u32::from(r.cost_rank())).sum::<u32>(),
        )
    });
    combos
        .into_iter()
        .filter_map(|c| what_if(program, &c, settings, limit).ok())
        .find(|w| fits(w))
}
