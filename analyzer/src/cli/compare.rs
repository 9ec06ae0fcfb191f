//! The text of `oomscope compare`: both sides, what failed, then per module
//! the peaks and the named changes whose bytes sum to the difference.

use oomscope_report::compare::Comparison;
use oomscope_report::units::{format_byte_difference as signed, format_bytes};
use std::fmt::Write;

pub fn summary(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "oomscope comparison: A = {}, B = {}",
        c.a.label, c.b.label
    );
    for (name, side) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(
            s,
            "  {name}: {} input(s){}",
            side.inputs.len(),
            if side.failed {
                ", could not be read"
            } else {
                ""
            }
        );
        for e in &side.errors {
            let _ = writeln!(s, "    {e}");
        }
    }
    for n in &c.notes {
        let _ = writeln!(s, "\n{}", n.text);
    }
    for m in &c.modules {
        let _ = writeln!(
            s,
            "\n{} ({}): peak {} → {} ({})",
            if m.module_a == m.module_b {
                m.module_a.clone()
            } else {
                format!("{} → {}", m.module_a, m.module_b)
            },
            m.memory_space.words(),
            format_bytes(m.peak_bytes_a),
            format_bytes(m.peak_bytes_b),
            signed(m.difference_bytes)
        );
        if !m.summary.is_empty() {
            let _ = writeln!(s, "  {}", m.summary);
        }
        for ch in &m.changes {
            let _ = writeln!(
                s,
                "  {:>14}  {:<12} {}",
                signed(ch.bytes),
                ch.kind.as_str(),
                ch.text
            );
        }
    }
    for e in &c.oom_events {
        let _ = writeln!(s, "\nOut-of-memory error ({}):", e.memory_space);
        for n in &e.numbers {
            let show = |v: Option<u64>| v.map_or("—".to_string(), format_bytes);
            let _ = writeln!(
                s,
                "  {:<28} {:>12} → {:>12}{}",
                n.field,
                show(n.a),
                show(n.b),
                n.difference
                    .map(|d| format!("  ({})", signed(d)))
                    .unwrap_or_default()
            );
        }
    }
    for st in &c.step_series {
        let per_step = |v: Option<f64>| {
            v.map_or("—".to_string(), |x| {
                format!("{}/step", signed(x.round() as i64))
            })
        };
        let _ = writeln!(
            s,
            "\nMemory per step, {} {}: growth {} → {}; max {} → {}",
            st.device,
            st.metric,
            per_step(st.slope_bytes_per_step_a),
            per_step(st.slope_bytes_per_step_b),
            format_bytes(st.max_bytes_a),
            format_bytes(st.max_bytes_b)
        );
    }
    for p in c.allocator_profiles.iter().chain(&c.memory_timelines) {
        let _ = writeln!(
            s,
            "\n{}: peak {} → {} ({})",
            p.name,
            format_bytes(p.peak_bytes_a),
            format_bytes(p.peak_bytes_b),
            signed(p.difference_bytes)
        );
    }
    for p in &c.stack_profiles {
        let _ = writeln!(
            s,
            "\n{}: peak {} → {} ({}); {} new and {} vanished allocation sites",
            p.device,
            format_bytes(p.peak_bytes_a),
            format_bytes(p.peak_bytes_b),
            signed(p.difference_bytes),
            p.new_sites,
            p.vanished_sites
        );
    }
    s
}
