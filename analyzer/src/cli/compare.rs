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

/// `compare`'s options given after run B's files (`oomscope compare A --
/// B --json`): everything after `--` reaches B, so its options are taken
/// out here, as a user means them; B's files are what is left. A word that
/// starts with `--` and names no option is refused, never read as a file.
#[derive(Debug, Default, PartialEq)]
pub struct AfterB {
    pub paths: Vec<String>,
    pub json: bool,
    pub link: bool,
    pub label_a: Option<String>,
    pub label_b: Option<String>,
    pub base_url: Option<String>,
}

impl AfterB {
    pub fn split<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<AfterB, String> {
        let mut after = AfterB::default();
        let mut words = words.into_iter();
        while let Some(word) = words.next() {
            if !word.starts_with("--") {
                after.paths.push(word.to_string());
                continue;
            }
            let (name, inline) = match word.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (word, None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| words.next().map(str::to_string))
                    .ok_or_else(|| format!("{name} after run B's files needs a value"))
            };
            match name {
                "--json" if inline.is_none() => after.json = true,
                "--link" if inline.is_none() => after.link = true,
                "--label-a" => after.label_a = Some(value()?),
                "--label-b" => after.label_b = Some(value()?),
                "--base-url" => after.base_url = Some(value()?),
                _ => {
                    return Err(format!(
                        "unexpected option '{word}' after run B's files (a file whose name starts with -- is written ./{word})"
                    ))
                }
            }
        }
        if after.paths.is_empty() {
            return Err("no files for run B after --".into());
        }
        Ok(after)
    }
}

#[cfg(test)]
mod tests {
    use super::AfterB;

    #[test]
    fn options_after_b_are_options_and_unknown_ones_are_refused() {
        let a = AfterB::split([
            "b.log",
            "--json",
            "--label-b",
            "after",
            "--base-url=https://x/",
        ])
        .unwrap();
        assert_eq!(a.paths, ["b.log"]);
        assert!(a.json && !a.link);
        assert_eq!(a.label_b.as_deref(), Some("after"));
        assert_eq!(a.base_url.as_deref(), Some("https://x/"));
        assert!(AfterB::split(["b.log", "--jsn"]).is_err());
        assert!(AfterB::split(["--json"]).is_err());
        assert!(AfterB::split(["b.log", "--label-a"]).is_err());
        assert_eq!(AfterB::split(["./--json"]).unwrap().paths, ["./--json"]);
    }
}
