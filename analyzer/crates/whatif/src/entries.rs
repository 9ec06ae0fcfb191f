//! The report's `diagnosis.what_if` entries: every single remedy with its
//! defaults (donation of every argument XLA could alias, batch halved,
//! sharding over the devices or 2), and any combination, replayed.

use oomscope_report::program::HeapProgram;
use oomscope_report::series::downsample_indices;
use oomscope_report::whatif::{
    AbsentRemedy, ChangedBuffer, PanelReplay, Remedy, ReplayedCurve, WhatIf, WhatIfChoice,
};

use crate::{predict_on, Change, Curve, DonationScope, Prepared, ShardScope, WhatIfError};

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

impl Settings {
    /// The parameters the What-if panel picked.
    pub fn of(choice: &WhatIfChoice) -> Self {
        Settings {
            batch_divisor: choice.batch_divisor.max(2),
            devices: choice.devices.max(2),
            donation: choice.donation,
        }
    }
}

/// The engine's change for a remedy word (`None`: a remedy of PyTorch
/// snapshots, not of compiled programs).
pub fn change_of(remedy: Remedy, settings: &Settings) -> Option<Change> {
    Some(match remedy {
        Remedy::Donation => Change::Donation(settings.donation),
        Remedy::Bf16 => Change::Bf16,
        Remedy::Batch => Change::Batch(settings.batch_divisor.max(2)),
        Remedy::Remat => Change::Remat,
        Remedy::Sharding => Change::Sharding(settings.devices.max(2), ShardScope::Parameters),
        Remedy::Offload => Change::Offload,
        Remedy::Padding => Change::Padding,
        Remedy::WithoutAllocations
        | Remedy::ExpandableSegments
        | Remedy::FailedAllocationPlaced => return None,
    })
}

/// Replays `remedies` together on `program`. A combination that changes
/// nothing at the peak, or predicts an empty heap, does not apply.
pub fn what_if(
    program: &HeapProgram,
    remedies: &[Remedy],
    settings: &Settings,
    limit: Option<u64>,
) -> Result<WhatIf, WhatIfError> {
    replayed(&Prepared::new(program)?, remedies, settings, limit).map(|(w, _)| w)
}

/// [`what_if`] on a prepared program, with the replayed curve.
pub fn replayed(
    prepared: &Prepared,
    remedies: &[Remedy],
    settings: &Settings,
    limit: Option<u64>,
) -> Result<(WhatIf, Curve), WhatIfError> {
    let Some((&first, rest)) = remedies.split_first() else {
        return Err(WhatIfError::NotApplicable("no remedy named".into()));
    };
    let (program, before) = (prepared.program, prepared.before());
    let changes: Vec<Change> = remedies
        .iter()
        .map(|&r| change_of(r, settings))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            WhatIfError::NotApplicable(
                "a what-if of PyTorch memory snapshots, not of compiled programs".into(),
            )
        })?;
    let prediction = predict_on(prepared, &changes)?;
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
    let entry = WhatIf {
        remedy: first,
        with: rest.to_vec(),
        module: program.module.clone(),
        memory_space: program.memory_space,
        scope: prediction.scope.join("; "),
        predicted_peak_bytes: peak,
        predicted_peak_position: program.position_of(prediction.curve.peak_position),
        saving_bytes: signed(before.peak_bytes) - signed(peak),
        fits: limit.map(|l| peak <= l),
        headroom_bytes: limit.map(|l| signed(l) - signed(peak)),
        how: prediction.how.join("; "),
        changed,
        ..WhatIf::default()
    };
    Ok((entry, prediction.curve))
}

/// Every single remedy on `program`: the entries that apply, and for the
/// others one line saying why not.
pub fn single_remedies(
    program: &HeapProgram,
    settings: &Settings,
    limit: Option<u64>,
) -> (Vec<WhatIf>, Vec<(Remedy, String)>) {
    match Prepared::new(program) {
        Ok(prepared) => singles_on(&prepared, settings, limit),
        Err(e) => (
            Vec::new(),
            Remedy::ALL
                .iter()
                .map(|&r| (r, absent_reason(e.clone())))
                .collect(),
        ),
    }
}

