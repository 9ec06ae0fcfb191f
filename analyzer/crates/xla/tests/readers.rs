//! Each buffer's readers in the entry computation (`ProgramBuffer::readers`),
//! on real compiles: whether a reader only feeds a dot or a convolution
//! decides what XLA:TPU keeps in bf16 (the remat what-if reads it).

use oomscope_report::program::{HeapEventKind, HeapProgram, ProgramBuffer};

fn hbm(pair: &str) -> HeapProgram {
    let dir = oomscope_testdata::fixtures().join(pair);
    let path = oomscope_testdata::hlo_proto_in(&dir).unwrap();
    let name = path.display().to_string();
    let hlo = oomscope_xla::decode_hlo_proto(&name, &std::fs::read(&path).unwrap()).unwrap();
    oomscope_xla::heap_programs(&name, &hlo, None)
        .unwrap()
        .into_iter()
        .find(|p| p.memory_space == oomscope_report::MemoryColor::Device)
        .unwrap()
}

fn buffer<'a>(p: &'a HeapProgram, name: &str) -> &'a ProgramBuffer {
    p.buffers.iter().find(|b| b.name == name).unwrap()
}

#[test]
fn a_value_read_through_a_nested_bitcast_fusion_by_a_matmul_only_feeds_a_contraction() {
    // tanh(x @ w) per layer: the next layer's fusion reads the tanh output
    // through a bitcast fusion into its convolution (fixtures/pair-mlp-remat).
    let p = hbm("pair-mlp-remat/base");
    let y = buffer(&p, "convolution_tanh_fusion.7");
    assert!(
        y.readers.first().is_some_and(|r| r.contraction_only),
        "{:?}",
        y.readers
    );
    // The backward's tanh derivative reads it elementwise.
    assert!(
        y.readers.iter().any(|r| !r.contraction_only),
        "{:?}",
        y.readers
    );
    assert!(y.readers.windows(2).all(|w| w[0].position <= w[1].position));
}

#[test]
fn a_relu_on_the_way_to_a_convolution_still_only_feeds_it() {
    // relu(conv(x, w)): the next conv's fusion applies max(x, 0), converts
    // and convolves (fixtures/pair-convnet-remat).
    let p = hbm("pair-convnet-remat/base");
    let y = buffer(&p, "fusion.52");
    assert!(
        y.readers.first().is_some_and(|r| r.contraction_only),
        "{:?}",
        y.readers
    );
}

#[test]
fn a_residual_stream_also_read_by_an_add_is_not_contraction_only() {
    // x + tanh(gelu(x @ w_in) @ w_out): x feeds the matmul and the add
    // (fixtures/pair-remat-oom): one reader of each kind in the forward.
    let p = hbm("pair-remat-oom/plain");
    let x = buffer(&p, "fusion.281{0}");
    let forward: Vec<_> = x.readers.iter().filter(|r| r.position < 23).collect();
    assert!(
        forward.iter().any(|r| r.contraction_only),
        "{:?}",
        x.readers
    );
    assert!(
        forward.iter().any(|r| !r.contraction_only),
        "{:?}",
        x.readers
    );
}

#[test]
fn an_async_copy_of_a_residual_is_read_where_its_source_is() {
    // XLA copies each layer's residual stream for the backward
    // (copy-start{0}) while the forward reads the original: the copy's
    // readers include the forward's (fixtures/pair-transformer-remat-v6e).
    let p = hbm("pair-transformer-remat-v6e/base");
    let copy = buffer(&p, "copy-start.22{0}");
    assert!(
        copy.readers.iter().any(|r| r.position < 74),
        "{:?}",
        copy.readers
    );
    assert!(
        copy.readers.iter().any(|r| r.position > 74),
        "{:?}",
        copy.readers
    );
}

#[test]
fn a_matmul_at_highest_precision_keeps_its_f32_operand() {
    // The same MLP with JAX_DEFAULT_MATMUL_PRECISION=highest
    // (fixtures/pair-mlp-remat-highest): the convolutions carry
    // operand_precision={highest,highest}; XLA:TPU does not round their
    // operands to bf16, so the reader is not a bf16 contraction.
    let p = hbm("pair-mlp-remat-highest/base");
    let y = buffer(&p, "convolution_tanh_fusion.7");
    assert!(
        y.readers.first().is_some_and(|r| !r.contraction_only),
        "{:?}",
        y.readers
    );
}

#[test]
fn a_loops_counter_freed_at_its_end_keeps_the_loss_head_before_the_backward_loop() {
    // A scanned transformer (fixtures/pair-transformer-scan-remat): the
    // forward loop while.7 stacks the residuals, the loss head (fusion.170,
    // read by exponential_reduce_fusion) runs, then the backward loop
    // while.8 reads the stacks. The trace frees while.7{0} (the counter,
    // read by nothing) as the forward loop ends; placed at the last reader
    // of another element (while.8), it put the loss head and the backward
    // loop at one position, so a remedy's backward-loop memory landed on
    // the loss head's peak.
    let p = hbm("pair-transformer-scan-remat/base");
    let head = buffer(&p, "fusion.170{1}");
    let stacked = buffer(&p, "while.7{5}");
    let head_at = head.readers.first().map(|r| r.position).unwrap();
    let backward_at = stacked.readers.first().map(|r| r.position).unwrap();
    assert!(
        head_at < backward_at,
        "{:?} {:?}",
        head.readers,
        stacked.readers
    );
    // The forward loop's counter is freed as that loop ends, before both.
    let counter = p
        .buffers
        .iter()
        .position(|b| b.name == "while.7{0}")
        .unwrap();
    let freed = p
        .events
        .iter()
        .position(|e| e.kind == HeapEventKind::Free && e.buffer == Some(counter))
        .unwrap();
    assert!(
        freed < head_at,
        "counter freed at {freed}, loss head read at {head_at}"
    );
}
