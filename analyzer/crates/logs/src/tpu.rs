//! TPU messages: the compiler's out-of-memory report in all its generations
//! (classic "Used X of Y hbm" with "Total hbm usage", "Program hbm
//! requirement" and "Largest program allocations"; the E1000 summary "HLO
//! temporaries (X) exceeds available HBM (Y)"; the "Memory usage report"
//! table; "Allocation (size=N) would exceed memory (size=M)"; early abort
//! "Requires X, has Y available"), SparseCore usage, and runtime reserve and
//! allocate failures.

use crate::event::{Expected, Field, Raw, Size, REPORT_PART, SPACE_ONLY};
use crate::lines::{payload, Cursor};
use crate::site::{
    cap_bytes, cap_size, find_size, is_continuation, lazy_regex, Glue, Outcome, Site,
    MAX_CONTINUATIONS,
};
use oomscope_report::{EarlyAbort, MemorySpace, OomKind, TopAllocation, TpuRuntimeFailure};

lazy_regex!(
    re_used,
    r"Ran out of memory in memory space (\w+)\.?\s*Used SIZE of SIZE"
);
lazy_regex!(re_exceeded, r"Exceeded \w+ capacity by SIZE");
lazy_regex!(
    re_space_only,
    r"Ran out of memory in memory space (\w+)\.\s*(?:It should not be possible to run out of \w+ - please file a bug against XLA|Please file a bug against XLA)"
);
lazy_regex!(
    re_summary,
    r"Ran out of memory on (\w+), the total memory required for HLO temporaries \(SIZE\) exceeds available \w+ \(SIZE\)"
);
lazy_regex!(re_requires, r"Requires SIZE, has SIZE available");
lazy_regex!(re_space, r"memory space (\w+)");
lazy_regex!(
    re_would_exceed,
    r"Allocation \(size=(\d+)\) would exceed memory \(size=(\d+)\)"
);
lazy_regex!(re_alloc_name, r"::\s*(#allocation\d+)");
lazy_regex!(re_alloc_shape, r"shape\s*=\s*'([^']*)'");
lazy_regex!(re_alloc_space, r"space\s*=\s*(\w+)");
lazy_regex!(re_alloc_tag, r"tag\s*=\s*'([^']*)'");
lazy_regex!(
    re_sparsecore,
    r"TensorCore Hbm usage:?\s*SIZE,\s*SparseCore Hbm usage:?\s*SIZE,\s*exceeding available bytes:?\s*SIZE"
);
lazy_regex!(
    re_reserve,
    r"Attempting to reserve SIZE at the bottom of memory\.(?:\s*That was not possible\.)?(?:\s*There are SIZE free)?(?:,\s*SIZE reserved)?(?:,\s*and SIZE reservable)?"
);
lazy_regex!(
    re_allocate,
    r"Attempting to allocate SIZE\.(?:\s*That was not possible\.)?(?:\s*There are SIZE free)?"
);
lazy_regex!(re_there_are, r"not possible\.[ \t]*\S");
lazy_regex!(re_capacity, r"^(\w+) capacity SIZE:?$");
lazy_regex!(
    re_breakdown,
    r"^(Top-of-Memory reserved|Currently allocated|Program requirement|Available after request):\s*(-?)SIZE(?:\s*\(\s*-?([\d,]+) bytes\))?"
);
lazy_regex!(
    re_runtime_item,
    r"^(reserved\([^)]*\)|heap allocations \([^)]*\)|Max free chunk|arguments|output)\s+SIZE"
);
lazy_regex!(
    re_runtime_items,
    r"(?:^|\s)(reserved\([^)]*\)|heap allocations \([^)]*\)|Max free chunk|arguments|output)\s+SIZE"
);
lazy_regex!(
    re_largest_region,
    r"[Ll]argest (?:contiguous|free)[a-z ]*?(?:region|block|chunk)?[:=]?\s*(?:of\s*)?SIZE"
);
lazy_regex!(re_device_space, r"\(\d+x\d+x\d+_([A-Za-z]+)\d*\)");
lazy_regex!(re_total_usage, r"^Total (\w+) usage >= SIZE");
lazy_regex!(
    re_section_item,
    r"^(reserved|program|arguments|global|scoped|overlays)\s+(?:SIZE|unknown size)"
);
lazy_regex!(
    re_output,
    r"^Output size SIZE(?:; shares SIZE with arguments)?"
);
lazy_regex!(re_program_req, r"^Program (\w+) requirement SIZE");
lazy_regex!(re_hlo_temp, r"^HLO temp\s+SIZE");
lazy_regex!(re_unpadded_padded, r"Unpadded \(SIZE\) Padded \(SIZE\)");
lazy_regex!(re_fragmentation, r"fragmentation \(SIZE\)");
lazy_regex!(
    re_listing,
    r"^Largest program (allocations|arguments and outputs) in (\w+):"
);
lazy_regex!(re_entry, r"^(\d+)\.\s+Size:\s*SIZE");
lazy_regex!(re_report_space, r"^Memory Space: (\w+)");
lazy_regex!(re_report_total, r"^Total bytes: (\d+)");
lazy_regex!(
    re_report_row,
    r"^SIZE\(\s*\d+%\);\s*SIZE;\s*(\d+);\s*(\d+);\s*(.*)$"
);

