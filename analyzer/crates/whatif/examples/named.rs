//! Prints the buffers of an HloProto (HBM) whose name starts with a prefix.
//! `cargo run -p oomscope-whatif --example named -- FILE.hlo.pb while.7`
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("an .hlo.pb");
    let prefix = args.next().unwrap_or_default();
    let bytes = std::fs::read(&path).expect("readable");
    let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
    let programs = oomscope_xla::heap_programs(&path, &hlo, None).expect("a buffer assignment");
    for p in programs {
        for (i, b) in p.buffers.iter().enumerate() {
            if b.name.starts_with(&prefix) {
                println!("{:?} {i} {} {} {} {}", p.memory_space, b.name, b.shape, b.size_bytes, b.opcode);
            }
        }
    }
}
