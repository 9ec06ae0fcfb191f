//! Ranking section 3's remedies by what they buy: each remedy's estimate is
//! compared with the excess, and the cheapest that covers it is the next
//! step. A remedy whose own estimate falls short is never the answer.

use oomscope_report::Confidence;

use crate::ids::*;

use super::estimates::Estimate;

/// The remedies of section 3, cheapest first: what each costs the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Remedy {
    /// `donate_argnums`: free (no compute, no numerics).
    Donation,
    /// Aligning dimensions to the tile: a shape change, no compute.
    Padding,
    /// `jax.checkpoint`: about a third more compute in the backward pass.
    Checkpoint,
    /// bfloat16: numerics change, usually faster.
    Bf16,
    /// A smaller batch: changes training dynamics or throughput.
    Batch,
}

/// Cheapest first.
pub(super) const COST_ORDER: [Remedy; 5] = [
    Remedy::Donation,
    Remedy::Padding,
    Remedy::Checkpoint,
    Remedy::Bf16,
    Remedy::Batch,
];

impl Remedy {
    /// The tree node that gives this advice.
    pub fn node(self) -> &'static str {
        match self {
            Remedy::Donation | Remedy::Bf16 | Remedy::Batch => CONFIG,
            Remedy::Padding => PADDING,
            Remedy::Checkpoint => REMAT,
        }
    }

    /// The step, in words, for the headline.
    pub fn step(self) -> &'static str {
        match self {
            Remedy::Donation => "donate the parameters (donate_argnums in jax.jit) so outputs reuse their memory",
            Remedy::Padding => "align the padded dimensions to the tile (128 minor, 8 second-minor)",
            Remedy::Checkpoint => "rematerialise: wrap the layers in jax.checkpoint so activations are recomputed in the backward pass",
            Remedy::Bf16 => "use bfloat16 for the f32 buffers",
            Remedy::Batch => "halve the batch size",
        }
    }

    /// A short name for summaries.
    pub fn name(self) -> &'static str {
        match self {
            Remedy::Donation => "donate_argnums",
            Remedy::Padding => "padding",
            Remedy::Checkpoint => "jax.checkpoint",
            Remedy::Bf16 => "bfloat16",
            Remedy::Batch => "half the batch",
        }
    }
}

/// The first remedy in cost order whose estimate covers `excess`.
pub(super) fn cheapest_covering(
    estimates: &[(Remedy, Option<Estimate>)],
    excess: Option<u64>,
) -> Option<(Remedy, &Estimate)> {
    let excess = excess?;
    COST_ORDER.iter().find_map(|r| {
        let (_, e) = estimates.iter().find(|(k, _)| k == r)?;
        let e = e.as_ref()?;
        (e.bytes >= excess).then_some((*r, e))
    })
}

/// An estimate's confidence, one step lower when it covers the excess by
/// less than a fifth (a small error in the model would make it fall short).
pub(super) fn confidence(e: &Estimate, excess: u64) -> Confidence {
    let thin = (e.bytes as f64) < excess as f64 * 1.2;
    match (e.confidence, thin) {
        (Confidence::High, true) => Confidence::Medium,
        (Confidence::Medium, true) => Confidence::Low,
        (c, _) => c,
    }
}