/// The tag of an allocation for one instruction's scoped memory (E1001).
pub const SCOPED_TAG: &str = "scoped memory for ";

/// Markers of PyTorch/XLA around a TPU message.
fn is_torch_xla(head: &str) -> bool {
    [
        "Bad StatusOr access",
        "torch_xla",
        "XrtComputationClient",
        "xla_util.cc",
    ]
    .iter()
    .any(|m| head.contains(m))
}

/// The kind of a compile failure; PyTorch/XLA's markers may sit on the line
/// a wrap cut before the message (see [`Site::context`]).
fn compile_kind(space: &MemorySpace, head: &str, site: &Site) -> OomKind {
    if is_torch_xla(head) || is_torch_xla(&site.context()) {
        OomKind::TorchXla
    } else if *space == MemorySpace::Hbm {
        OomKind::TpuCompileHbm
    } else {
        OomKind::TpuCompileOtherSpace
    }
}

/// Names the compiler's "memory space" the way the report does.
fn space_name(s: &str) -> MemorySpace {
    match s.to_ascii_lowercase().as_str() {
        "default" => MemorySpace::Hbm,
        other => MemorySpace::parse(other),
    }
}

/// `Ran out of memory in memory space S. Used X of Y S. Exceeded S capacity by Z.`
/// (then the report), the E1000 summary, or an early abort.
pub fn ran_out(site: &Site) -> Outcome {
    let head = site.head();
    if let Some((text, report_start)) = site.headline(|t| re_used().is_match(t)) {
        let Some(c) = re_used().captures(&text) else {
            return Outcome::NoMatch;
        };
        let space = space_name(&c[1]);
        let mut raw = Raw::new(
            compile_kind(&space, &text, site),
            space.clone(),
            "tpu_used_of",
            head,
        );
        raw.set(Field::Used, cap_size(&c, 2));
        raw.set(Field::Limit, cap_size(&c, 3));
        raw.set(Field::Exceeded, find_size(re_exceeded(), &text));
        raw.expect(&[Expected::Field(Field::Used), Expected::Field(Field::Limit)]);
        if text.contains("Exceeded") || text.ends_with('.') {
            raw.expect(&[Expected::Field(Field::Exceeded)]);
        }
        let start = if text.contains("Memory usage report") {
            Section::Table(true)
        } else {
            Section::None
        };
        let end = read_report(site, report_start, &mut raw, start, Context::Compile);
        return Outcome::Event(Box::new(raw), end);
    }
    // Before sizes were printed (TF ≤ 2.2), an out-of-VMEM compile said
    // only where it ran out: an event with its memory space and no number.
    if let Some((text, report_start)) = site.headline(|t| re_space_only().is_match(t)) {
        let Some(c) = re_space_only().captures(&text) else {
            return Outcome::NoMatch;
        };
        let space = space_name(&c[1]);
        let mut raw = Raw::new(
            compile_kind(&space, &text, site),
            space.clone(),
            SPACE_ONLY,
            &text,
        );
        let end = read_report(
            site,
            report_start,
            &mut raw,
            Section::None,
            Context::Compile,
        );
        raw.top.clear();
        return Outcome::Event(Box::new(raw), end);
    }
    if let Some(c) = re_summary().captures(head) {
        let space = space_name(&c[1]);
        let mut raw = Raw::new(
            compile_kind(&space, head, site),
            space.clone(),
            "tpu_hlo_temporaries",
            head,
        );
        raw.set(Field::Used, cap_size(&c, 2));
        raw.set(Field::Limit, cap_size(&c, 3));
        return Outcome::Event(Box::new(raw), site.next_line());
    }
    // TensorFlow ≤ 1.0's BFC allocator: `Ran out of memory trying to allocate X.`
    if head.contains("Ran out of memory trying to allocate") {
        return crate::gpu::bfc(site);
    }
    requires(site)
}

