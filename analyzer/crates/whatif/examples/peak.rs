//! The one diagnostic of a what-if pair's buffers at the peak (run by hand,
//! to see where a prediction parts from the compiler): for each side, its
//! peak as replayed, the buffers live there (size, name, shape, defining
//! opcode, the replay positions where each is allocated and freed, its
//! readers, and the buffers sharing its memory), then the same peak as
//! XProf's Memory Viewer groups it (by category and shape). With a change,
//! the first side is also replayed with it: the predicted peak, what the
//! change touched, and the buffers live at the predicted peak at their
//! predicted sizes; beside a second side, predicted against real.
//!
//! ```text
//! cargo run -p oomscope-whatif --example peak -- [options] COSTLY [FIXED]
//!   COSTLY, FIXED   an .hlo.pb, or a fixture folder holding one (fixtures/pair-dtype/f32)
//!   --change C      bf16 | batch | remat | donate | donate-opt | shard (over 4,
//!                   the parameters) | offload: predict C on COSTLY
//!   --curve         with --change: the replayed curve beside today's, point by point
//!   --events        every heap event of each side (predicted sizes on COSTLY)
//!   --indefinite    each side's indefinite allocations
//!   --hlo [NAME]    list COSTLY's entry computation (or the computations named NAME), then stop
//! ```
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use oomscope_report::program::{HeapEventKind, HeapProgram};
use oomscope_whatif::Change;

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// The HloProto a side names: the file, or the one in its folder.
fn hlo_path(side: &str) -> PathBuf {
    let p = Path::new(side);
    if p.is_dir() {
        oomscope_testdata::hlo_proto_in(p)
            .unwrap_or_else(|| panic!("{side}: no .after_optimizations.hlo.pb"))
    } else {
        p.to_path_buf()
    }
}

fn program(path: &Path) -> HeapProgram {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(&name, &bytes).expect("an HloProto");
    oomscope_xla::heap_programs(&name, &hlo, None)
        .expect("a buffer assignment")
        .into_iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM")
}

/// The instruction at a replay position, in words.
fn at(p: &HeapProgram, position: usize) -> &str {
    p.instructions.get(position).map_or("", String::as_str)
}

/// The buffers whose memory is counted at `position`, its event applied
/// (where the replay takes its peak): each root of a sharing chain, with
/// the live buffers that share its memory.
fn live(program: &HeapProgram, position: u64) -> Vec<(usize, Vec<usize>)> {
    let mut refs: HashMap<usize, i64> = HashMap::new();
    let mut canon: HashMap<usize, usize> = HashMap::new();
    let root = |canon: &HashMap<usize, usize>, mut b: usize| {
        while let Some(&c) = canon.get(&b) {
            b = c;
        }
        b
    };
    let mut open = vec![false; program.buffers.len()];
    for (i, e) in program.events.iter().enumerate() {
        if i as u64 > position {
            break;
        }
        let Some(b) = e.buffer else { continue };
        open[b] = !matches!(e.kind, HeapEventKind::Free);
        match e.kind {
            HeapEventKind::Alloc => *refs.entry(root(&canon, b)).or_default() += 1,
            HeapEventKind::Free => *refs.entry(root(&canon, b)).or_default() -= 1,
            HeapEventKind::ShareWith(c) => {
                canon.insert(b, c);
                *refs.entry(root(&canon, c)).or_default() += 1;
            }
        }
    }
    let mut roots: Vec<usize> = refs
        .into_iter()
        .filter(|(_, r)| *r > 0)
        .map(|(b, _)| b)
        .collect();
    roots.sort_unstable();
    roots
        .into_iter()
        .map(|r| {
            let sharing = (0..program.buffers.len())
                .filter(|&b| b != r && open[b] && canon.contains_key(&b) && root(&canon, b) == r)
                .collect();
            (r, sharing)
        })
        .collect()
}

