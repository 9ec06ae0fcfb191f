//! OpenXLA error E1001: one instruction's scoped VMEM (its stack while it
//! runs) exceeds the scoped limit. The page for this error
//! (openxla.org/xla/errors/error_1001) sends a custom kernel to retuning
//! (block sizes, then its `vmem_limit_bytes`, then the global
//! `--xla_tpu_scoped_vmem_limit_kib`) and anything else to a bug report:
//! the compiler should never run out of scoped VMEM on its own
//! instructions. The program's HBM and the E1000 sections do not apply.

use oomscope_report::{Headline, ScopedInstruction, Severity, TreeKind};

use crate::facts::{gib, pct_fact, pct_text, CompileFacts};
use crate::ids::*;
use crate::node::NodeEval;
use crate::tree::tree_definition;
use crate::Evaluation;

/// `need` rounded up to a whole MiB: the message rounds to 0.01 of its
/// unit, so a limit of exactly the printed size may still be short.
fn limit_for(need: u64) -> u64 {
    need.div_ceil(1 << 20).saturating_mul(1 << 20)
}

pub(super) fn evaluate(f: &CompileFacts<'_>) -> Evaluation {
    let space = f.space.as_str().to_ascii_uppercase();
    let need = f.event.requested_bytes;
    let limit = f.event.limit_bytes;
    let top = f.event.top_allocations.first();
    // What the instruction is, as the log reader tells it (`None`: only
    // its name shows).
    let kind = f.event.scoped_instruction;
    // An older message tags the allocation `scoped memory for <name>`.
    let name = top
        .and_then(|t| {
            t.allocation_type
                .as_deref()
                .and_then(|a| a.strip_prefix("scoped memory for "))
                .map(str::to_string)
                .or_else(|| t.xla_label.clone())
        })
        .unwrap_or_else(|| "one instruction".to_string());
    let origin = top
        .and_then(|t| t.op_name.as_deref())
        .map(|o| format!(" ({o})"))
        .unwrap_or_default();

    let numbers = match (need, limit) {
        (Some(n), Some(l)) => format!(
            "{space} ran out at compile time in one instruction: {name}{origin} needs {} of scoped {space} with a {} limit (+{}, {})",
            gib(n),
            gib(l),
            gib(n.saturating_sub(l)),
            pct_text(n, l)
        ),
        (Some(n), None) => format!(
            "{space} ran out at compile time in one instruction: {name}{origin} needs {} of scoped {space}",
            gib(n)
        ),
        _ => format!(
            "{space} ran out at compile time in one instruction: {name}{origin} does not fit in scoped {space}"
        ),
    };

    let mut node = NodeEval::new(
        SCOPED_VMEM,
        match kind {
            Some(ScopedInstruction::CustomKernel) => format!("{numbers}; it is a custom kernel, so its configuration decides."),
            Some(ScopedInstruction::Compiler) => format!("{numbers}; it is an instruction the compiler generated, not a custom kernel."),
            None => format!("{numbers}; the message does not say whether it is a custom kernel."),
        },
    );
    node.selected = true;
    if let Some(n) = need {
        node.fact("scoped_bytes", n);
    }
    if let Some(l) = limit {
        node.fact("scoped_limit_bytes", l);
    }
    if let (Some(n), Some(l)) = (need, limit) {
        node.fact("scoped_pct_of_limit", pct_fact(n, l));
    }
    node.fact("instruction", name.clone());
    let raise = need.map(|n| {
        let to = limit_for(n);
        (
            format!(
                "It needs at least {}: vmem_limit_bytes={to} ({}).",
                gib(n),
                gib(to)
            ),
            format!(
                "For every kernel at once: --xla_tpu_scoped_vmem_limit_kib={}.",
                to / 1024
            ),
        )
    });
    let kernel_steps = kind != Some(ScopedInstruction::Compiler);
    if kernel_steps {
        node.action("kernel_blocks", "", None);
        node.action(
            "kernel_vmem_limit",
            raise.as_ref().map_or("", |r| r.0.as_str()),
            None,
        );
        node.action(
            "global_vmem_limit",
            raise.as_ref().map_or("", |r| r.1.as_str()),
            None,
        );
    }
    if kind != Some(ScopedInstruction::CustomKernel) {
        node.action(
            "report_bug",
            if kind.is_none() {
                "(Only if it is not a custom kernel.)"
            } else {
                ""
            },
            None,
        );
    }

    let step = match kind {
        Some(ScopedInstruction::Compiler) => format!(
            "report it to XLA with the HLO dump: {name} is the compiler's own instruction, and the compiler should not run out of scoped {space} on it"
        ),
        _ => match need {
            Some(n) => format!(
                "make {name}'s block sizes smaller, or raise its scoped limit to at least {} (vmem_limit_bytes={})",
                gib(n),
                limit_for(n)
            ),
            None => format!("make {name}'s block sizes smaller, or raise its vmem_limit_bytes"),
        },
    };

    let reason = "Not reached: one instruction's scoped VMEM ran out (E1001), not the program's memory.";
    let nodes = tree_definition()
        .iter()
        .filter(|d| d.tree == TreeKind::CompileHbmOom)
        .map(|d| {
            if d.id == SCOPED_VMEM {
                node.clone().build()
            } else {
                NodeEval::new(d.id, reason).build()
            }
        })
        .collect();
    let summary = format!("{numbers}; one instruction's scoped memory");
    Evaluation {
        tree: TreeKind::CompileHbmOom,
        path: vec![SCOPED_VMEM.to_string()],
        nodes,
        summary,
        headline: Headline {
            node: SCOPED_VMEM.to_string(),
            text: format!("{numbers}. Next step: {step}"),
            estimate_bytes: None,
            severity: Severity::Failure,
            confidence: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_rounded_up_to_a_whole_mib() {
        assert_eq!(limit_for(36 * (1 << 20) + (1 << 18)), 37 * (1 << 20));
        assert_eq!(limit_for(32 * (1 << 20)), 32 * (1 << 20));
    }
}
