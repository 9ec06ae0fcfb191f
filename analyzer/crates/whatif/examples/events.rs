//! Prints the heap-simulator events of an HloProto's HBM program in a range.
//! `cargo run -p oomscope-whatif --example events -- FILE.hlo.pb FROM TO`
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("an .hlo.pb");
    let from: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let to: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(usize::MAX);
    let bytes = std::fs::read(&path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
    let programs = oomscope_xla::heap_programs(&path, &hlo, None).expect("a buffer assignment");
    let p = programs
        .iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .expect("HBM");
    for (i, e) in p.events.iter().enumerate().skip(from).take(to.saturating_sub(from)) {
        let b = e.buffer.and_then(|b| p.buffers.get(b));
        println!(
            "{i} {:?} {} {} {}",
            e.kind,
            b.map_or("-", |b| b.name.as_str()),
            b.map_or(0, |b| b.size_bytes >> 20),
            b.map_or("", |b| b.shape.as_str())
        );
    }
}
