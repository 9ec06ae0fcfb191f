//! The same out-of-memory error before and after, number by number.
//!
//! Events pair by kind and memory space, in the order they occur; each
//! number either message gives is listed with its change.

use crate::module_diff::signed_difference;
use oomscope_report::compare::{NumberChange, OomEventComparison};
use oomscope_report::OomEvent;
use std::collections::BTreeSet;

/// The named numbers of an event, in the order the report declares them.
fn numbers(e: &OomEvent) -> Vec<(&'static str, Option<u64>)> {
    vec![
        ("used_bytes", e.used_bytes),
        ("limit_bytes", e.limit_bytes),
        ("exceeded_bytes", e.exceeded_bytes),
        ("requested_bytes", e.requested_bytes),
        ("free_bytes", e.free_bytes),
        ("reserved_bytes", e.reserved_bytes),
        ("reserved_unallocated_bytes", e.reserved_unallocated_bytes),
        ("private_pools_bytes", e.private_pools_bytes),
        ("total_capacity_bytes", e.total_capacity_bytes),
        ("allocated_bytes", e.allocated_bytes),
        ("arguments_bytes", e.arguments_bytes),
        ("output_bytes", e.output_bytes),
        ("program_bytes", e.program_bytes),
        ("hlo_temp_bytes", e.hlo_temp_bytes),
        ("hlo_temp_unpadded_bytes", e.hlo_temp_unpadded_bytes),
        ("hlo_temp_padded_bytes", e.hlo_temp_padded_bytes),
        ("fragmentation_bytes", e.fragmentation_bytes),
        ("tensorcore_bytes", e.tensorcore_bytes),
        ("sparsecore_bytes", e.sparsecore_bytes),
    ]
}

/// Pair the events of A and B and compare each pair's numbers.
pub fn compare_events(a: &[OomEvent], b: &[OomEvent]) -> Vec<OomEventComparison> {
    let mut used_b = vec![false; b.len()];
    let mut out = Vec::new();
    for ea in a {
        let Some(j) = (0..b.len())
            .find(|&j| !used_b[j] && b[j].kind == ea.kind && b[j].memory_space == ea.memory_space)
        else {
            continue;
        };
        used_b[j] = true;
        out.push(compare_event(ea, &b[j]));
    }
    out
}

fn compare_event(a: &OomEvent, b: &OomEvent) -> OomEventComparison {
    let mut numbers_out: Vec<NumberChange> = numbers(a)
        .into_iter()
        .zip(numbers(b))
        .filter(|((_, x), (_, y))| x.is_some() || y.is_some())
        .map(|((field, x), (_, y))| number_change(field, x, y))
        .collect();
    let extra_keys: BTreeSet<&String> = a.extra.keys().chain(b.extra.keys()).collect();
    for key in extra_keys {
        numbers_out.push(number_change(
            key,
            a.extra.get(key).copied(),
            b.extra.get(key).copied(),
        ));
    }
    OomEventComparison {
        kind: a.kind,
        memory_space: a.memory_space.clone(),
        message_a: a.message.clone(),
        message_b: b.message.clone(),
        numbers: numbers_out,
    }
}

fn number_change(field: &str, a: Option<u64>, b: Option<u64>) -> NumberChange {
    let difference = match (a, b) {
        (Some(x), Some(y)) => Some(signed_difference(x, y)),
        _ => None,
    };
    NumberChange {
        field: field.to_string(),
        a,
        b,
        difference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::{MemorySpace, OomKind};

    #[test]
    fn same_error_number_by_number() {
        let a = OomEvent {
            kind: OomKind::TpuCompileHbm,
            memory_space: MemorySpace::Hbm,
            used_bytes: Some(100),
            limit_bytes: Some(80),
            ..OomEvent::default()
        };
        let b = OomEvent {
            kind: OomKind::TpuCompileHbm,
            memory_space: MemorySpace::Hbm,
            used_bytes: Some(90),
            limit_bytes: Some(80),
            exceeded_bytes: Some(10),
            ..OomEvent::default()
        };
        let other = OomEvent {
            kind: OomKind::TorchCuda,
            memory_space: MemorySpace::Gpu,
            ..OomEvent::default()
        };
        let c = compare_events(&[other.clone(), a], &[b, other]);
        assert_eq!(c.len(), 2);
        let hbm = c.iter().find(|e| e.kind == OomKind::TpuCompileHbm).unwrap();
        let used = hbm
            .numbers
            .iter()
            .find(|n| n.field == "used_bytes")
            .unwrap();
        assert_eq!(
            (used.a, used.b, used.difference),
            (Some(100), Some(90), Some(-10))
        );
        let exceeded = hbm
            .numbers
            .iter()
            .find(|n| n.field == "exceeded_bytes")
            .unwrap();
        assert_eq!((exceeded.a, exceeded.difference), (None, None));
        assert!(
            !hbm.numbers.iter().any(|n| n.field == "free_bytes"),
            "numbers neither side gives are left out"
        );
    }
}