/// Early abort: `Requires 3.47E, has 14.49G available`.
pub fn requires(site: &Site) -> Outcome {
    let Some((text, end)) = site.headline(|t| re_requires().is_match(t)) else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_requires().captures(head) else {
        return Outcome::NoMatch;
    };
    let space = re_space()
        .captures(head)
        .map_or(MemorySpace::Hbm, |s| space_name(&s[1]));
    let mut raw = Raw::new(
        compile_kind(&space, head, site),
        space.clone(),
        "tpu_requires",
        head,
    );
    // Read from the whole headline: the message kept may be cut before the flag.
    raw.early_abort = Some(
        if head[c.get(0).map_or(0, |m| m.end())..].contains("oom_fast_exit") {
            EarlyAbort::NamesListingFlag
        } else {
            EarlyAbort::Unnamed
        },
    );
    raw.set(Field::Used, cap_size(&c, 1));
    raw.set(Field::Limit, cap_size(&c, 2));
    raw.expect(&[Expected::Field(Field::Used), Expected::Field(Field::Limit)]);
    Outcome::Event(Box::new(raw), end)
}

/// `Allocation (size=N) would exceed memory (size=M) :: #allocationK [shape = '...', space=hbm, ...] :: hlo`.
pub fn would_exceed(site: &Site) -> Outcome {
    // The allocation's `[shape = '...', space=S, ...]` is always printed: a
    // wrap can put it on the next lines.
    let complete = |t: &str| {
        re_would_exceed()
            .find(t)
            .is_some_and(|m| re_alloc_space().is_match(&t[m.end()..]))
    };
    let found = site
        .headline(complete)
        .or_else(|| site.headline(|t| re_would_exceed().is_match(t)));
    let Some((text, end)) = found else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(c) = re_would_exceed().captures(head) else {
        return Outcome::NoMatch;
    };
    let rest = &head[c.get(0).map_or(0, |m| m.end())..];
    let space = re_alloc_space()
        .captures(rest)
        .map_or(MemorySpace::Hbm, |s| space_name(&s[1]));
    let tag = re_alloc_tag().captures(rest).map(|t| t[1].to_string());
    // Before E1001 printed `while allocating on stack`, the same failure
    // was an allocation tagged `scoped memory for <instruction>`.
    let kind = if tag
        .as_deref()
        .is_some_and(|t| t.starts_with(SCOPED_TAG))
    {
        OomKind::TpuScopedVmem
    } else {
        compile_kind(&space, head, site)
    };
    let mut raw = Raw::new(kind, space.clone(), "tpu_would_exceed", head);
    if kind == OomKind::TpuScopedVmem {
        // The tag names the instruction alone: a custom call by its name
        // (`custom-call.3`), else it does not say.
        let named = tag.as_deref().and_then(|t| t.strip_prefix(SCOPED_TAG));
        raw.scoped_instruction = crate::scoped::instruction_class(
            false,
            named.filter(|n| n.contains("custom-call")).map(|_| "custom-call"),
            None,
        );
    }
    let size = cap_bytes(&c, 1);
    raw.set(Field::Requested, size);
    raw.set(Field::Limit, cap_bytes(&c, 2));
    raw.expect(&[
        Expected::Field(Field::Requested),
        Expected::Field(Field::Limit),
    ]);
    let hlo = rest
        .rsplit(" :: ")
        .next()
        .map(str::trim)
        .filter(|h| !h.is_empty() && !h.starts_with('<') && !h.starts_with('#'));
    let name = re_alloc_name().captures(rest).map(|n| n[1].to_string());
    raw.top.push(TopAllocation {
        rank: 1,
        size_bytes: size.map_or(0, |s| s.bytes),
        shape: re_alloc_shape()
            .captures(rest)
            .map(|s| s[1].to_string())
            .unwrap_or_default(),
        xla_label: match (name, hlo) {
            (Some(n), Some(h)) => Some(format!("{n} {h}")),
            (Some(n), None) => Some(n),
            (None, h) => h.map(str::to_string),
        },
        allocation_type: tag,
        ..Default::default()
    });
    Outcome::Event(Box::new(raw), end)
}

