//! The part of an `HloModuleProto` the what-if program's dataflow facts
//! read (`program.rs`, `dims.rs`), decoded with prost: the trimmed schema's
//! module, computation and instruction with the same field numbers, less
//! every field the facts never look at (an instruction's metadata, fusion
//! kind, custom-call target, control predecessors; a computation's program
//! shape; the module's program shape, aliases, device assignment and stack
//! frames), and of a shape its dimensions, tuple elements, dimension order
//! and tiles only (no dynamic dimensions, no boxed layout). *Why:* prost decoded and then dropped those strings for every
//! instruction, about a third of the program build on large modules; an
//! unknown field is skipped without allocating.

use oomscope_proto::xla::{
    hlo_schedule_proto, ConvolutionDimensionNumbers, DotDimensionNumbers, GatherDimensionNumbers,
    PrecisionConfig,
};

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloModuleProto {
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(int64, tag = "6")]
    pub entry_computation_id: i64,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    #[prost(message, optional, tag = "7")]
    pub schedule: Option<HloScheduleProto>,
}

impl HloModuleProto {
    /// Every instruction's id, computation by computation (what the
    /// program's tables by id are sized from).
    pub(crate) fn instruction_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.computations
            .iter()
            .flat_map(|c| c.instructions.iter().map(|i| i.id))
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloScheduleProto {
    /// Computation id -> sequence.
    #[prost(map = "int64, message", tag = "1")]
    pub sequences: std::collections::HashMap<i64, hlo_schedule_proto::InstructionSequence>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub root_id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    #[prost(int64, tag = "9")]
    pub parameter_number: i64,
    #[prost(int64, tag = "13")]
    pub tuple_index: i64,
    #[prost(int64, repeated, tag = "14")]
    pub dimensions: Vec<i64>,
    #[prost(message, optional, tag = "16")]
    pub convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
    #[prost(message, optional, tag = "30")]
    pub dot_dimension_numbers: Option<DotDimensionNumbers>,
    #[prost(message, optional, tag = "33")]
    pub gather_dimension_numbers: Option<GatherDimensionNumbers>,
    #[prost(int64, tag = "35")]
    pub id: i64,
    #[prost(int64, repeated, tag = "36")]
    pub operand_ids: Vec<i64>,
    #[prost(int64, repeated, tag = "38")]
    pub called_computation_ids: Vec<i64>,
    #[prost(message, optional, tag = "51")]
    pub precision_config: Option<PrecisionConfig>,
}

/// A shape as the dimension classes read it (`dims.rs`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ShapeProto {
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
    #[prost(message, optional, tag = "5")]
    pub layout: Option<LayoutProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LayoutProto {
    #[prost(int64, repeated, tag = "1")]
    pub minor_to_major: Vec<i64>,
    #[prost(message, repeated, tag = "6")]
    pub tiles: Vec<TileProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TileProto {
    #[prost(int64, repeated, tag = "1")]
    pub dimensions: Vec<i64>,
}
