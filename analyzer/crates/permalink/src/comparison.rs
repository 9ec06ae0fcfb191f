//! A comparison of two runs shared as a link (issue 18): the comparison
//! itself (peaks, named changes, the largest buffer and stack differences,
//! OOM numbers, growth per step), not the two reports, in the same budget
//! as a report link. Fragment `#c=<version>.<payload>`: the JSON of the
//! comparison, zlib-compressed (checksummed) and base64url-encoded, read
//! back with the same bounds as a report link.

use crate::{
    link_under, pack_payload, unpack_payload, Link, LinkError, MAX_BUDGET, TYPICAL_BUDGET,
};
use oomscope_report::compare::Comparison;

const FRAGMENT_KEY: &str = "c=";

/// The reductions tried in order until the link fits, least detail lost first.
pub const COMPARISON_REDUCTION_STEPS: &[&str] = &[
    "buffer changes limited to the largest 20 per module; stack changes to 10 per profile",
    "buffer changes limited to 5 per module; stack changes to 3 per profile; input lists dropped",
    "buffer and stack changes dropped; modules limited to the 10 largest differences; unmatched modules listed up to 10; each side's module peaks up to 10",
    "modules limited to the 3 largest differences; OOM numbers limited to 8 per error; series limited to 4; each side's module peaks up to 3",
];

/// A comparison as a link under `base_url` (the page's address): the
/// fragment of [`encode_comparison_fragment`] after `#`.
pub fn encode_comparison_link(comparison: &Comparison, base_url: &str) -> Result<Link, LinkError> {
    let (fragment, reductions) = encode_comparison_fragment(comparison)?;
    Ok(link_under(base_url, fragment, reductions))
}

/// Encode a comparison as a fragment (`c=1.…`, without `#`), reducing
/// detail until it fits [`TYPICAL_BUDGET`] when it can and [`MAX_BUDGET`]
/// always. Returns the fragment and the reductions applied.
pub fn encode_comparison_fragment(
    comparison: &Comparison,
) -> Result<(String, Vec<String>), LinkError> {
    let mut shared = comparison.clone();
    shared.reductions.clear();
    let mut step = 0;
    loop {
        let fragment = pack_payload(
            FRAGMENT_KEY,
            &serde_json::to_vec(&shared).unwrap_or_default(),
        );
        let exhausted = step >= COMPARISON_REDUCTION_STEPS.len();
        if fragment.len() <= TYPICAL_BUDGET || (exhausted && fragment.len() <= MAX_BUDGET) {
            return Ok((fragment, shared.reductions));
        }
        if exhausted {
            return Err(LinkError::TooLarge(fragment.len()));
        }
        reduce(&mut shared, step);
        shared
            .reductions
            .push(COMPARISON_REDUCTION_STEPS[step].to_string());
        step += 1;
    }
}

/// Decode a comparison link (`#c=…`, a fragment or a whole URL). Every
/// failure is a [`LinkError`] with a clear message.
pub fn decode_comparison(link: &str) -> Result<Comparison, LinkError> {
    let bytes = unpack_payload(link, FRAGMENT_KEY)?;
    serde_json::from_slice(&bytes).map_err(|e| LinkError::Corrupt(format!("not a comparison: {e}")))
}