/// `TPU TensorCore Hbm usage: X, SparseCore Hbm usage Y, exceeding available bytes: Z`.
pub fn sparsecore(site: &Site) -> Outcome {
    let Some((text, end)) = site.headline(|t| re_sparsecore().is_match(t)) else {
        return Outcome::NoMatch;
    };
    let Some(c) = re_sparsecore().captures(&text) else {
        return Outcome::NoMatch;
    };
    let mut raw = Raw::new(
        OomKind::TpuSparsecore,
        MemorySpace::Hbm,
        "tpu_sparsecore",
        site.head(),
    );
    raw.set(Field::TensorCore, cap_size(&c, 1));
    raw.set(Field::SparseCore, cap_size(&c, 2));
    raw.set(Field::Limit, cap_size(&c, 3));
    raw.expect(&[
        Expected::Field(Field::TensorCore),
        Expected::Field(Field::SparseCore),
        Expected::Field(Field::Limit),
    ]);
    Outcome::Event(Box::new(raw), end)
}

/// Runtime: `Attempting to reserve X at the bottom of memory. That was not
/// possible. There are Y free, Z reserved, and W reservable.` (the clause
/// after "not possible." is absent when a program fails to load: `Error
/// loading program '<name>': Attempting to reserve X at the bottom of memory.
/// That was not possible.`), and `Error allocating device buffer: Attempting
/// to allocate X. That was not possible. There are Y free.`. PyTorch/XLA
/// follows it with the runtime's memory breakdown (`HBM capacity`,
/// `Top-of-Memory reserved`, `Currently allocated`, `Program requirement`,
/// `Available after request`, then `Total hbm usage >=` with heap
/// allocations, `Max free chunk`, persistent arguments and output, and the
/// program's requirement), read as a report.
pub fn runtime(site: &Site) -> Outcome {
    let hard = runtime_from(site, &site.joined(3, Glue::HardWrap));
    let soft = runtime_from(site, &site.joined(3, Glue::Space));
    let mut raw = match (hard, soft) {
        (Some(h), Some(s)) if s.count() > h.count() => s,
        (Some(h), _) => h,
        (None, Some(s)) => s,
        (None, None) => return Outcome::NoMatch,
    };
    let end = read_report(
        site,
        site.next_line(),
        &mut raw,
        Section::None,
        Context::Runtime,
    );
    Outcome::Event(Box::new(raw), end)
}

