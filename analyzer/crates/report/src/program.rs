//! One compiled module as the heap replay reads it (issue 25): its buffers,
//! their allocations, the heap-simulator events in schedule order, and the
//! entry computation's parameters and outputs with the dataflow facts a
//! remedy needs. A decoder fills it (`oomscope_xla::memory_viewer`); the
//! what-if engine (`oomscope_whatif`) transforms it and replays it. It is
//! not part of the JSON report (it can be as large as the module).

use crate::{BufferCategory, MemoryColor};

/// A module's program in one memory space.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeapProgram {
    /// Display name of the module (`name(program_id)`), as `ModuleReport`.
    pub module: String,
    pub memory_space: MemoryColor,
    /// Every logical buffer of the memory space that the replay or the
    /// indefinite allocations can name.
    pub buffers: Vec<ProgramBuffer>,
    /// Every allocation of the memory space (indefinite or not).
    pub allocations: Vec<ProgramAllocation>,
    /// The replayed heap-simulator trace, in order.
    pub events: Vec<HeapEvent>,
    /// Entry parameters (one per leaf the parameter allocations hold).
    pub parameters: Vec<EntryParameter>,
    /// The module config's `input_output_alias` entries: (output shape
    /// index, parameter number, parameter shape index).
    pub aliases: Vec<(Vec<i64>, i64, Vec<i64>)>,
    /// The instruction name of each position of the replay (the heap
    /// curve's positions), when known.
    pub instructions: Vec<String>,
}

/// One logical buffer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgramBuffer {
    pub id: i64,
    /// `instruction{i,j}` as XProf names it.
    pub name: String,
    /// The buffer's own (sub)shape with its layout, as XLA prints it.
    pub shape: String,
    pub size_bytes: u64,
    pub unpadded_bytes: u64,
    /// Index into `HeapProgram::allocations`.
    pub allocation: usize,
    pub opcode: String,
    /// Buffers defined by the defining instruction's direct operands that
    /// it reads element by element and is the last reader of in the
    /// schedule: XLA's heap simulator gives this buffer one of their memory
    /// when the two shapes are equal (`HeapSimulator::RunComputation`,
    /// `HloDataflowAnalysis::CanShareOperandBufferWithUser`).
    pub dying_operands: Vec<usize>,
    /// One class per dimension of its array (empty when unknown): two
    /// dimensions of one class are one dimension followed through the
    /// program (the batch, from the data to every value that carries it).
    pub dim_classes: Vec<u32>,
    /// A softmax's or log-softmax's input or output (an exponential reads
    /// it, or it is computed from one, through elementwise operations; or a
    /// loop's stack of such values), not a dot's or a convolution's result
    /// as written: mixed precision computes softmax in f32, the cast to
    /// f32 fused after the contraction.
    pub softmax: bool,
}

/// One buffer allocation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgramAllocation {
    pub index: i64,
    pub size_bytes: u64,
    pub category: BufferCategory,
    /// Entry parameter, constant or maybe-live-out: counted at every point.
    pub indefinite: bool,
    pub parameter_number: Option<i64>,
    pub parameter_shape_index: Vec<i64>,
    pub maybe_live_out: bool,
    /// The buffer that stands for it (its largest logical buffer), when it has one.
    pub representative: Option<usize>,
    /// For a maybe-live-out allocation: the output shape index it holds, when known.
    pub output_index: Option<Vec<i64>>,
    /// For an output: the replay position (event index) where the schedule
    /// reaches the instruction that defines it, when known.
    pub defined_at: Option<usize>,
}

/// What a heap-simulator event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapEventKind {
    Alloc,
    Free,
    /// Shares the memory of this buffer (index into `buffers`).
    ShareWith(usize),
}

/// One event of the replayed trace. `buffer` is `None` when the event names
/// a buffer the assignment does not hold (the replay records a point and
/// skips it, as XProf does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapEvent {
    pub kind: HeapEventKind,
    pub buffer: Option<usize>,
}

/// What the program does with an entry parameter (leaf).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryParameter {
    pub number: i64,
    pub shape_index: Vec<i64>,
    /// Shape with layout, as XLA prints it.
    pub shape: String,
    /// Index into `allocations`, when it has one in this memory space.
    pub allocation: Option<usize>,
    /// It reaches a dot or a convolution (through fusions, tuples, loops):
    /// a weight or the data, not optimizer state.
    pub feeds_contraction: bool,
    /// Replay positions (event indices) where the schedule reaches its
    /// first and last reader in the entry computation, when known.
    pub first_use: Option<usize>,
    pub last_use: Option<usize>,
    /// One class per dimension (as `ProgramBuffer::dim_classes`).
    pub dim_classes: Vec<u32>,
}
