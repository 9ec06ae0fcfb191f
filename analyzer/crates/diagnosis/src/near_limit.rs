//! One step from an OOM: a step series that runs within a few percent of its
//! limit, or whose log reports allocator retries (torchtitan's `N CUDA
//! memory allocation retries.`: the caching allocator freed its cache and
//! tried again, the sign of thrashing and fragmentation).

use oomscope_report::{Confidence, Headline, Report, Severity, StepSeries};

use crate::facts::{gib, pct_fact, pct_text, signed, total};
use crate::ids::NEAR_LIMIT;
use crate::node::NodeEval;

/// Peak use at least this share of the limit is "one step from an OOM".
const NEAR_FRACTION: f64 = 0.97;

/// What the series that is closest to its limit shows.
pub(crate) struct NearLimit<'a> {
    pub series: &'a StepSeries,
    pub max: u64,
    pub max_step: u64,
    pub limit: Option<u64>,
    pub retries: u64,
    pub retry_steps: Vec<u64>,
}

impl NearLimit<'_> {
    fn near(&self) -> bool {
        self.limit
            .is_some_and(|l| l > 0 && self.max as f64 >= l as f64 * NEAR_FRACTION)
    }
    pub fn applies(&self) -> bool {
        self.near() || self.retries > 0
    }
}

pub(crate) fn find(report: &Report) -> Option<NearLimit<'_>> {
    report
        .step_series
        .iter()
        .filter_map(|s| {
            let top = s.points.iter().max_by_key(|p| p.bytes)?;
            Some(NearLimit {
                series: s,
                max: top.bytes,
                max_step: top.step,
                limit: s.limit_bytes,
                retries: total(s.allocation_retries.iter().map(|r| r.bytes)),
                retry_steps: s.allocation_retries.iter().map(|r| r.step).collect(),
            })
        })
        .filter(NearLimit::applies)
        .max_by(|a, b| {
            let share = |n: &NearLimit<'_>| n.limit.map_or(0.0, |l| pct_fact(n.max, l));
            (a.retries, share(a) as u64).cmp(&(b.retries, share(b) as u64))
        })
}

pub(crate) fn node(found: Option<&NearLimit<'_>>, selected: bool) -> NodeEval {
    let mut node = NodeEval::new(NEAR_LIMIT, "");
    let Some(n) = found else {
        node.reason =
            "No step series runs within 3% of its limit or reports allocator retries.".into();
        return node;
    };
    node.fact("max_bytes", n.max);
    node.fact("max_step", n.max_step);
    if let Some(l) = n.limit {
        node.fact("limit_bytes", l);
        node.fact("headroom_bytes", l.saturating_sub(n.max));
        node.fact("max_pct_of_limit", pct_fact(n.max, l));
    }
    node.fact("allocation_retries", n.retries);
    node.fact("retry_steps", n.retry_steps.clone());
    node.reason = format!("{}{}.", usage(n), retries_text(n));
    node.selected = selected;
    if selected {
        if n.retries > 0 {
            node.action(
                "expandable_segments",
                &format!("{} retries so far.", n.retries),
                None,
            );
        }
        let headroom = n.limit.map(|l| l.saturating_sub(n.max));
        node.action(
            "headroom",
            &headroom
                .map(|h| format!("Only {} is left.", gib(h)))
                .unwrap_or_default(),
            headroom.map(|h| (signed(h), "limit − largest memory in the series".into())),
        );
    }
    node
}

fn usage(n: &NearLimit<'_>) -> String {
    let who = if n.series.device.is_empty() {
        "Memory".to_string()
    } else {
        format!("Memory on {}", n.series.device)
    };
    match n.limit {
        Some(l) => format!(
            "{who} reaches {} of {} ({}) at step {}: {} of headroom",
            gib(n.max),
            gib(l),
            pct_text(n.max, l),
            n.max_step,
            gib(l.saturating_sub(n.max))
        ),
        None => format!("{who} reaches {} at step {}", gib(n.max), n.max_step),
    }
}

fn retries_text(n: &NearLimit<'_>) -> String {
    if n.retries == 0 {
        return String::new();
    }
    format!(
        "; the allocator retried {} time{} (at step{} {}): it had to free its cache to find memory, the sign of thrashing and fragmentation",
        n.retries,
        if n.retries == 1 { "" } else { "s" },
        if n.retry_steps.len() == 1 { "" } else { "s" },
        n.retry_steps
            .iter()
            .take(5)
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

pub(crate) fn headline(n: &NearLimit<'_>) -> Headline {
    let step = if n.retries > 0 {
        "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to stop the retries, and make room (activation checkpointing, a smaller batch) before a larger step fails"
    } else {
        "make room before a larger step fails: activation checkpointing, a smaller batch, or sharding optimizer state"
    };
    Headline {
        node: NEAR_LIMIT.to_string(),
        text: format!(
            "One step from out of memory: {}{}. Next step: {step}",
            usage(n),
            retries_text(n)
        ),
        estimate_bytes: n.limit.map(|l| l.saturating_sub(n.max)),
        severity: Severity::Warning,
        confidence: n.limit.map(|_| Confidence::High),
    }
}
