//! Shared by the page (`src/main.rs`) and the analysis worker
//! (`src/bin/worker.rs`): the messages between them.

pub mod protocol;
