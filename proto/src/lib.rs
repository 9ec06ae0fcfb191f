//! Trimmed upstream protobuf schemas and their prost-generated types.
//!
//! The `.proto` files under `protos/` keep the upstream package names and field
//! numbers exactly (protobuf skips unknown fields, so a subset decodes real
//! files): `tensorflow.profiler` (XSpace, from tsl's `xplane.proto`) and `xla`
//! (`HloProto` with its `BufferAssignmentProto`, shapes and layouts, from
//! openxla/xla) and `perftools.profiles` (pprof `Profile`, from google/pprof).
//! `build.rs` compiles every `.proto` in that folder, so a new schema file
//! only needs a module here.

pub use prost;

/// `package xla;` (`xla/service/hlo.proto`, `xla/xla_data.proto`).
pub mod xla {
    include!(concat!(env!("OUT_DIR"), "/xla.rs"));
}

/// `package tensorflow.profiler;` (`tsl/profiler/protobuf/xplane.proto`).
pub mod tensorflow {
    pub mod profiler {
        include!(concat!(env!("OUT_DIR"), "/tensorflow.profiler.rs"));
    }
}

/// `package perftools.profiles;` (google/pprof `proto/profile.proto`): JAX
/// device memory profiles.
pub mod perftools {
    pub mod profiles {
        include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
    }
}

/// `package oomscope.report;`: our own schema for reports shared as permalinks.
pub mod oomscope {
    pub mod report {
        include!(concat!(env!("OUT_DIR"), "/oomscope.report.rs"));
    }
}
