//! Prints what the what-if engine sees of an HloProto (HBM): parameters with
//! their roles and use positions, outputs, the peak and the largest buffers
//! live there. `cargo run -p oomscope-whatif --example inspect -- FILE.hlo.pb`
use oomscope_report::program::HeapEventKind;

fn main() {
    let path = std::env::args().nth(1).expect("an .hlo.pb");
    let bytes = std::fs::read(&path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
    let programs = oomscope_xla::heap_programs(&path, &hlo, None).expect("a buffer assignment");
    let p = programs
        .iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM");
    let facts = oomscope_whatif::Facts::of(p);
    let curve = oomscope_whatif::baseline(p).unwrap();
    println!(
        "events {} peak {} MiB at {} indefinite {} MiB batch {:?}",
        p.events.len(),
        curve.peak_bytes >> 20,
        curve.peak_position,
        curve.indefinite_bytes >> 20,
        facts.batch
    );
    for f in &facts.params {
        let e = &p.parameters[f.index];
        println!(
            "param {} {:?} {} {:?} uses {:?}..{:?} out {:?} donated {}",
            e.number,
            e.shape_index,
            e.shape,
            f.role,
            e.first_use,
            e.last_use,
            f.output.map(|o| (
                o,
                p.allocations[o].defined_at,
                p.allocations[o].size_bytes >> 20
            )),
            f.donated
        );
    }
    for (i, a) in p.allocations.iter().enumerate() {
        if a.maybe_live_out || a.indefinite {
            let rep = a
                .representative
                .map(|r| (p.buffers[r].name.clone(), p.buffers[r].shape.clone()));
            println!(
                "alloc {i} #{} {} MiB {:?} live_out {} out {:?} def {:?} {:?}",
                a.index,
                a.size_bytes >> 20,
                a.category,
                a.maybe_live_out,
                a.output_index,
                a.defined_at,
                rep
            );
        }
    }
    // Live at the peak.
    let mut live: Vec<usize> = Vec::new();
    let mut start = std::collections::HashMap::new();
    for (i, e) in p.events.iter().enumerate() {
        if i as u64 > curve.peak_position {
            break;
        }
        let Some(b) = e.buffer else { continue };
        match e.kind {
            HeapEventKind::Alloc => {
                live.push(b);
                start.insert(b, i);
            }
            HeapEventKind::Free => live.retain(|&x| x != b),
            _ => {}
        }
    }
    let mut ends = std::collections::HashMap::new();
    for (i, e) in p.events.iter().enumerate() {
        if let (HeapEventKind::Free, Some(b)) = (e.kind, e.buffer) {
            ends.insert(b, i);
        }
    }
    live.sort_by_key(|&b| std::cmp::Reverse(p.buffers[b].size_bytes));
    for &b in live.iter().take(40) {
        let x = &p.buffers[b];
        println!(
            "live {} MiB {} {} {} [{:?}..{:?}]",
            x.size_bytes >> 20,
            x.name,
            x.shape,
            x.opcode,
            start.get(&b),
            ends.get(&b)
        );
    }
    println!(
        "at peak: {}",
        p.instructions
            .get(curve.peak_position as usize)
            .cloned()
            .unwrap_or_default()
    );
}