fn runtime_from(site: &Site, text: &str) -> Option<Raw> {
    let head = site.head();
    let kind = if is_torch_xla(text) {
        OomKind::TorchXla
    } else {
        OomKind::TpuRuntime
    };
    let space = re_device_space()
        .captures(text)
        .map_or(MemorySpace::Hbm, |s| space_name(&s[1]));
    // The free/reserved clause follows "not possible." on its line; a line
    // ending there is the short form, unless the input itself ends there
    // (cut).
    let probe = if head.contains("not possible.") {
        head
    } else {
        text
    };
    let cut = site.line_end == site.text.len() && !site.text.ends_with('\n');
    let clause = re_there_are().is_match(probe) || cut;
    let mut raw;
    if let Some(c) = re_reserve().captures(text) {
        raw = Raw::new(kind, space.clone(), "tpu_reserve", head);
        raw.tpu_runtime_failure = Some(TpuRuntimeFailure::ProgramLoad);
        raw.set(Field::Requested, cap_size(&c, 1));
        raw.set(Field::Free, cap_size(&c, 2));
        raw.set(Field::Reserved, cap_size(&c, 3));
        raw.set_extra("reservable_bytes", cap_size(&c, 4));
        raw.expect(&[Expected::Field(Field::Requested)]);
        if clause {
            raw.expect(&[
                Expected::Field(Field::Free),
                Expected::Field(Field::Reserved),
                Expected::Extra("reservable_bytes"),
            ]);
        }
    } else if let Some(c) = re_allocate().captures(text) {
        raw = Raw::new(kind, space.clone(), "tpu_allocate", head);
        // (A program whose load fails allocating is still a load.)
        raw.tpu_runtime_failure = Some(if text.contains("Error loading program") {
            TpuRuntimeFailure::ProgramLoad
        } else {
            TpuRuntimeFailure::BufferAllocation
        });
        raw.set(Field::Requested, cap_size(&c, 1));
        raw.set(Field::Free, cap_size(&c, 2));
        raw.expect(&[Expected::Field(Field::Requested)]);
        if clause {
            raw.expect(&[Expected::Field(Field::Free)]);
        }
    } else {
        return None;
    }
    raw.set_extra(
        "largest_contiguous_bytes",
        find_size(re_largest_region(), text),
    );
    Some(raw)
}

/// A compiler report with no headline: posted logs and PyTorch/XLA's memory
/// dumps often start at `Total hbm usage >= X:`. The compiler also prints
/// this block at INFO level after every compile that fits; there (a glog `I`
/// header on the line) it is skipped whole.
pub fn usage_report(site: &Site) -> Outcome {
    let head = site.head();
    let Some(c) = re_total_usage().captures(head) else {
        return Outcome::NoMatch;
    };
    let space = space_name(&c[1]);
    let mut raw = Raw::new(
        compile_kind(&space, head, site),
        space.clone(),
        "tpu_usage_report",
        head,
    );
    raw.set_extra("total_usage_bytes", cap_size(&c, 2));
    let end = read_report(
        site,
        site.next_line(),
        &mut raw,
        Section::Total(true),
        Context::Compile,
    );
    if is_info_line(&site.text[site.line_start..site.line_end]) {
        return Outcome::Ignore(end);
    }
    Outcome::Event(Box::new(raw), end)
}

/// A compiler report pasted from its middle: from the `reserved`/`program`/
/// `arguments` lines of its `Total hbm usage` block (the header above them
/// cut off: they are the HBM block, the one printed first and the one
/// users paste), found from the `Output size X; shares Y with arguments.`
/// line that closes them, or from `Program <space> requirement X:`. Every number
/// still there is read as the whole report's would be. The same INFO
/// exception as [`usage_report`].
pub fn report_from_middle(site: &Site) -> Outcome {
    let head = site.head();
    let (space, start, from) = if let Some(c) = re_program_req().captures(head) {
        (space_name(&c[1]), Section::Program(true), site.line_start)
    } else if re_output().is_match(head) {
        (
            MemorySpace::Hbm,
            Section::Total(true),
            block_items_start(site),
        )
    } else {
        return Outcome::NoMatch;
    };
    let mut raw = Raw::new(
        compile_kind(&space, head, site),
        space.clone(),
        REPORT_PART,
        head,
    );
    let end = read_report(site, from, &mut raw, start, Context::Compile);
    if in_info_message(site) || raw.count() == 0 {
        return Outcome::Ignore(end);
    }
    Outcome::Event(Box::new(raw), end)
}

/// Lines of a `Total hbm usage` block above its `Output size` line.
const MAX_BLOCK_ITEMS: usize = 4;

/// Where the `reserved`/`program`/`arguments` lines above the `Output
/// size` line of the anchor start (blank lines between included); the
/// anchor's line when none is there. A `... unknown size` item belongs to
/// another memory space's block: the HBM one is printed first.
fn block_items_start(site: &Site) -> usize {
    let mut start = site.line_start;
    let mut at = site.line_start;
    let mut seen = 0usize;
    while at > 0 && seen < MAX_BLOCK_ITEMS + 2 {
        let end = at - 1;
        let line_start = memchr::memrchr(b'\n', &site.text.as_bytes()[..end]).map_or(0, |i| i + 1);
        let p = payload(&site.text[line_start..end]);
        seen += 1;
        if p.is_empty() {
            at = line_start;
            continue;
        }
        if !re_section_item().is_match(p) || p.contains("unknown size") {
            break;
        }
        start = line_start;
        at = line_start;
    }
    start
}

