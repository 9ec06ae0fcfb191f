//! The ranks view (issue 26) in links: one `RuntimeSection` per rank (its
//! `RankSummary` JSON, its curve lifted into columns x = steps, y = bytes,
//! downsampled with the exact peak kept), and the findings, the OOMs of
//! several ranks and the grouping notes as their JSON, one section each.
//! Links made before fields 16–19 carry no ranks.

use crate::bounds::{check_len, truncate};
use crate::runtime::{delta, downsample, undelta, CURVE_POINTS};
use crate::LinkError;
use oomscope_proto::oomscope::report as pb;
use oomscope_report::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Input names carried per rank (its first ones, in step order).
const INPUTS: usize = 10;
/// Longest text carried (names, findings, notes).
const TEXT: usize = 300;
/// Longest OOM message carried, as for the report's OOM events.
const MESSAGE: usize = 600;
/// Largest JSON of one rank section a valid link holds.
const MAX_JSON: usize = 64 * 1024;

fn json<T: Serialize>(t: &T) -> String {
    serde_json::to_string(t).unwrap_or_default()
}

fn parse<T: DeserializeOwned>(what: &str, s: &pb::RuntimeSection) -> Result<T, LinkError> {
    if s.json.len() > MAX_JSON {
        return Err(LinkError::Invalid(format!(
            "a {what} is {} bytes long",
            s.json.len()
        )));
    }
    serde_json::from_str(&s.json)
        .map_err(|e| LinkError::Invalid(format!("a {what} is not valid: {e}")))
}

/// Whether a link leaves out some of `r`'s ranks detail before any reduction.
pub(crate) fn trimmed(r: &Report) -> bool {
    r.ranks
        .iter()
        .any(|k| k.inputs.len() > INPUTS || k.bytes_per_input.len() > CURVE_POINTS)
}

pub(crate) fn to_shared(r: &Report, s: &mut pb::SharedReport) {
    s.ranks = r.ranks.iter().map(rank_to_shared).collect();
    s.rank_findings = r
        .rank_findings
        .iter()
        .map(|f| {
            let mut f = f.clone();
            f.text = truncate(&f.text, TEXT);
            f.line = truncate(&f.line, TEXT);
            section(json(&f))
        })
        .collect();
    s.rank_ooms = r
        .rank_ooms
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o.message = truncate(&o.message, MESSAGE);
            o.input = truncate(&o.input, TEXT);
            section(json(&o))
        })
        .collect();
    s.rank_notes = r
        .rank_notes
        .iter()
        .map(|n| {
            let mut n = n.clone();
            n.text = truncate(&n.text, TEXT);
            n.inputs.truncate(INPUTS);
            n.inputs.iter_mut().for_each(|i| *i = truncate(i, TEXT));
            section(json(&n))
        })
        .collect();
}

fn section(json: String) -> pb::RuntimeSection {
    pb::RuntimeSection {
        json,
        ..Default::default()
    }
}

fn rank_to_shared(k: &RankSummary) -> pb::RuntimeSection {
    let mut k = k.clone();
    let bytes = std::mem::take(&mut k.bytes_per_input);
    let steps = std::mem::take(&mut k.steps);
    k.inputs.truncate(INPUTS);
    k.inputs.iter_mut().for_each(|i| *i = truncate(i, TEXT));
    k.device = truncate(&k.device, TEXT);
    // Without steps the curve is over the inputs' order: x is left empty.
    let mut s = pb::RuntimeSection {
        json: json(&k),
        x: if steps.len() == bytes.len() {
            delta(steps.iter().map(|&s| s as i64))
        } else {
            Vec::new()
        },
        y: bytes,
        ..Default::default()
    };
    // With x empty only y is downsampled (the curve over the inputs' order).
    downsample(&mut s, CURVE_POINTS);
    s
}

/// Fields 16–19 of a link, in order, into `r`.
pub(crate) fn from_shared(
    [ranks, findings, ooms, notes]: [Vec<pb::RuntimeSection>; 4],
    r: &mut Report,
) -> Result<(), LinkError> {
    check_len("ranks", &ranks)?;
    for sec in ranks {
        let mut k: RankSummary = parse("rank", &sec)?;
        check_len("rank inputs", &k.inputs)?;
        check_len("rank curve", &sec.y)?;
        if !sec.x.is_empty() {
            if sec.x.len() != sec.y.len() {
                return Err(LinkError::Invalid(
                    "a rank's curve has columns of different lengths".into(),
                ));
            }
            let x = undelta(&sec.x)?;
            if x.iter().any(|&v| v < 0) || x.windows(2).any(|w| w[0] > w[1]) {
                return Err(LinkError::Invalid("a rank's steps go back".into()));
            }
            k.steps = x.into_iter().map(|v| v as u64).collect();
        }
        k.bytes_per_input = sec.y;
        r.ranks.push(k);
    }
    check_len("rank findings", &findings)?;
    for sec in findings {
        r.rank_findings.push(parse("rank finding", &sec)?);
    }
    check_len("rank OOMs", &ooms)?;
    for sec in ooms {
        let o: RankOom = parse("rank OOM", &sec)?;
        check_len("rank OOM ranks", &o.ranks)?;
        r.rank_ooms.push(o);
    }
    check_len("rank notes", &notes)?;
    for sec in notes {
        r.rank_notes.push(parse("rank note", &sec)?);
    }
    Ok(())
}
