//! Permalinks: a report shared as a link that carries the report itself.
//!
//! `Report` → [`oomscope_proto::oomscope::report::SharedReport`] (prost) →
//! zlib (deflate with an Adler-32 checksum, so a damaged link is refused
//! rather than shown with altered numbers) → base64url → URL fragment `#r=<version>.<payload>`. The
//! fragment is never sent to any server. Links are untrusted input: decoding
//! bounds decompression, validates every field and rejects unknown versions.
//!
//! Size budget: a typical OOM report fits in [`TYPICAL_BUDGET`] bytes of URL,
//! any report in [`MAX_BUDGET`]. When a report does not fit, detail is reduced
//! in a fixed order ([`REDUCTION_STEPS`]) and each step applied is recorded in
//! `SharedInfo::reductions`, which the shared view shows.

mod bounds;
mod comparison;
mod convert;
mod ranks;
mod runtime;
mod typed_words;
mod what_if_view;

pub use comparison::{
    decode_comparison, encode_comparison_fragment, encode_comparison_link,
    COMPARISON_REDUCTION_STEPS,
};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oomscope_proto::oomscope::report::SharedReport;
use oomscope_proto::prost::Message;
use oomscope_report::{Report, ViewState};
use std::io::{Read, Write};

/// Version of the link format; a link with a newer one is refused.
pub const LINK_VERSION: u32 = 1;
/// Target size of the fragment for a typical OOM report.
pub const TYPICAL_BUDGET: usize = 4 * 1024;
/// No link is larger than this many bytes of fragment.
pub const MAX_BUDGET: usize = 32 * 1024;
/// Decompressed payloads larger than this are refused (no decompression bomb).
pub const MAX_DECODED_BYTES: usize = 1 << 20;

/// The fragment key: `#r=...`.
const FRAGMENT_KEY: &str = "r=";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// No `r=` payload in the fragment.
    NotALink,
    /// The link was made by a newer oomscope.
    NewerVersion(u32),
    /// The payload is damaged (truncated, altered, not base64, bad deflate).
    Corrupt(String),
    /// The payload decoded but a field is out of bounds.
    Invalid(String),
    /// Even with every reduction the report exceeds [`MAX_BUDGET`].
    TooLarge(usize),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::NotALink => write!(f, "this link carries no oomscope report or comparison (no #r=… or #c=… part)"),
            LinkError::NewerVersion(v) => write!(
                f,
                "this link was made by a newer oomscope (link format {v}; this page reads up to {LINK_VERSION}); open it with a newer version of the page"
            ),
            LinkError::Corrupt(why) => write!(f, "this link is damaged or incomplete ({why}); ask for the whole link again"),
            LinkError::Invalid(why) => write!(f, "this link holds an invalid report ({why})"),
            LinkError::TooLarge(n) => write!(f, "the report needs {n} bytes of link even at the lowest detail (limit {MAX_BUDGET})"),
        }
    }
}

impl std::error::Error for LinkError {}

/// A link ready to share.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// `base_url` + `#r=...`.
    pub url: String,
    /// The fragment alone, without `#`.
    pub fragment: String,
    /// What detail was dropped to fit the budget.
    pub reductions: Vec<String>,
}

/// The reductions tried in order, from least to most detail lost. Each is
/// applied on top of the previous ones until the link fits.
pub const REDUCTION_STEPS: &[&str] = &[
    // Run-time sections (memory snapshots, device memory profiles, timelines).
    "run-time sections: the curves of the lines the analyzer replayed without left out (those drawn on the page travel)",
    "run-time sections: stacks at the peak dropped",
    "run-time sections: top lines and live allocations limited to 3",
    "run-time curves downsampled to 64 points",
    // Compile-time sections.
    "heap curves downsampled to 256 points",
    "peak buffers limited to the largest 20 per module",
    "heap curves downsampled to 64 points",
    "step series and allocator timelines downsampled to 64 points",
    "peak buffers limited to the largest 8 per module; top allocations to 10 per error",
    "decision-tree nodes off the selected path reduced to a short reason; what-if explanations shortened",
    "padding tables limited to 5 rows; long labels shortened",
    "heap curves downsampled to 16 points; peak buffers limited to 3; decision-tree nodes off the selected path dropped; cited buffers limited to 3 per node; what-if predictions limited to 3",
    "decision-tree facts dropped (the reasons keep the numbers); actions limited to 2 per node, without their details; reasons cut to 160 characters; only the headline's what-if prediction",
    "run-time curves downsampled to 16 points; top lines, live allocations and accumulations limited to 1; phases dropped",
];

/// Apply reduction `step` of [`REDUCTION_STEPS`].
fn reduce(shared: &mut SharedReport, step: usize) {
    match step {
        0 => runtime::drop_replays(shared),
        1 => runtime::reduce_stacks(shared),
        2 => runtime::reduce_lines(shared),
        3 => runtime::reduce_curves(shared, 64),
        13 => {
            runtime::reduce_curves(shared, 16);
            runtime::reduce_to_one_line(shared);
        }
        _ => convert::reduce(shared, step - 4),
    }
}

/// Recorded first in `SharedInfo::reductions` when a report's run-time
/// sections hold more than any link carries of them.
pub const RUNTIME_DETAIL: &str = "run-time sections: curves of at most 200 points, the 5 largest stacks at the peak (12 innermost frames each), 10 lines per list; timelines without per-point categories";

/// Recorded in `SharedInfo::reductions` when a report's ranks hold more
/// than a link carries of them.
pub const RANKS_DETAIL: &str =
    "ranks: the first 10 input names per rank, curves of at most 200 points";