/// Lines looked back for the logger header of a multi-line message.
const MAX_MESSAGE_LINES: usize = 64;

/// Whether the anchor's line belongs to a message logged at INFO level:
/// its own glog header, or (libtpu 0.0.52 frames only the first line of
/// the compiler's report) the nearest header above it, the lines between
/// unframed. A header a terminal cut still shows its severity and date.
fn in_info_message(site: &Site) -> bool {
    let mut at = site.line_start;
    let mut line = &site.text[site.line_start..site.line_end];
    for _ in 0..MAX_MESSAGE_LINES {
        if let Some(severity) = glog_header_severity(line) {
            return severity == b'I';
        }
        if at == 0 {
            return false;
        }
        let end = at - 1;
        at = memchr::memrchr(b'\n', &site.text.as_bytes()[..end]).map_or(0, |i| i + 1);
        line = &site.text[at..end];
    }
    false
}

/// The severity letter of a glog header (`I0813 17:21:06.501258 ...`),
/// complete or cut after its time.
fn glog_header_severity(line: &str) -> Option<u8> {
    if let Some(s) = crate::lines::glog_severity(line) {
        return Some(s);
    }
    let b = line.trim_start().as_bytes();
    let header = b.len() >= 14
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && b[8] == b':'
        && b[11] == b':';
    header.then(|| b[0])
}

/// A glog line of severity INFO (`I1121 12:52:43.843812 6049 file.cc:1] `).
fn is_info_line(line: &str) -> bool {
    crate::lines::glog_severity(line) == Some(b'I')
}

/// Which message a report follows: the compiler's, or the runtime's (whose
/// `reserved(...)` line is the top-of-memory reservation).
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Compile,
    Runtime,
}

/// Which part of the compiler's report the lines belong to.
#[derive(PartialEq)]
enum Section {
    None,
    /// `Total <space> usage >=` block; false for another memory space.
    Total(bool),
    /// `Program <space> requirement` block; false for another memory space.
    Program(bool),
    /// A listing; `true` for "arguments and outputs".
    Listing {
        arguments: bool,
    },
    /// `Memory usage report` rows; false for another memory space.
    Table(bool),
    /// Another memory space's listing, skipped.
    Skip,
    /// The runtime's "Persistent allocations include some or all of:" list.
    Persistent,
}

/// Continuation lines one XLA label may span.
const MAX_LABEL_LINES: usize = 16;
/// Blank lines tolerated inside a report.
const MAX_BLANKS: usize = 4;

/// Reads the report from offset `from`; returns the offset after its last line.
fn read_report(site: &Site, from: usize, raw: &mut Raw, start: Section, context: Context) -> usize {
    let mut cur = Cursor::new(site.text, from);
    let mut end = cur.pos();
    let mut section = start;
    let mut entry: Option<TopAllocation> = None;
    let mut label_lines = 0usize;
    let mut in_label = false;
    let mut blanks = 0usize;
    // The headline's last line may itself have been cut.
    let mut prev_cut = crate::site::may_be_cut(crate::lines::line_before(site.text, from));
    let mut continuations = 0usize;
    while let Some(line) = cur.next_line() {
        // A bare byte count on a last line with no newline may be cut short.
        let last_cut = cur.pos() == site.text.len() && !site.text.ends_with('\n');
        let p = payload(line);
        if p.is_empty() {
            blanks += 1;
            in_label = false;
            if blanks > MAX_BLANKS {
                break;
            }
            continue;
        }
        blanks = 0;
        // Another message (the next rank's copy, a restatement) ends the report.
        if crate::keywords::starts_new_message(p) {
            break;
        }
        let cut_before = prev_cut;
        prev_cut = crate::site::may_be_cut(line);
        if !(read_runtime_line(p, raw, &mut section, context)
            || read_report_line(
                p,
                raw,
                &mut section,
                &mut entry,
                &mut in_label,
                &mut label_lines,
                &last_cut,
            ))
        {
            // The rest of a long line a terminal cut (a label, an operator).
            if cut_before && continuations < MAX_CONTINUATIONS && is_continuation(line) {
                continuations += 1;
                end = cur.pos();
                continue;
            }
            break;
        }
        continuations = 0;
        end = cur.pos();
    }
    finish_entry(raw, &section, &mut entry);
    end
}

