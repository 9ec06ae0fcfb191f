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
    /// The module curve's position (`ModuleReport::heap_bytes` index) of
    /// each replay point, one per event and one at the end, when it is not
    /// the point's own index: a program read from dump text replays several
    /// events per instruction, and its module curve has one point per
    /// instruction. Empty: the index itself (an HloProto's trace).
    pub positions: Vec<u64>,
}

/// How a program reads one entry parameter (the same for all its leaves):
/// a decoder gathers it and [`HeapProgram::push_parameter`] records it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParameterReads {
    pub feeds_contraction: bool,
    /// First and last replay positions of its readers.
    pub uses: Option<(usize, usize)>,
    /// Of those through which it reaches a dot or a convolution.
    pub contraction_uses: Option<(usize, usize)>,
    pub contraction_in_loop: bool,
}

impl ParameterReads {
    /// From the replay positions of its readers, and of those through
    /// which it reaches a contraction.
    pub fn new(feeds: bool, uses: &[usize], contraction_uses: &[usize], in_loop: bool) -> Self {
        let span = |p: &[usize]| Some((*p.iter().min()?, *p.iter().max()?));
        ParameterReads {
            feeds_contraction: feeds,
            uses: span(uses),
            contraction_uses: span(contraction_uses),
            contraction_in_loop: in_loop,
        }
    }
}

impl HeapProgram {
    /// The allocation holding each entry parameter leaf, by (parameter
    /// number, shape index): built once for [`Self::push_parameter`].
    pub fn parameter_allocations(&self) -> std::collections::HashMap<(i64, Vec<i64>), usize> {
        let mut held = std::collections::HashMap::new();
        for (i, a) in self.allocations.iter().enumerate() {
            if let Some(number) = a.parameter_number {
                // The first, should two hold the same leaf.
                held.entry((number, a.parameter_shape_index.clone()))
                    .or_insert(i);
            }
        }
        held
    }

    /// Adds entry parameter `number`'s leaf at `shape_index`, with the
    /// allocation of this memory space that holds it, if any (`held`:
    /// [`Self::parameter_allocations`]).
    pub fn push_parameter(
        &mut self,
        (number, shape_index): (i64, Vec<i64>),
        shape: String,
        reads: &ParameterReads,
        held: &std::collections::HashMap<(i64, Vec<i64>), usize>,
    ) {
        let allocation = held.get(&(number, shape_index.clone())).copied();
        self.parameters.push(EntryParameter {
            number,
            shape,
            shape_index,
            allocation,
            feeds_contraction: reads.feeds_contraction,
            first_use: reads.uses.map(|u| u.0),
            last_use: reads.uses.map(|u| u.1),
            first_contraction_use: reads.contraction_uses.map(|u| u.0),
            last_contraction_use: reads.contraction_uses.map(|u| u.1),
            contraction_in_loop: reads.contraction_in_loop,
            // Set by the caller that follows dimensions (`xla::dims`).
            dim_classes: Vec::new(),
        });
    }

    /// The module curve's position of replay point `point`.
    pub fn position_of(&self, point: u64) -> u64 {
        if self.positions.is_empty() {
            return point;
        }
        let i = usize::try_from(point).unwrap_or(usize::MAX);
        self.positions
            .get(i)
            .or(self.positions.last())
            .copied()
            .unwrap_or(point)
    }
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
    /// The instructions of the entry computation that read the buffer's
    /// value (through get-tuple-element, bitcast and async copies; for a
    /// copy, also the readers of the value it copies), in schedule order. The remat what-if reads which of a residual's
    /// readers run in the forward pass, and whether they only feed a
    /// contraction.
    pub readers: Vec<BufferReader>,
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

/// One instruction that reads a buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferReader {
    /// Replay position (event index) where the schedule reaches the reader.
    pub position: usize,
    /// It reads the value only as an operand of a dot or a convolution at
    /// default precision (directly, or inside a fusion through converts,
    /// shape-only ops and activations): XLA:TPU rounds such an f32 operand
    /// to bf16, and fuses the rounding into the producer when every reader
    /// is of this kind.
    pub contraction_only: bool,
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
    /// Replay positions of the first and last reader through which it
    /// reaches a dot or a convolution: where a weight is needed whole (an
    /// optimizer's update reads it elementwise, and is not one of them).
    pub first_contraction_use: Option<usize>,
    pub last_contraction_use: Option<usize>,
    /// One of those readers is a loop (a scan reads one slice a step).
    pub contraction_in_loop: bool,
    /// One class per dimension (as `ProgramBuffer::dim_classes`).
    pub dim_classes: Vec<u32>,
}
