//! Shared by the page (`src/main.rs`) and the analysis worker
//! (`src/bin/worker.rs`): the messages between them, and the worker's
//! pure helpers that the native tests reach (the worker binary needs the
//! `worker` feature, which `cargo test --workspace` does not build).

pub mod binary_string;
pub mod protocol;