fn reduce(c: &mut Comparison, step: usize) {
    let limit_details = |c: &mut Comparison, buffers: usize, stacks: usize| {
        for m in &mut c.modules {
            m.buffers.truncate(buffers);
        }
        for s in &mut c.stack_profiles {
            s.stacks.truncate(stacks);
        }
    };
    match step {
        0 => limit_details(c, 20, 10),
        1 => {
            limit_details(c, 5, 3);
            c.a.inputs.clear();
            c.b.inputs.clear();
        }
        2 => {
            limit_details(c, 0, 0);
            // Modules are listed largest difference first.
            c.modules.truncate(10);
            c.only_in_a.truncate(10);
            c.only_in_b.truncate(10);
            c.a.module_peaks.truncate(10);
            c.b.module_peaks.truncate(10);
        }
        _ => {
            c.modules.truncate(3);
            c.a.module_peaks.truncate(3);
            c.b.module_peaks.truncate(3);
            for e in &mut c.oom_events {
                e.numbers.truncate(8);
            }
            c.step_series.truncate(4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::compare::{
        BufferChange, Change, ChangeKind, ModuleComparison, ModulePeak,
    };

    fn big_comparison(modules: usize, buffers: usize) -> Comparison {
        let mut c = Comparison::default();
        c.a.label = "f32".into();
        c.b.label = "bf16".into();
        c.a.module_peaks = (0..modules)
            .map(|i| ModulePeak {
                module: format!("jit_step_{i}(7)"),
                peak_bytes: (modules - i) as u64 * 1_000_003,
                ..ModulePeak::default()
            })
            .collect();
        for i in 0..modules {
            let bytes = -((modules - i) as i64) << 20;
            c.modules.push(ModuleComparison {
                name: format!("jit_step_{i}"),
                peak_bytes_a: 1 << 34,
                peak_bytes_b: ((1i64 << 34) + bytes) as u64,
                difference_bytes: bytes,
                changes: vec![Change {
                    kind: ChangeKind::Dtype,
                    bytes,
                    buffers: buffers as u64,
                    text: format!("f32→bf16 halved {buffers} buffers"),
                }],
                explained_bytes: bytes,
                buffers: (0..buffers)
                    .map(|k| BufferChange {
                        name_a: format!("fusion.{k}.{i}"),
                        name_b: format!("fusion.{k}"),
                        difference_bytes: -(k as i64),
                        ..BufferChange::default()
                    })
                    .collect(),
                ..ModuleComparison::default()
            });
        }
        c
    }

    #[test]
    fn a_large_comparison_fits_the_budget_and_keeps_the_largest_changes() {
        let c = big_comparison(300, 50);
        let (fragment, reductions) = encode_comparison_fragment(&c).unwrap();
        assert!(fragment.len() <= MAX_BUDGET, "{}", fragment.len());
        assert!(!reductions.is_empty());
        let back = decode_comparison(&format!("http://127.0.0.1:8080/#{fragment}")).unwrap();
        assert_eq!(back.reductions, reductions);
        assert_eq!(back.modules[0].name, c.modules[0].name);
        assert_eq!(back.modules[0].changes, c.modules[0].changes);
        assert_eq!(
            (back.a.label.as_str(), back.b.label.as_str()),
            ("f32", "bf16")
        );
        // The side's largest module peaks survive the reductions.
        assert!(
            !back.a.module_peaks.is_empty() && back.a.module_peaks.len() <= 10,
            "{}",
            back.a.module_peaks.len()
        );
        assert_eq!(back.a.module_peaks[0], c.a.module_peaks[0]);
    }

    #[test]
    fn a_comparison_link_is_the_fragment_under_the_pages_address() {
        let c = big_comparison(2, 3);
        let link = encode_comparison_link(&c, "https://example.org/oomscope/#r=1.old").unwrap();
        assert_eq!(
            link.url,
            format!("https://example.org/oomscope/#{}", link.fragment)
        );
        assert!(link.fragment.starts_with("c=1."), "{}", link.fragment);
        assert_eq!(decode_comparison(&link.url).unwrap(), c);
    }

    #[test]
    fn a_small_comparison_travels_whole() {
        let c = big_comparison(2, 3);
        let (fragment, reductions) = encode_comparison_fragment(&c).unwrap();
        assert!(reductions.is_empty());
        assert_eq!(decode_comparison(&fragment).unwrap(), c);
    }

    #[test]
    fn damaged_or_foreign_links_are_refused_clearly() {
        let (fragment, _) = encode_comparison_fragment(&big_comparison(2, 3)).unwrap();
        let truncated = &fragment[..fragment.len() - 10];
        assert!(matches!(
            decode_comparison(truncated),
            Err(LinkError::Corrupt(_))
        ));
        assert_eq!(
            decode_comparison("http://x/#r=1.abc"),
            Err(LinkError::NotALink),
            "a report link is not a comparison"
        );
        assert!(matches!(
            decode_comparison("c=9.abc"),
            Err(LinkError::NewerVersion(9))
        ));
        // Valid zlib and base64 around something that is not a comparison.
        let not_json = pack_payload(FRAGMENT_KEY, b"[1,2,3]");
        let err = decode_comparison(&not_json).unwrap_err();
        assert!(
            matches!(&err, LinkError::Corrupt(m) if m.starts_with("not a comparison")),
            "{err}"
        );
    }
}
