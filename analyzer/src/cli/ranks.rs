//! The ranks section of `oomscope analyze`'s summary (issue 26): every
//! rank's peak, final, growth and OOM in one table, the ranks that differ
//! from the median with their line, OOMs printed by several ranks, and what
//! the grouping decided.

use oomscope_report::units::format_bytes;
use oomscope_report::{RankFindingKind, Report};
use std::fmt::Write;

pub fn ranks(s: &mut String, r: &Report) {
    if !r.ranks.is_empty() {
        let _ = writeln!(s, "\nRanks: {}", r.ranks.len());
        let _ = writeln!(
            s,
            "  {:>5}  {:<10} {:>12} {:>12} {:>14}  {:<3}  inputs",
            "rank", "device", "peak", "final", "growth/step", "oom"
        );
        for k in &r.ranks {
            let growth = k.growth_per_step_bytes.map_or("-".to_string(), |g| {
                let sign = if g < 0 { "-" } else { "" };
                format!("{sign}{}", format_bytes(g.unsigned_abs()))
            });
            let _ = writeln!(
                s,
                "  {:>5}  {:<10} {:>12} {:>12} {:>14}  {:<3}  {}{}",
                k.rank,
                k.device,
                format_bytes(k.peak_bytes),
                format_bytes(k.final_bytes),
                growth,
                if k.oom { "yes" } else { "no" },
                k.inputs.len(),
                if k.median {
                    "  (median: the reference)"
                } else {
                    ""
                }
            );
        }
    }
    for f in &r.rank_findings {
        let what = match f.kind {
            RankFindingKind::Growth => "growth",
            RankFindingKind::Excess => "excess",
            RankFindingKind::OomFirst => "first OOM",
            RankFindingKind::Other(_) => "finding",
        };
        let _ = writeln!(s, "  {what}: {}", f.text);
    }
    for o in &r.rank_ooms {
        let ranks: Vec<String> = o.ranks.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(
            s,
            "\nOne OOM printed by {} rank(s) ({}), {} line {}: {}",
            o.ranks.len(),
            ranks.join(", "),
            o.input,
            o.line,
            o.message
        );
        for d in &o.differing {
            let per: Vec<String> = d
                .by_rank
                .iter()
                .map(|(rank, b)| format!("rank {rank} {}", format_bytes(*b)))
                .collect();
            let _ = writeln!(s, "  {} differs: {}", d.field, per.join(", "));
        }
    }
    for n in &r.rank_notes {
        let _ = writeln!(s, "  note: {}", n.text);
    }
}