/// The runtime's memory breakdown (PyTorch/XLA runtime OOM); false when the
/// line is none of its lines.
fn read_runtime_line(p: &str, raw: &mut Raw, section: &mut Section, context: Context) -> bool {
    if context != Context::Runtime {
        return false;
    }
    if let Some(c) = re_capacity().captures(p) {
        raw.set(Field::TotalCapacity, cap_size(&c, 2));
        return true;
    }
    if let Some(c) = re_breakdown().captures(p) {
        let exact = c
            .get(4)
            .and_then(|m| m.as_str().replace(',', "").parse::<u64>().ok())
            .map(Size::exact);
        let v = exact.or_else(|| cap_size(&c, 3));
        let negative = !c[2].is_empty();
        match (&c[1], negative) {
            ("Top-of-Memory reserved", _) => raw.set_extra("top_of_memory_reserved_bytes", v),
            ("Currently allocated", _) => raw.set(Field::Allocated, v),
            ("Program requirement", _) => raw.set(Field::Requested, v),
            // What the request lacks: the report's `exceeded`.
            ("Available after request", true) => raw.set(Field::Exceeded, v),
            _ => raw.set_extra("available_after_request_bytes", v),
        }
        return true;
    }
    if p.ends_with("include some or all of:") {
        *section = Section::Persistent;
        return true;
    }
    if p.starts_with("------") || p.starts_with("; attempting") || p == "Heap allocator status:" {
        return true;
    }
    if let Some(c) = re_runtime_item().captures(p) {
        if !matches!(section, Section::Total(true) | Section::Persistent)
            && !c[1].starts_with("Max free")
        {
            return false;
        }
        // Items name themselves, so a line a wrap joined to the next (one
        // exactly as wide as the terminal) still gives both.
        for c in re_runtime_items().captures_iter(p).take(8) {
            let v = cap_size(&c, 2);
            let name = &c[1];
            if name.starts_with("reserved(") {
                raw.set_extra("top_of_memory_reserved_bytes", v);
            } else if name.starts_with("heap allocations") {
                raw.set(Field::Allocated, v);
            } else if name.starts_with("Max free chunk") {
                raw.set_extra("largest_free_chunk_bytes", v);
            } else if name == "arguments" {
                raw.set(Field::Arguments, v);
            } else {
                raw.set(Field::Output, v);
            }
        }
        return true;
    }
    false
}