/// The buffers live at `position`, largest first, at the sizes `sizes` gives.
fn show(title: &str, p: &HeapProgram, position: u64, sizes: &dyn Fn(usize) -> u64) {
    let mut alloc = vec![None; p.buffers.len()];
    let mut free = vec![None; p.buffers.len()];
    for (i, e) in p.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        match e.kind {
            HeapEventKind::Free => free[b] = Some(i),
            _ => {
                alloc[b].get_or_insert(i);
            }
        }
    }
    let mut rows: Vec<(u64, usize, Vec<usize>)> = live(p, position)
        .into_iter()
        .map(|(b, sharing)| (sizes(b), b, sharing))
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let total: u64 = rows.iter().map(|r| r.0).sum();
    println!(
        "== {title}: position {position} of {} ({}), {:.1} MiB of temporaries live",
        p.events.len(),
        at(p, position as usize),
        mib(total)
    );
    let when = |i: Option<usize>| i.map_or("-".to_string(), |i| format!("{i}:{}", at(p, i)));
    for (size, b, sharing) in &rows {
        let x = &p.buffers[*b];
        let readers: Vec<String> = x
            .readers
            .iter()
            .map(|r| {
                format!(
                    "{}{}",
                    r.position,
                    if r.contraction_only { "c" } else { "" }
                )
            })
            .collect();
        let shared: Vec<&str> = sharing
            .iter()
            .map(|s| p.buffers[*s].name.as_str())
            .collect();
        println!(
            "  {:>9.1} MiB  {:<14} {:<40} {:<45} alloc {} free {} readers [{}]{}",
            mib(*size),
            x.opcode,
            x.name,
            x.shape,
            when(alloc[*b]),
            when(free[*b]),
            readers.join(" "),
            if shared.is_empty() {
                String::new()
            } else {
                format!(" shared by {}", shared.join(", "))
            }
        );
    }
}

/// The peak as XProf's Memory Viewer reports it, its buffers grouped by
/// category and shape.
fn memory_viewer(path: &Path) {
    let name = path.display().to_string();
    let reports = oomscope_xla::analyze_hlo_proto(&name, &std::fs::read(path).unwrap()).unwrap();
    let Some(r) = reports
        .iter()
        .find(|r| r.memory_space == oomscope_report::MemoryColor::Device)
    else {
        return;
    };
    println!(
        "== Memory Viewer: peak {:.1} MiB at {} of {} (indefinite {:.1} MiB), chips {:?}",
        mib(r.peak_bytes),
        r.peak_position,
        r.heap_bytes.len(),
        mib(r.indefinite_bytes),
        r.chips
    );
    let mut groups: BTreeMap<(String, String), (usize, u64, Vec<String>)> = BTreeMap::new();
    for b in &r.peak_buffers {
        let g = groups
            .entry((format!("{:?}", b.category), b.shape.clone()))
            .or_default();
        g.0 += 1;
        g.1 += b.size_bytes;
        if g.2.len() < 4 {
            g.2.push(format!("{}({})", b.name, b.opcode));
        }
    }
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by_key(|(_, (_, s, _))| std::cmp::Reverse(*s));
    for ((category, shape), (n, size, names)) in rows {
        println!(
            "  {category:10} {n:3} × {shape:50} {:9.1} MiB  {}",
            mib(size),
            names.join(" ")
        );
    }
}

fn indefinite(title: &str, p: &HeapProgram, sizes: &dyn Fn(usize) -> u64) {
    let mut total = 0;
    println!("== {title}: indefinite allocations");
    for a in p.allocations.iter().filter(|a| a.indefinite) {
        let Some(r) = a.representative else { continue };
        // An allocation holds at least its representative; a changed size
        // stands for itself.
        let s = if sizes(r) == p.buffers[r].size_bytes {
            sizes(r).max(a.size_bytes)
        } else {
            sizes(r)
        };
        total += s;
        let b = &p.buffers[r];
        println!(
            "  {:>9.1} MiB  param {:?} out {:?} {:<40} {}",
            mib(s),
            a.parameter_number,
            a.output_index,
            b.name,
            b.shape
        );
    }
    println!("  total {:.1} MiB", mib(total));
}

