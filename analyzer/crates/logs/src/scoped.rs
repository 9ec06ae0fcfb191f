//! OpenXLA error E1001 (`CompileTimeScopedVmemOom`): one instruction's
//! scoped memory, its stack while it runs (a kernel's double-buffered
//! windows, scratch and spills), exceeds the scoped limit. libtpu prints
//!
//! ```text
//! [E1001: ]CompileTimeScopedVmemOom:
//! Ran out of memory in memory space vmem while allocating on stack for
//! %name = shape opcode(operands), custom_call_target="…", metadata={op_name="…" …}.
//! Scoped allocation with size 36.25M and limit 32.00M exceeded scoped vmem
//! limit by 4.25M. It should not be possible to run out of scoped vmem - …
//! ```
//!
//! where the instruction may be cut (`for %splash_mha_fwd...`), the numbers
//! may sit on the instruction's line or on the lines after it, and older
//! copies print the first line alone. The numbers line is also quoted on
//! its own (`Scoped allocation with size 34.08M and limit 32.00M exceeded
//! scoped vmem limit by 2.08M.`), and one harness prints
//! `Scoped allocation of 70.1M exceeded scoped vmem limit by 6.1M`. The
//! instruction is kept as the event's one listed allocation (its label, its
//! output shape, its op name and source), so that the advice can tell a
//! custom kernel from a compiler-generated fusion.

use crate::event::{Expected, Field, Raw, SCOPED_STACK};
use crate::site::{
    cap_size, glue_piece, lazy_regex, Continues, Glue, Outcome, Site, MAX_CONTINUATIONS,
};
use oomscope_report::{MemorySpace, OomKind, ScopedInstruction, TopAllocation};