/// Handles one non-blank report line; false when the line is not part of it.
fn read_report_line(
    p: &str,
    raw: &mut Raw,
    section: &mut Section,
    entry: &mut Option<TopAllocation>,
    in_label: &mut bool,
    label_lines: &mut usize,
    last_cut: &bool,
) -> bool {
    let space = raw.space.clone();
    if let Some(c) = re_exceeded().captures(p) {
        raw.set(Field::Exceeded, cap_size(&c, 1));
        return true;
    }
    if let Some(c) = re_entry().captures(p) {
        finish_entry(raw, section, entry);
        *in_label = false;
        *entry = Some(TopAllocation {
            rank: c[1].parse().unwrap_or(0),
            size_bytes: cap_size(&c, 2).map_or(0, |s| s.bytes),
            ..Default::default()
        });
        return true;
    }
    if p.starts_with("=====") {
        finish_entry(raw, section, entry);
        *in_label = false;
        return true;
    }
    if let Some(e) = entry.as_mut() {
        if crate::listing::read_entry_field(p, e) {
            *in_label = p.starts_with("XLA label:") || p.starts_with("XLA Label:");
            *label_lines = 0;
            return true;
        }
    }
    if let Some(c) = re_listing().captures(p) {
        finish_entry(raw, section, entry);
        *section = if space_name(&c[2]) == space {
            Section::Listing {
                arguments: &c[1] == "arguments and outputs",
            }
        } else {
            Section::Skip
        };
        return true;
    }
    if let Some(c) = re_total_usage().captures(p) {
        let here = space_name(&c[1]) == space;
        if here {
            raw.set_extra("total_usage_bytes", cap_size(&c, 2));
        }
        *section = Section::Total(here);
        return true;
    }
    if let Some(c) = re_program_req().captures(p) {
        let here = space_name(&c[1]) == space;
        if here {
            raw.set(Field::Program, cap_size(&c, 2));
        }
        *section = Section::Program(here);
        return true;
    }
    if let Some(c) = re_output().captures(p) {
        if *section == Section::Total(true) {
            raw.set(Field::Output, cap_size(&c, 1));
            raw.set_extra("output_shared_with_arguments_bytes", cap_size(&c, 2));
        }
        return true;
    }
    if p.starts_with("Output size unknown") || p.starts_with("Tag:") {
        return true;
    }
    if let Some(c) = re_section_item().captures(p) {
        let v = cap_size(&c, 2);
        match (&*section, &c[1]) {
            (Section::Total(true), "reserved") => raw.set(Field::Reserved, v),
            (Section::Total(true), "program") => raw.set(Field::Program, v),
            (Section::Total(true), "arguments") => raw.set(Field::Arguments, v),
            (Section::Program(true), "reserved") => raw.set_extra("program_reserved_bytes", v),
            (Section::Program(true), name) => raw.set_extra(&format!("{name}_bytes"), v),
            (Section::Total(_) | Section::Program(_), _) => {}
            _ => return false,
        }
        return true;
    }
    if let Some(c) = re_hlo_temp().captures(p) {
        if *section == Section::Program(true) {
            raw.set(Field::HloTemp, cap_size(&c, 1));
            if let Some(u) = re_unpadded_padded().captures(p) {
                raw.set(Field::HloTempUnpadded, cap_size(&u, 1));
                raw.set(Field::HloTempPadded, cap_size(&u, 2));
            }
            raw.set(Field::Fragmentation, find_size(re_fragmentation(), p));
        }
        return matches!(section, Section::Program(_));
    }
    if p.ends_with("Memory usage report:") {
        *section = Section::Table(true);
        return true;
    }
    if let Some(c) = re_report_space().captures(p) {
        *section = Section::Table(space_name(&c[1]) == space);
        return true;
    }
    if let Some(c) = re_report_total().captures(p) {
        if *section == Section::Table(true) && !*last_cut {
            raw.set_extra("memory_report_total_bytes", cap_bytes(&c, 1));
        }
        return true;
    }
    if matches!(section, Section::Table(_)) {
        if p.starts_with("cumulative_size;")
            || p.starts_with("-----")
            || (p.starts_with("The rest ") && p.ends_with("not shown."))
        {
            return true;
        }
        if let Some(c) = re_report_row().captures(p) {
            if *section == Section::Table(true) && raw.top.len() < MAX_TABLE_ROWS {
                let rank = raw.top.len() as u32 + 1;
                raw.top.push(TopAllocation {
                    rank,
                    size_bytes: cap_size(&c, 2).map_or(0, |s| s.bytes),
                    shape: c[5].trim().to_string(),
                    allocation_type: Some(format!(
                        "memory usage report slot at offset {} used by {} values",
                        &c[3], &c[4]
                    )),
                    ..Default::default()
                });
            }
            return true;
        }
    }
    // An XLA label that spans several lines (embedded newlines).
    if let Some(label) = entry.as_mut().and_then(|e| e.xla_label.as_mut()) {
        if *in_label && *label_lines < MAX_LABEL_LINES {
            *label_lines += 1;
            label.push('\n');
            label.push_str(p);
            return true;
        }
    }
    false
}

/// Rows of a "Memory usage report" kept as top allocations.
const MAX_TABLE_ROWS: usize = 1000;
/// Entries of one listing kept.
const MAX_LISTING: usize = 1000;

fn finish_entry(raw: &mut Raw, section: &Section, entry: &mut Option<TopAllocation>) {
    let Some(e) = entry.take() else { return };
    let list = match section {
        Section::Listing { arguments: true } => &mut raw.top_arguments,
        Section::Listing { arguments: false } => &mut raw.top,
        _ => return,
    };
    if list.len() < MAX_LISTING {
        list.push(e);
    }
}