/// Why a remedy has no entry, in one line.
fn absent_reason(e: WhatIfError) -> String {
    match e {
        WhatIfError::NotApplicable(why) => why,
        WhatIfError::CannotReplay(why) => {
            format!("cannot replay this module ({why}); the numbers above are the compiler's own")
        }
    }
}

/// [`single_remedies`] on a prepared program.
fn singles_on(
    prepared: &Prepared,
    settings: &Settings,
    limit: Option<u64>,
) -> (Vec<WhatIf>, Vec<(Remedy, String)>) {
    let mut entries = Vec::new();
    let mut absent = Vec::new();
    for remedy in Remedy::ALL {
        match replayed(prepared, &[remedy], settings, limit) {
            Ok((w, _)) => entries.push(w),
            Err(e) => absent.push((remedy, absent_reason(e))),
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
    let prepared = Prepared::new(program).ok()?;
    combos
        .into_iter()
        .filter_map(|c| replayed(&prepared, &c, settings, limit).ok())
        .map(|(w, _)| w)
        .find(|w| fits(w))
}

/// Points of a replayed curve sent to the page and carried by links: the
/// shape kept (each bucket's maximum), the peak exact.
pub const PANEL_CURVE_POINTS: usize = 1000;

/// The What-if panel's answer for `program`: every single remedy with the
/// choice's parameters, and the choice's remedies replayed together with
/// their curve.
pub fn panel(program: &HeapProgram, choice: &WhatIfChoice, limit: Option<u64>) -> PanelReplay {
    match Prepared::new(program) {
        Ok(prepared) => panel_on(&prepared, choice, limit, None),
        Err(e) => {
            let why = absent_reason(e);
            PanelReplay {
                module: program.module.clone(),
                memory_space: program.memory_space,
                absent: Remedy::ALL
                    .iter()
                    .map(|&remedy| AbsentRemedy {
                        remedy,
                        why: why.clone(),
                    })
                    .collect(),
                failed: (!choice.remedies.is_empty()).then_some(why),
                ..PanelReplay::default()
            }
        }
    }
}

/// [`panel`] on a prepared program; `singles` are the single remedies
/// already replayed with the choice's parameters and limit (toggling a
/// remedy changes only the combination).
pub fn panel_on(
    prepared: &Prepared,
    choice: &WhatIfChoice,
    limit: Option<u64>,
    singles: Option<(Vec<WhatIf>, Vec<AbsentRemedy>)>,
) -> PanelReplay {
    let settings = Settings::of(choice);
    let (singles, absent) = singles.unwrap_or_else(|| {
        let (singles, absent) = singles_on(prepared, &settings, limit);
        let absent = absent
            .into_iter()
            .map(|(remedy, why)| AbsentRemedy { remedy, why })
            .collect();
        (singles, absent)
    });
    let program = prepared.program;
    let mut answer = PanelReplay {
        module: program.module.clone(),
        memory_space: program.memory_space,
        peak_bytes: prepared.before().peak_bytes,
        singles,
        absent,
        combination: None,
        failed: None,
    };
    if choice.remedies.is_empty() {
        return answer;
    }
    match replayed(prepared, &choice.remedies, &settings, limit) {
        Ok((what_if, curve)) => {
            let keep = downsample_indices(&curve.heap_bytes, PANEL_CURVE_POINTS);
            answer.combination = Some(ReplayedCurve {
                what_if,
                positions: keep
                    .iter()
                    .map(|&i| prepared.program.position_of(i as u64))
                    .collect(),
                heap_bytes: keep.iter().map(|&i| curve.heap_bytes[i]).collect(),
            });
        }
        Err(WhatIfError::NotApplicable(why) | WhatIfError::CannotReplay(why)) => {
            answer.failed = Some(why);
        }
    }
    answer
}
