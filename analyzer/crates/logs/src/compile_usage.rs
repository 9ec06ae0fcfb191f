//! What the TPU compiler logs at INFO level for every program it compiled
//! that fits, in every libtpu generation (0.0.8, 0.0.23, 0.0.52: the logs of
//! `fixtures/*-fits/compile.log` and `corpus/logs/66_*`):
//!
//! ```text
//! I... XLA::TPU module name: jit_train_step
//! I... XLA::TPU program HBM usage: 325.04M / 15.75G
//! I... XLA::TPU program VMEM usage: 117.52M / 128.00M
//! I... Total hbm usage >= 699.48M:
//!     reserved        258.00M
//!     program         325.04M
//!     arguments       116.44M
//!
//! Output size 91.91M; shares 0B with arguments.
//! ```
//!
//! (libtpu 0.0.8 and 0.0.23 put the glog header on every line of the block,
//! 0.0.52 only on its first; SMEM's line ends `(N parameters)`.) Each usage
//! line is one [`CompileUsage`] of its memory space, the HBM one completed
//! by the block that follows it. The same block printed as part of an
//! out-of-memory report is the OOM reader's, not read here.

use crate::event::parse_size;
use crate::lines::{glog_severity, payload, Cursor, LineCounter};
use crate::site::lazy_regex;
use aho_corasick::AhoCorasick;
use oomscope_report::{CompileUsage, MemorySpace};
use std::sync::OnceLock;

lazy_regex!(re_module, r"^XLA::TPU module name: (\S+)");
lazy_regex!(re_usage, r"^XLA::TPU program (\w+) usage: SIZE / SIZE");
lazy_regex!(re_total, r"^Total hbm usage >= SIZE:?$");
lazy_regex!(
    re_item,
    r"^(reserved|program|arguments)\s+(?:SIZE|unknown size)\s*$"
);
lazy_regex!(
    re_output,
    r"^Output size SIZE(?:; shares SIZE with arguments)?"
);

const MARKERS: [&str; 3] = [
    "XLA::TPU module name:",
    "XLA::TPU program ",
    "Total hbm usage >=",
];

fn markers() -> &'static AhoCorasick {
    static CELL: OnceLock<AhoCorasick> = OnceLock::new();
    CELL.get_or_init(|| AhoCorasick::new(MARKERS).expect("constant markers"))
}

/// Usages kept per text (a log of many compiles).
const MAX_USAGES: usize = 10_000;
/// Lines a `Total hbm usage` block may span (items, blank lines, output).
const MAX_BLOCK_LINES: usize = 8;

/// Every program usage the compiler logged in `text`, in order.
pub fn parse_compile_usage(input_name: &str, text: &str) -> Vec<CompileUsage> {
    // Colour codes undone as for the OOM scan (lines unchanged, so the
    // line numbers are the input's).
    let text = &*crate::normalize::clean(text);
    let mut out: Vec<CompileUsage> = Vec::new();
    let mut module = String::new();
    let mut counter = LineCounter::new(text);
    let mut consumed = 0usize;
    for m in markers().find_iter(text) {
        if m.start() < consumed || out.len() >= MAX_USAGES {
            continue;
        }
        let (line_no, line_start) = counter.locate(m.start());
        let end = crate::lines::line_end(text, m.start());
        let line = &text[line_start..end];
        consumed = end;
        let p = payload(line);
        if let Some(c) = re_module().captures(p) {
            module = c[1].to_string();
        } else if let Some(c) = re_usage().captures(p) {
            let (Some(program), Some(limit)) = (parse_size(&c[2], false), parse_size(&c[3], false))
            else {
                continue;
            };
            out.push(CompileUsage {
                input: input_name.to_string(),
                line: line_no,
                module: module.clone(),
                memory_space: space(&c[1]),
                program_bytes: program.bytes,
                limit_bytes: Some(limit.bytes),
                ..Default::default()
            });
        } else if let Some(c) = re_total().captures(p) {
            // Printed inside an OOM report (no INFO header) it is the
            // report's.
            if glog_severity(line) != Some(b'I') {
                continue;
            }
            let total = parse_size(&c[1], false).map(|s| s.bytes);
            // The module's HBM usage line (its VMEM and SMEM lines may
            // come between).
            let last_hbm = out
                .iter_mut()
                .rev()
                .take_while(|u| u.module == module)
                .find(|u| u.memory_space == MemorySpace::Hbm && u.total_usage_bytes.is_none());
            let usage = match last_hbm {
                Some(u) => u,
                None => {
                    out.push(CompileUsage {
                        input: input_name.to_string(),
                        line: line_no,
                        module: module.clone(),
                        memory_space: MemorySpace::Hbm,
                        ..Default::default()
                    });
                    let Some(u) = out.last_mut() else { continue };
                    u
                }
            };
            usage.total_usage_bytes = total;
            consumed = read_block(text, end, usage);
        }
    }
    out
}

/// Reads the `reserved`/`program`/`arguments` and `Output size` lines after
/// a `Total hbm usage` header ending at `from`; returns where they end.
fn read_block(text: &str, from: usize, usage: &mut CompileUsage) -> usize {
    let mut cur = Cursor::new(text, from);
    let mut end = from;
    for _ in 0..MAX_BLOCK_LINES {
        let Some(line) = cur.next_line() else { break };
        let p = payload(line);
        if p.is_empty() {
            continue;
        }
        if let Some(c) = re_item().captures(p) {
            let v = c
                .get(2)
                .and_then(|m| parse_size(m.as_str(), false))
                .map(|s| s.bytes);
            match &c[1] {
                "reserved" => usage.reserved_bytes = v,
                "program" => {
                    if usage.program_bytes == 0 {
                        usage.program_bytes = v.unwrap_or(0);
                    }
                }
                _ => usage.arguments_bytes = v,
            }
        } else if let Some(c) = re_output().captures(p) {
            usage.output_bytes = parse_size(&c[1], false).map(|s| s.bytes);
            end = cur.pos();
            break;
        } else {
            break;
        }
        end = cur.pos();
    }
    end
}

/// The memory space as the usage line names it (`HBM`, `VMEM`, `SMEM`,
/// `Cmem`).
fn space(word: &str) -> MemorySpace {
    MemorySpace::parse(&word.to_ascii_lowercase())
}