lazy_regex!(
    re_on_stack,
    r"Ran out of memory in memory space (\w+) while allocating on stack for\s*(.*)"
);
lazy_regex!(
    re_scoped,
    r"Scoped allocation (?:with size |of )SIZE(?: and limit SIZE)? exceeded scoped (\w+) limit(?: by SIZE)?"
);
lazy_regex!(
    re_instruction,
    r"^(%?[A-Za-z_][\w.\-]*)(?:\s*=\s*(\([^)]*\)|\S+)(?:\s+([A-Za-z][\w\-]*)\()?)?"
);
lazy_regex!(re_custom_target, r#"custom_call_target=\\?"([^"\\]*)"#);
lazy_regex!(re_op_name, r#"op_name=\\?"([^"\\]*)"#);
lazy_regex!(
    re_source,
    r#"source_file=\\?"([^"\\]*)\\?"\s*source_line=(\d+)"#
);

/// `Ran out of memory in memory space S while allocating on stack for …`,
/// with the numbers on the same line or the lines after it.
pub fn on_stack(site: &Site) -> Option<Outcome> {
    let (text, end, cut) = joined(site)?;
    let c = re_on_stack().captures(&text)?;
    let space = MemorySpace::parse(&c[1].to_ascii_lowercase());
    let rest = c.get(2).map_or("", |m| m.as_str());
    let instruction = rest
        .find("Scoped allocation")
        .map_or(rest, |i| &rest[..i])
        .trim();
    let mut raw = Raw::new(OomKind::TpuScopedVmem, space, SCOPED_STACK, site.head());
    let numbers = re_scoped().captures(&text);
    if let Some(n) = &numbers {
        set_numbers(&mut raw, n);
    }
    if cut || text.contains("Scoped allocation") {
        raw.expect(&[
            Expected::Field(Field::Requested),
            Expected::Field(Field::Limit),
        ]);
    }
    if let Some((top, class)) =
        instruction_of(instruction, raw.get(Field::Requested).map(|s| s.bytes))
    {
        raw.top.push(top);
        raw.scoped_instruction = class;
    }
    Some(Outcome::Event(Box::new(raw), end))
}

/// The numbers line quoted without the line naming the instruction.
pub fn numbers_only(site: &Site) -> Outcome {
    let with_excess = |t: &str| re_scoped().captures(t).is_some_and(|c| c.get(4).is_some());
    let Some((text, end)) = site
        .headline(with_excess)
        .or_else(|| site.headline(|t| re_scoped().is_match(t)))
    else {
        return Outcome::NoMatch;
    };
    let head = text.as_str();
    let Some(n) = re_scoped().captures(head) else {
        return Outcome::NoMatch;
    };
    let space = MemorySpace::parse(&n[3].to_ascii_lowercase());
    let mut raw = Raw::new(OomKind::TpuScopedVmem, space, "tpu_scoped_numbers", head);
    set_numbers(&mut raw, &n);
    raw.expect(&[Expected::Field(Field::Requested)]);
    Outcome::Event(Box::new(raw), end)
}

fn set_numbers(raw: &mut Raw, n: &regex::Captures) {
    raw.set(Field::Requested, cap_size(n, 1));
    raw.set(Field::Limit, cap_size(n, 2));
    raw.set(Field::Exceeded, cap_size(n, 4));
}

/// The message's first line (joined where a wrap cut it) and the lines
/// after it, up to the one that completes the numbers (`… limit by X`), as
/// a terminal cut them (joined as they are) or as a paste wrapped them at
/// words (joined with a space): whichever reads more numbers. The lines are
/// those the shared join takes, continuing into the numbers line (which
/// holds a keyword of its own) and ending at a blank line. Also whether
/// the input ends inside the message (cut: the numbers it would print are
/// missing). `None` when this is not the form.
fn joined(site: &Site) -> Option<(String, usize, bool)> {
    let (first, after) = site.headline(|t| re_on_stack().is_match(t))?;
    let complete = |t: &str| {
        re_scoped()
            .captures(t)
            .is_some_and(|c| c.get(4).is_some() || c.get(2).is_none())
    };
    let score = |t: &str| {
        re_scoped()
            .captures(t)
            .map_or(0, |c| c.iter().flatten().count())
    };
    let ends_inside = |at: usize| at >= site.text.len() && !site.text.ends_with('\n');
    let mut best = (first.clone(), after);
    let mut cut = ends_inside(after);
    if !complete(&first) {
        let mut prev = line_before(site.text, after);
        let rule = Continues {
            into: &["Scoped allocation"],
            blank_ends: true,
            wrapped_keywords: false,
        };
        let pieces = site.continuation(after, prev, MAX_CONTINUATIONS, Glue::HardWrap, &rule);
        let (mut hard, mut soft) = (first.clone(), first);
        for piece in pieces {
            glue_piece(&mut hard, prev, &piece, true);
            glue_piece(&mut soft, prev, &piece, false);
            prev = piece.line;
            let pick = if score(&hard) > score(&soft) {
                &hard
            } else {
                &soft
            };
            cut = ends_inside(piece.after);
            if score(pick) > score(&best.0) || (cut && score(pick) == score(&best.0)) {
                best = (pick.clone(), piece.after);
            }
            if complete(pick) {
                break;
            }
        }
    }
    let cut = cut && !complete(&best.0);
    Some((best.0, best.1, cut))
}

/// The line that ends just before offset `at` (a line start), without its
/// line break.
fn line_before(text: &str, at: usize) -> &str {
    let before = &text[..at];
    let before = before.strip_suffix('\n').unwrap_or(before);
    let before = before.strip_suffix('\r').unwrap_or(before);
    &before[before.rfind('\n').map_or(0, |i| i + 1)..]
}

/// The instruction the message names, as a listed allocation of the
/// scoped size (`%name = shape opcode(…)`, a bare kernel name, or a name
/// cut with `...`), and what it is, where the message shows it.
fn instruction_of(
    text: &str,
    size: Option<u64>,
) -> Option<(TopAllocation, Option<ScopedInstruction>)> {
    let size = size?;
    let text = text.trim_end_matches(['.', ' ']);
    let c = re_instruction().captures(text)?;
    let name = c[1].trim_end_matches('.').to_string();
    let target = re_custom_target()
        .captures(text)
        .map(|t| t[1].to_string())
        .filter(|t| !t.is_empty());
    let opcode = c.get(3).map(|m| m.as_str().to_string());
    let op_name = re_op_name().captures(text).map(|t| t[1].to_string());
    let class = instruction_class(target.is_some(), opcode.as_deref(), op_name.as_deref());
    let top = TopAllocation {
        rank: 1,
        size_bytes: size,
        shape: c.get(2).map_or(String::new(), |m| m.as_str().to_string()),
        op_name,
        source: re_source()
            .captures(text)
            .map(|s| format!("{}:{}", &s[1], &s[2])),
        xla_label: Some(name),
        allocation_type: Some(match (target, opcode) {
            (Some(t), _) => format!("scoped stack of custom-call {t}"),
            (_, Some(op)) => format!("scoped stack of {op}"),
            _ => "scoped stack".to_string(),
        }),
        ..TopAllocation::default()
    };
    Some((top, class))
}

/// What an instruction is, from what the message shows of it: a custom
/// call (with its target, or by its opcode) or an op JAX named
/// `pallas_call` is a kernel someone wrote; another opcode is the
/// compiler's own; a name alone does not say.
pub(crate) fn instruction_class(
    custom_call_target: bool,
    opcode: Option<&str>,
    op_name: Option<&str>,
) -> Option<ScopedInstruction> {
    if custom_call_target
        || opcode.is_some_and(|o| o.contains("custom-call"))
        || op_name.is_some_and(|o| o.contains("pallas_call"))
    {
        Some(ScopedInstruction::CustomKernel)
    } else if opcode.is_some() {
        Some(ScopedInstruction::Compiler)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_forms() {
        let class = |text: &str| instruction_of(text, Some(7)).unwrap().1;
        let top = |text: &str| instruction_of(text, Some(7)).unwrap().0;
        let full = top(
            r#"%_fwd.1 = bf16[16384,6144]{1,0:T(8,128)(2,1)} custom-call(%args_0_.1, %bitcast.1), custom_call_target="tpu_custom_call", metadata={op_name="jit(call)/pallas_call" stack_frame_id=23}."#,
        );
        assert_eq!(full.xla_label.as_deref(), Some("%_fwd.1"));
        assert_eq!(full.shape, "bf16[16384,6144]{1,0:T(8,128)(2,1)}");
        assert_eq!(full.op_name.as_deref(), Some("jit(call)/pallas_call"));
        assert_eq!(
            full.allocation_type.as_deref(),
            Some("scoped stack of custom-call tpu_custom_call")
        );
        let cut = top("%splash_mha_fwd...");
        assert_eq!(cut.xla_label.as_deref(), Some("%splash_mha_fwd"));
        assert_eq!(class("%splash_mha_fwd..."), None);
        let bare = top("ragged_paged_attention");
        assert_eq!(bare.xla_label.as_deref(), Some("ragged_paged_attention"));
        assert_eq!(bare.allocation_type.as_deref(), Some("scoped stack"));
        assert_eq!(class("ragged_paged_attention"), None);
        let fusion = "%fusion.3 = f32[8,128]{1,0} fusion(%p0), kind=kLoop";
        assert_eq!(
            top(fusion).allocation_type.as_deref(),
            Some("scoped stack of fusion")
        );
        assert_eq!(class(fusion), Some(ScopedInstruction::Compiler));
        assert!(instruction_of("%x", None).is_none());
    }

    #[test]
    fn kinds_of_instruction() {
        let kernel = Some(ScopedInstruction::CustomKernel);
        assert_eq!(
            class_of(r#"%k = f32[8]{0} custom-call(%a), custom_call_target="tpu_custom_call""#),
            kernel
        );
        // A custom call whose target the message cut off.
        assert_eq!(class_of("%k = f32[8]{0} custom-call(%a)"), kernel);
        // A fusion JAX named after a Pallas call is a kernel too.
        assert_eq!(
            class_of(r#"%f = f32[8]{0} fusion(%a), metadata={op_name="jit(f)/pallas_call"}"#),
            kernel
        );
        assert_eq!(
            class_of("%f = f32[8]{0} fusion(%a)"),
            Some(ScopedInstruction::Compiler)
        );
        assert_eq!(class_of("%f"), None);
    }

    /// The shared join continues into the numbers line (it holds the
    /// keyword `Scoped allocation`), and a blank line ends the message.
    #[test]
    fn the_numbers_line_continues_the_message_up_to_a_blank_line() {
        let head = "Ran out of memory in memory space vmem while allocating on stack for %k.1 = f32[8]{0} fusion(%a).";
        let numbers =
            "Scoped allocation with size 36.25M and limit 32.00M exceeded scoped vmem limit by 4.25M.";
        let join = |text: &str| {
            let line_end = text.find('\n').unwrap();
            let site = Site {
                text,
                line_start: 0,
                line_end,
                anchor: 0,
            };
            joined(&site).unwrap()
        };
        let (text, end, cut) = join(&format!("{head}\n{numbers}\nnext\n"));
        assert!(text.ends_with(numbers), "{text}");
        assert_eq!(end, head.len() + numbers.len() + 2);
        assert!(!cut);
        let (text, end, _) = join(&format!("{head}\n\n{numbers}\n"));
        assert_eq!((text.as_str(), end), (head, head.len() + 1));
    }

    fn class_of(text: &str) -> Option<ScopedInstruction> {
        instruction_of(text, Some(1)).unwrap().1
    }
}