fn events(title: &str, p: &HeapProgram, sizes: &dyn Fn(usize) -> u64) {
    println!("== {title}: events");
    for (i, e) in p.events.iter().enumerate() {
        let Some(b) = e.buffer else { continue };
        let x = &p.buffers[b];
        let kind = match e.kind {
            HeapEventKind::Alloc => "ALLOC".to_string(),
            HeapEventKind::Free => "FREE".to_string(),
            HeapEventKind::ShareWith(c) => format!("SHARE {}", p.buffers[c].name),
        };
        println!(
            "  {i:>5} {kind:<10} {:>9.1} MiB {:<36} {:<28} {}",
            mib(sizes(b)),
            x.name,
            at(p, i),
            x.shape
        );
    }
}

/// The entry computation (or those named `only`) as a list: name, element
/// type and dimensions, opcode, operands, a fusion's fused opcodes, op name.
fn hlo(path: &Path, only: Option<&str>) {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).unwrap();
    let proto = oomscope_xla::decode_hlo_proto(&name, &bytes).unwrap();
    let module = &proto.module_proto().unwrap();
    let names: HashMap<i64, &str> = module
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter().map(|i| (i.id, i.name.as_str())))
        .collect();
    let computations: HashMap<i64, _> = module.computations.iter().map(|c| (c.id, c)).collect();
    let chosen: Vec<_> = match only {
        Some(n) => module
            .computations
            .iter()
            .filter(|c| c.name.contains(n))
            .collect(),
        None => vec![computations[&module.entry_computation_id]],
    };
    for i in chosen.iter().flat_map(|c| c.instructions.iter()) {
        let shape = i.shape.as_ref().map(|s| {
            if s.tuple_shapes.is_empty() {
                format!("{}{:?}", s.element_type, s.dimensions)
            } else {
                s.tuple_shapes
                    .iter()
                    .map(|t| format!("{}{:?}", t.element_type, t.dimensions))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        });
        let operands: Vec<&str> = i
            .operand_ids
            .iter()
            .map(|o| names.get(o).copied().unwrap_or("?"))
            .collect();
        let fused: Vec<String> = i
            .called_computation_ids
            .iter()
            .filter_map(|c| computations.get(c))
            .flat_map(|c| {
                c.instructions
                    .iter()
                    .filter(|x| x.opcode != "parameter")
                    .map(|x| x.opcode.clone())
            })
            .collect();
        println!(
            "  {} = {} {}({}) [{}] {}",
            i.name,
            shape.unwrap_or_default(),
            i.opcode,
            operands.join(", "),
            fused.join(" "),
            i.metadata
                .as_ref()
                .map(|m| m.op_name.as_str())
                .unwrap_or("")
        );
    }
}

struct Options {
    sides: Vec<PathBuf>,
    change: Option<Change>,
    curve: bool,
    events: bool,
    indefinite: bool,
    hlo: Option<Option<String>>,
}

fn options() -> Options {
    let mut o = Options {
        sides: Vec::new(),
        change: None,
        curve: false,
        events: false,
        indefinite: false,
        hlo: None,
    };
    let mut args = std::env::args().skip(1).peekable();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--change" => {
                o.change = Some(match args.next().as_deref() {
                    Some("bf16") => Change::Bf16,
                    Some("batch") => Change::Batch(2),
                    Some("remat") => Change::Remat,
                    Some("donate") => Change::Donation(oomscope_whatif::DonationScope::All),
                    Some("donate-opt") => {
                        Change::Donation(oomscope_whatif::DonationScope::OptimizerState)
                    }
                    Some("shard") => {
                        Change::Sharding(4, oomscope_whatif::ShardScope::Parameters)
                    }
                    Some("offload") => Change::Offload,
                    other => panic!(
                        "--change bf16 | batch | remat | donate | donate-opt | shard | offload, not {other:?}"
                    ),
                })
            }
            "--curve" => o.curve = true,
            "--events" => o.events = true,
            "--indefinite" => o.indefinite = true,
            "--hlo" => {
                o.hlo = Some(args.next_if(|n| !n.starts_with("--") && !Path::new(n).exists()))
            }
            side => o.sides.push(hlo_path(side)),
        }
    }
    assert!(
        !o.sides.is_empty() && o.sides.len() <= 2,
        "COSTLY [FIXED]: one or two sides (see the example's header)"
    );
    o
}