/// Encode `report` as a link under `base_url`, reducing detail until it fits
/// [`TYPICAL_BUDGET`] when it can and [`MAX_BUDGET`] always.
pub fn encode_link_at(
    report: &Report,
    base_url: &str,
    view: &ViewState,
    created_unix_ms: u64,
) -> Result<Link, LinkError> {
    let (fragment, reductions) = encode_fragment(report, view, created_unix_ms)?;
    Ok(link_under(base_url, fragment, reductions))
}

/// `base_url` (without any fragment of its own) + `#` + `fragment`.
fn link_under(base_url: &str, fragment: String, reductions: Vec<String>) -> Link {
    let base = base_url.split('#').next().unwrap_or(base_url);
    Link {
        url: format!("{base}#{fragment}"),
        fragment,
        reductions,
    }
}

/// [`encode_link_at`] with the default view and the current time (native only:
/// in the browser, pass the time from `Date.now()`).
#[cfg(not(target_arch = "wasm32"))]
pub fn encode_link(report: &Report, base_url: &str) -> Result<Link, LinkError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    encode_link_at(
        report,
        base_url,
        &ViewState {
            view: "verdict".into(),
            ..Default::default()
        },
        now,
    )
}

/// Encode to a fragment (`r=1.…`, without `#`), with the reductions applied.
pub fn encode_fragment(
    report: &Report,
    view: &ViewState,
    created_unix_ms: u64,
) -> Result<(String, Vec<String>), LinkError> {
    let mut shared = convert::to_shared(report, view, created_unix_ms);
    let mut applied = Vec::new();
    if runtime::trimmed(report) {
        applied.push(RUNTIME_DETAIL);
    }
    if ranks::trimmed(report) {
        applied.push(RANKS_DETAIL);
    }
    // Keep reducing while over the typical budget; a fragment between the
    // typical and the maximum budget is acceptable only once nothing is left.
    let mut step = 0;
    loop {
        shared.reductions = applied.iter().map(|s: &&str| s.to_string()).collect();
        let fragment = pack(&shared);
        if fragment.len() <= TYPICAL_BUDGET
            || (step >= REDUCTION_STEPS.len() && fragment.len() <= MAX_BUDGET)
        {
            return Ok((fragment, shared.reductions));
        }
        if step >= REDUCTION_STEPS.len() {
            return Err(LinkError::TooLarge(fragment.len()));
        }
        // A step that changes nothing (say, run-time stacks of a report
        // that has none) is not recorded: the page lists only what is lost.
        let before = shared.clone();
        reduce(&mut shared, step);
        if shared != before {
            applied.push(REDUCTION_STEPS[step]);
        }
        step += 1;
    }
}

fn pack(shared: &SharedReport) -> String {
    let mut shared = shared.clone();
    convert::compact_cites(&mut shared);
    pack_payload(FRAGMENT_KEY, &shared.encode_to_vec())
}

/// `key` + version + `.` + base64url(zlib(`bytes`)).
fn pack_payload(key: &str, bytes: &[u8]) -> String {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(bytes);
    let compressed = enc.finish().unwrap_or_default();
    format!("{key}{LINK_VERSION}.{}", URL_SAFE_NO_PAD.encode(compressed))
}

/// Decode a link, a fragment (`#r=…` or `r=…`) or a whole URL into a report
/// marked as shared. Every failure is a [`LinkError`] with a clear message.
pub fn decode(link: &str) -> Result<Report, LinkError> {
    let bytes = unpack_payload(link, FRAGMENT_KEY)?;
    let shared = SharedReport::decode(&bytes[..])
        .map_err(|e| LinkError::Corrupt(format!("not a report: {e}")))?;
    if shared.version > LINK_VERSION {
        return Err(LinkError::NewerVersion(shared.version));
    }
    convert::from_shared(shared)
}

/// The bytes a link carries under `key`: version checked, size bounded,
/// base64url and zlib undone (checksum verified).
fn unpack_payload(link: &str, key: &str) -> Result<Vec<u8>, LinkError> {
    let fragment = link.rsplit_once('#').map(|(_, f)| f).unwrap_or(link);
    let payload = fragment
        .split('&')
        .find_map(|part| part.strip_prefix(key))
        .ok_or(LinkError::NotALink)?;
    let (version, data) = payload
        .split_once('.')
        .ok_or_else(|| LinkError::Corrupt("no version".into()))?;
    let version: u32 = version
        .parse()
        .map_err(|_| LinkError::Corrupt("bad version".into()))?;
    if version > LINK_VERSION {
        return Err(LinkError::NewerVersion(version));
    }
    if version == 0 {
        return Err(LinkError::Corrupt("bad version".into()));
    }
    // A legitimate link is never larger than the budget (plus slack for URL
    // encoding by chat clients); refuse obviously hostile sizes early.
    if data.len() > 4 * MAX_BUDGET {
        return Err(LinkError::Corrupt(format!(
            "{} bytes is longer than any oomscope link",
            data.len()
        )));
    }
    let compressed = URL_SAFE_NO_PAD
        .decode(data.trim_end_matches('='))
        .map_err(|e| LinkError::Corrupt(format!("not base64url: {e}")))?;
    let mut bytes = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[..])
        .take(MAX_DECODED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LinkError::Corrupt(format!("cannot decompress: {e}")))?;
    if bytes.len() > MAX_DECODED_BYTES {
        return Err(LinkError::Corrupt(format!(
            "expands to more than {MAX_DECODED_BYTES} bytes"
        )));
    }
    Ok(bytes)
}
