//! Prints the logical buffers live at the HBM peak of one or more HloProtos
//! (the two sides of a what-if pair, to compare a prediction buffer by
//! buffer with the compiler's plan): each with its shape, size, defining
//! opcode and the replay positions where it is allocated and freed.
//! `cargo run -p oomscope-whatif --example peak -- COSTLY.hlo.pb [FIXED.hlo.pb]`
//! (the first file also gets the remat prediction).
use oomscope_report::program::{HeapEventKind, HeapProgram};

fn program(path: &str) -> HeapProgram {
    let bytes = std::fs::read(path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(path, &bytes).expect("an HloProto");
    let programs = oomscope_xla::heap_programs(path, &hlo, None).expect("a buffer assignment");
    programs
        .into_iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM")
}

fn show(p: &HeapProgram, position: u64) {
    let mut alloc = vec![None; p.buffers.len()];
    let mut free = vec![None; p.buffers.len()];
    let mut live = vec![false; p.buffers.len()];
    for (i, e) in p.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        match e.kind {
            HeapEventKind::Free => free[b] = Some(i),
            _ => {
                alloc[b].get_or_insert(i);
            }
        }
        if i as u64 <= position {
            live[b] = !matches!(e.kind, HeapEventKind::Free);
        }
    }
    let mut rows: Vec<usize> = (0..p.buffers.len()).filter(|&b| live[b]).collect();
    rows.sort_by_key(|&b| std::cmp::Reverse(p.buffers[b].size_bytes));
    let mut total = 0;
    for b in rows {
        let x = &p.buffers[b];
        total += x.size_bytes;
        let at = |i: Option<usize>| {
            i.map_or("-".to_string(), |i| {
                format!("{i}:{}", p.instructions.get(i).map_or("", String::as_str))
            })
        };
        let readers: Vec<String> = x
            .readers
            .iter()
            .map(|r| format!("{}{}", r.position, if r.contraction_only { "c" } else { "" }))
            .collect();
        println!(
            "  {:>9.1} MiB {:<40} {:<45} {:<14} alloc {} free {} readers [{}]",
            x.size_bytes as f64 / 1048576.0,
            x.name,
            x.shape,
            x.opcode,
            at(alloc[b]),
            at(free[b]),
            readers.join(" ")
        );
    }
    println!("  traced live total {:.1} MiB", total as f64 / 1048576.0);
}

fn main() {
    for (n, path) in std::env::args().skip(1).enumerate() {
        let p = program(&path);
        let curve = oomscope_whatif::baseline(&p).unwrap();
        println!(
            "== {path}\n peak {:.1} MiB at {} ({}) of {} events; indefinite {:.1} MiB",
            curve.peak_bytes as f64 / 1048576.0,
            curve.peak_position,
            p.instructions
                .get(curve.peak_position as usize)
                .map_or("", String::as_str),
            p.events.len(),
            curve.indefinite_bytes as f64 / 1048576.0
        );
        show(&p, curve.peak_position);
        if n == 0 {
            match oomscope_whatif::predict(&p, &[oomscope_whatif::Change::Remat]) {
                Ok(pr) => {
                    println!(
                        " remat: {:.1} MiB at {} ({}): {:?} {:?}",
                        pr.curve.peak_bytes as f64 / 1048576.0,
                        pr.curve.peak_position,
                        p.instructions
                            .get(pr.curve.peak_position as usize)
                            .map_or("", String::as_str),
                        pr.scope,
                        pr.how
                    );
                }
                Err(e) => println!(" remat: {e:?}"),
            }
            // The replayed curve around its peak, against today's.
            if let Ok(pr) = oomscope_whatif::predict(&p, &[oomscope_whatif::Change::Remat]) {
                for (i, (a, b)) in curve.heap_bytes.iter().zip(&pr.curve.heap_bytes).enumerate() {
                    println!(
                        "   {i:>4} {:<36} today {:>9.1} remat {:>9.1} MiB",
                        p.instructions.get(i).map_or("", String::as_str),
                        *a as f64 / 1048576.0,
                        *b as f64 / 1048576.0
                    );
                }
            }
        }
    }
}