fn main() {
    let o = options();
    if let Some(only) = &o.hlo {
        hlo(&o.sides[0], only.as_deref());
        return;
    }
    let programs: Vec<HeapProgram> = o.sides.iter().map(|s| program(s)).collect();
    let costly = &programs[0];
    let prediction = o.change.map(|c| oomscope_whatif::predict(costly, &[c]));
    let after: HashMap<&str, u64> = match &prediction {
        Some(Ok(pr)) => pr
            .changed
            .iter()
            .map(|c| (c.name.as_str(), c.bytes_after))
            .collect(),
        _ => HashMap::new(),
    };
    let predicted = |b: usize| {
        let x = &costly.buffers[b];
        after.get(x.name.as_str()).copied().unwrap_or(x.size_bytes)
    };
    for (n, (path, p)) in o.sides.iter().zip(&programs).enumerate() {
        let curve = oomscope_whatif::baseline(p).unwrap();
        let compiled = |b: usize| p.buffers[b].size_bytes;
        println!(
            "==== {}\n peak {:.1} MiB at {} ({}) of {} events; indefinite {:.1} MiB",
            path.display(),
            mib(curve.peak_bytes),
            curve.peak_position,
            at(p, curve.peak_position as usize),
            p.events.len(),
            mib(curve.indefinite_bytes)
        );
        show(
            "as compiled, at its peak",
            p,
            curve.peak_position,
            &compiled,
        );
        memory_viewer(path);
        let sizes: &dyn Fn(usize) -> u64 = if n == 0 { &predicted } else { &compiled };
        if n == 0 {
            match &prediction {
                Some(Ok(pr)) => {
                    println!(
                        "== {:?}: {:.1} MiB (indefinite {:.1} MiB) at {} ({})\n scope: {:?}\n how: {:?}",
                        o.change.unwrap(),
                        mib(pr.curve.peak_bytes),
                        mib(pr.curve.indefinite_bytes),
                        pr.curve.peak_position,
                        at(p, pr.curve.peak_position as usize),
                        pr.scope,
                        pr.how
                    );
                    show(
                        "predicted (replayed with the change)",
                        p,
                        pr.curve.peak_position,
                        &predicted,
                    );
                    if o.curve {
                        for (i, (a, b)) in curve
                            .heap_bytes
                            .iter()
                            .zip(&pr.curve.heap_bytes)
                            .enumerate()
                        {
                            println!(
                                "   {i:>4} {:<36} today {:>9.1} predicted {:>9.1} MiB",
                                at(p, i),
                                mib(*a),
                                mib(*b)
                            );
                        }
                    }
                }
                Some(Err(e)) => println!("== {:?}: no prediction: {e:?}", o.change.unwrap()),
                None => {}
            }
        }
        if o.events {
            events(&path.display().to_string(), p, sizes);
        }
        if o.indefinite {
            indefinite(&path.display().to_string(), p, sizes);
        }
    }
    if let (Some(Ok(pr)), Some(fixed)) = (&prediction, programs.get(1)) {
        let real = oomscope_whatif::baseline(fixed).unwrap();
        let before = oomscope_whatif::baseline(costly).unwrap();
        println!(
            "==== predicted {:.1} MiB (indefinite {:.1}), real {:.1} MiB (indefinite {:.1}), before {:.1}",
            mib(pr.curve.peak_bytes),
            mib(pr.curve.indefinite_bytes),
            mib(real.peak_bytes),
            mib(real.indefinite_bytes),
            mib(before.peak_bytes)
        );
    }
}
