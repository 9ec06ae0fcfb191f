//! XLA shapes and layouts as XLA prints them (`Shape::ToString(print_layout=true)`,
//! `Layout::Print`), parsed into a model, printed back, and sized.
//!
//! Sizes follow upstream `ShapeUtil::ByteSizeOf` / `ShapeUtil::ArraySize`:
//! an untiled array takes `elements × element size`; a tiled one rounds the
//! most-minor dimensions up to the first tile (the tile's last dimension pairs
//! with the most-minor dimension), then applies the tail padding alignment
//! and the element size in bits. Later tiles (`(2,1)`, `(4,1)`, `(8,1)`, which
//! pack sub-32-bit elements) add nothing. A split dimension (`SC(d:i)`) counts
//! at its largest piece.
//!
//! This reproduces the compiler's own size of every array buffer in the real
//! dumps, HloProtos, Memory Viewer oracles and OOM logs we have (see
//! `tests/`). Two libtpu sizes the shape text alone does not give:
//! - a tuple's own buffer (its index table) takes 4 bytes per element on
//!   TPU, rounded up to the allocation granule (512 bytes on v4/v5e, 32 on
//!   v5p/v6e): `tpu::tpu_tuple_table_bytes`; [`Shape::own_padded_bytes`]
//!   gives upstream's 8 bytes per element;
//! - untiled arrays (e.g. `f32[]` in a reduction's thread-local buffers)
//!   take whole vector registers on TPU (4096 bytes for `f32[]`):
//!   [`ArrayShape::tpu_padded_bytes`] (in `tpu.rs`) gives that size; here an
//!   untiled array is sized dense, as upstream.

use crate::element_type::ElementType;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Upstream's marker for a tile dimension that combines dimensions (`*` in text).
pub const COMBINE_DIMENSION: i64 = -1;
/// Upstream's size of an unbounded dynamic dimension (`?` in text).
pub const UNBOUNDED_DIMENSION: i64 = i64::MIN;
/// Bytes of one tuple index table entry (a device pointer).
pub const POINTER_BYTES: u64 = 8;

/// Deepest tuple nesting accepted by the parser.
const MAX_NESTING: usize = 64;

/// One tile of a tiled layout, most-major tile dimension first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tile {
    /// Tile dimension sizes; [`COMBINE_DIMENSION`] (`*`) combines dimensions.
    pub dims: Vec<i64>,
}

/// How a split dimension's data is divided between memories (`SC(dim:i,j)`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitConfig {
    pub dimension: i64,
    pub split_indices: Vec<i64>,
}

/// An array layout: every field of upstream `Layout` that its text form shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// Dimension numbers from the most minor (fastest varying) to the most major.
    pub minor_to_major: Vec<i64>,
    /// Sparse dimension level types as printed inside `D(...)` (e.g. `D`, `C+`); empty = dense.
    pub dim_level_types: Vec<String>,
    /// Tiles, the first applied first.
    pub tiles: Vec<Tile>,
    /// `L(n)`: the element count is padded to a multiple of this; 1 = none.
    pub tail_padding_alignment_in_elements: i64,
    /// `#(type)`: index type of sparse arrays.
    pub index_primitive_type: Option<ElementType>,
    /// `*(type)`: pointer type of sparse arrays.
    pub pointer_primitive_type: Option<ElementType>,
    /// `E(n)`: bits per element; 0 = the type's default byte size.
    pub element_size_in_bits: u32,
    /// `S(n)`: memory space (0 default/HBM, 1 VMEM on TPU, 5 host, ...).
    pub memory_space: i64,
    /// `SC(...)`: split configurations.
    pub split_configs: Vec<SplitConfig>,
    /// `P(shape)`: physical shape of a sparse array.
    pub physical_shape: Option<Box<Shape>>,
    /// `M(n)`: bytes of dynamic-shape metadata in front of the data.
    pub dynamic_shape_metadata_prefix_bytes: i64,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            minor_to_major: Vec::new(),
            dim_level_types: Vec::new(),
            tiles: Vec::new(),
            tail_padding_alignment_in_elements: 1,
            index_primitive_type: None,
            pointer_primitive_type: None,
            element_size_in_bits: 0,
            memory_space: 0,
            split_configs: Vec::new(),
            physical_shape: None,
            dynamic_shape_metadata_prefix_bytes: 0,
        }
    }
}

/// An array shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArrayShape {
    pub element_type: ElementType,
    /// Dimension sizes (the upper bound for dynamic ones; [`UNBOUNDED_DIMENSION`] for `?`).
    pub dims: Vec<i64>,
    /// Which dimensions are dynamic (`<=N` or `?`); same length as `dims`.
    pub dynamic: Vec<bool>,
    pub layout: Option<Layout>,
}

/// Any XLA shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Shape {
    Array(ArrayShape),
    Tuple(Vec<Shape>),
    Token,
    Opaque,
}

/// Why a shape string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// Byte offset in the input where the problem is.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad shape at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for ShapeError {}

// ---------------------------------------------------------------------------
// Sizes

/// `value` rounded up to a multiple of `multiple` (saturating; 0 and 1 leave it).
fn round_up(value: u64, multiple: u64) -> u64 {
    if multiple <= 1 {
        return value;
    }
    value.div_ceil(multiple).saturating_mul(multiple)
}

/// A dimension size as an element count (dynamic bounds count at their bound,
/// unbounded or negative sizes as 0).
fn dim_count(dim: i64) -> u64 {
    u64::try_from(dim).unwrap_or(0)
}

impl ArrayShape {
    /// Element count, saturating.
    pub fn element_count(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(dim_count(d)))
    }

    /// Bits one element takes in memory: the layout's `E(n)` when given, else
    /// the type's default byte size.
    pub fn storage_bits(&self) -> u64 {
        match &self.layout {
            Some(layout) if layout.element_size_in_bits != 0 => {
                u64::from(layout.element_size_in_bits)
            }
            _ => self.element_type.default_storage_bytes().saturating_mul(8),
        }
    }

    pub(crate) fn bytes_of_elements(&self, elements: u64) -> u64 {
        elements
            .checked_mul(self.storage_bits())
            .map_or(u64::MAX, |bits| bits.div_ceil(8))
    }

    /// Bytes of the data without any layout padding: element count × element size.
    pub fn unpadded_bytes(&self) -> u64 {
        self.bytes_of_elements(self.element_count())
    }

    /// Minor-to-major order: the layout's when it is a permutation of the
    /// dimensions, else the default (last dimension most minor).
    pub fn minor_to_major(&self) -> Vec<usize> {
        let rank = self.dims.len();
        if let Some(layout) = &self.layout {
            let order: Vec<usize> = layout
                .minor_to_major
                .iter()
                .filter_map(|&d| usize::try_from(d).ok())
                .collect();
            let mut seen = vec![false; rank];
            let is_permutation = order.len() == rank
                && order.iter().all(|&d| {
                    seen.get_mut(d)
                        .is_some_and(|seen| !std::mem::replace(seen, true))
                });
            if is_permutation {
                return order;
            }
        }
        (0..rank).rev().collect()
    }

    /// Each dimension's size as one piece of the array holds it
    /// (`LayoutUtil::MaxSplitSize`), indexed by dimension number: the largest
    /// piece when the layout splits the dimension (`SC(d:i,j)`), else the
    /// whole dimension.
    ///
    /// The `d` of a split counts dimensions in major-to-minor (physical)
    /// order, not by dimension number: libtpu's sizes of
    /// `s8[1000,333]{0,1:...SC(0:168)}` (split 333) and
    /// `u32[1023,5,17]{0,2,1:...SC(0:3)}` (split 5) on v5p say so.
    pub fn split_dims(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self.dims.iter().map(|&d| dim_count(d)).collect();
        let Some(layout) = self.layout.as_ref().filter(|l| !l.split_configs.is_empty()) else {
            return sizes;
        };
        let major_to_minor: Vec<usize> = self.minor_to_major().into_iter().rev().collect();
        // The last split of a dimension wins, as upstream.
        let mut splits = vec![None; sizes.len()];
        for split in &layout.split_configs {
            let dim = usize::try_from(split.dimension)
                .ok()
                .and_then(|d| major_to_minor.get(d));
            if let Some(slot) = dim.and_then(|&d| splits.get_mut(d)) {
                *slot = Some(split);
            }
        }
        for (size, split) in sizes.iter_mut().zip(splits) {
            let Some(split) = split else { continue };
            let mut largest = 0u64;
            let mut last_index = 0u64;
            for &index in &split.split_indices {
                let index = dim_count(index);
                largest = largest.max(index.saturating_sub(last_index));
                last_index = index;
            }
            *size = largest.max(size.saturating_sub(last_index));
        }
        sizes
    }

    /// What the first tile rounds each dimension up to a multiple of
    /// (indexed by dimension number; 1 = not rounded), and the product of the
    /// tile dimensions beyond the rank (a tile longer than the rank pads
    /// implicit size-1 dimensions, e.g. `f32[]{:T(128)}` takes 128 elements).
    /// `None` when the layout has no tiles.
    pub fn tile_multiples(&self) -> Option<(Vec<u64>, u64)> {
        let tile = self.layout.as_ref()?.tiles.first()?;
        let mut multiples = vec![1u64; self.dims.len()];
        let mut beyond_rank = 1u64;
        let order = self.minor_to_major();
        // The tile's last dimension pairs with the most-minor dimension.
        for (position, &tile_dim) in tile.dims.iter().rev().enumerate() {
            let multiple = u64::try_from(tile_dim).unwrap_or(1);
            match order.get(position).and_then(|&dim| multiples.get_mut(dim)) {
                Some(slot) => *slot = multiple,
                None => beyond_rank = beyond_rank.saturating_mul(multiple),
            }
        }
        Some((multiples, beyond_rank))
    }

    /// Each dimension's size after the first tile's rounding (split
    /// dimensions at their largest piece), indexed by dimension number, and
    /// the tile's elements beyond the rank. `None` when the layout has no tiles.
    pub fn tiled_dims(&self) -> Option<(Vec<u64>, u64)> {
        let (multiples, beyond_rank) = self.tile_multiples()?;
        let padded = self
            .split_dims()
            .into_iter()
            .zip(&multiples)
            .map(|(size, &m)| round_up(size, m))
            .collect();
        Some((padded, beyond_rank))
    }

    /// Bytes the array takes with its layout's padding (`ShapeUtil::ArraySize`
    /// plus the dynamic-shape metadata prefix).
    pub fn padded_bytes(&self) -> u64 {
        match self.tiled_dims() {
            Some((padded, beyond_rank)) => self.bytes_of_tiled(&padded, beyond_rank),
            None => self
                .unpadded_bytes()
                .saturating_add(self.metadata_prefix_bytes()),
        }
    }

    /// Bytes of a tiled array whose dimensions are padded to `padded` (by
    /// dimension number) and whose tile adds `beyond_rank` implicit elements:
    /// tail padding alignment, element size and metadata prefix applied.
    pub(crate) fn bytes_of_tiled(&self, padded: &[u64], beyond_rank: u64) -> u64 {
        let elements = padded
            .iter()
            .fold(beyond_rank, |acc, &d| acc.saturating_mul(d));
        let alignment = self
            .layout
            .as_ref()
            .map_or(1, |l| dim_count(l.tail_padding_alignment_in_elements));
        self.bytes_of_elements(round_up(elements, alignment))
            .saturating_add(self.metadata_prefix_bytes())
    }

    pub(crate) fn metadata_prefix_bytes(&self) -> u64 {
        self.layout
            .as_ref()
            .map_or(0, |l| dim_count(l.dynamic_shape_metadata_prefix_bytes))
    }

    /// The memory space of the layout (0 when none is given).
    pub fn memory_space(&self) -> i64 {
        self.layout.as_ref().map_or(0, |l| l.memory_space)
    }
}

impl Shape {
    /// Bytes of the data without layout padding. A tuple counts its index
    /// table (8 bytes per element) plus its elements.
    pub fn unpadded_bytes(&self) -> u64 {
        self.sum_sizes(&ArrayShape::unpadded_bytes)
    }

    /// Bytes with the layout's padding. A tuple counts its index table
    /// (8 bytes per element) plus its elements.
    pub fn padded_bytes(&self) -> u64 {
        self.sum_sizes(&ArrayShape::padded_bytes)
    }

    /// Bytes of this shape's own buffer: the array, or a tuple's index table
    /// alone (`ShapeUtil::ByteSizeOf` with 8-byte pointers; libtpu allocates
    /// one granule instead, see the module docs); token 0; opaque 8.
    pub fn own_padded_bytes(&self) -> u64 {
        match self {
            Shape::Array(a) => a.padded_bytes(),
            Shape::Tuple(elements) => POINTER_BYTES.saturating_mul(elements.len() as u64),
            Shape::Token => 0,
            Shape::Opaque => POINTER_BYTES,
        }
    }

    fn sum_sizes(&self, array_size: &dyn Fn(&ArrayShape) -> u64) -> u64 {
        match self {
            Shape::Array(a) => array_size(a),
            Shape::Tuple(elements) => elements.iter().fold(
                POINTER_BYTES.saturating_mul(elements.len() as u64),
                |acc, e| acc.saturating_add(e.sum_sizes(array_size)),
            ),
            Shape::Token => 0,
            Shape::Opaque => POINTER_BYTES,
        }
    }

    /// The array, when this is one.
    pub fn as_array(&self) -> Option<&ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Every array leaf, depth first.
    pub fn arrays(&self) -> Vec<&ArrayShape> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(shape) = stack.pop() {
            match shape {
                Shape::Array(a) => out.push(a),
                Shape::Tuple(elements) => stack.extend(elements.iter().rev()),
                Shape::Token | Shape::Opaque => {}
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Printing (upstream `Shape::Print` / `Layout::Print`)

fn join<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T], separator: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, &d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if d == COMBINE_DIMENSION {
                f.write_str("*")?;
            } else {
                write!(f, "{d}")?;
            }
        }
        f.write_str(")")
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        join(f, &self.minor_to_major, ",")?;
        let mut attributes = String::new();
        if !self.dim_level_types.is_empty() {
            attributes.push_str(&format!("D({})", self.dim_level_types.join(",")));
        }
        if !self.tiles.is_empty() {
            attributes.push('T');
            for tile in &self.tiles {
                attributes.push_str(&tile.to_string());
            }
        }
        if self.tail_padding_alignment_in_elements != 1 {
            attributes.push_str(&format!("L({})", self.tail_padding_alignment_in_elements));
        }
        if let Some(t) = self.index_primitive_type {
            attributes.push_str(&format!("#({t})"));
        }
        if let Some(t) = self.pointer_primitive_type {
            attributes.push_str(&format!("*({t})"));
        }
        if self.element_size_in_bits != 0 {
            attributes.push_str(&format!("E({})", self.element_size_in_bits));
        }
        if self.memory_space != 0 {
            attributes.push_str(&format!("S({})", self.memory_space));
        }
        if !self.split_configs.is_empty() {
            attributes.push_str("SC");
            for split in &self.split_configs {
                let indices: Vec<String> = split.split_indices.iter().map(i64::to_string).collect();
                attributes.push_str(&format!("({}:{})", split.dimension, indices.join(",")));
            }
        }
        if let Some(physical) = &self.physical_shape {
            attributes.push_str(&format!("P({physical})"));
        }
        if self.dynamic_shape_metadata_prefix_bytes > 0 {
            attributes.push_str(&format!("M({})", self.dynamic_shape_metadata_prefix_bytes));
        }
        if !attributes.is_empty() {
            write!(f, ":{attributes}")?;
        }
        f.write_str("}")
    }
}

impl fmt::Display for ArrayShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.element_type)?;
        for (i, &d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if d == UNBOUNDED_DIMENSION {
                f.write_str("?")?;
            } else if self.dynamic.get(i).copied().unwrap_or(false) {
                write!(f, "<={d}")?;
            } else {
                write!(f, "{d}")?;
            }
        }
        f.write_str("]")?;
        if let Some(layout) = &self.layout {
            write!(f, "{layout}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Array(a) => write!(f, "{a}"),
            Shape::Tuple(elements) => {
                // Upstream marks every fifth element with its index.
                f.write_str("(")?;
                for (i, element) in elements.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                        if i % 5 == 0 {
                            write!(f, "/*index={i}*/")?;
                        }
                    }
                    write!(f, "{element}")?;
                }
                f.write_str(")")
            }
            Shape::Token => f.write_str("token[]"),
            Shape::Opaque => f.write_str("opaque[]"),
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing

/// Parses one shape as XLA prints it, e.g. `f32[129,1024]{1,0:T(8,128)}`,
/// `(f32[2]{0}, s32[])`, `f32[<=10]`. Surrounding whitespace is ignored;
/// anything else after the shape is an error.
pub fn parse_shape(text: &str) -> Result<Shape, ShapeError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    parser.skip_space();
    let shape = parser.shape(0)?;
    parser.skip_space();
    if parser.pos != parser.text.len() {
        return Err(parser.error("unexpected text after the shape"));
    }
    Ok(shape)
}

/// Parses the start of `text` as a shape and returns it with the number of
/// bytes it took (for shapes embedded in longer lines, e.g. HLO instructions).
pub fn parse_shape_prefix(text: &str) -> Result<(Shape, usize), ShapeError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    let shape = parser.shape(0)?;
    Ok((shape, parser.pos))
}

/// Parses a shape with the repeat count memory usage reports put in front of
/// it: `5×bf16[8,128]{1,0}` or `5xbf16[8,128]{1,0}`. Without a count the count is 1.
pub fn parse_counted_shape(text: &str) -> Result<(u64, Shape), ShapeError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    parser.skip_space();
    let counted = parser.counted_shape()?;
    parser.skip_space();
    if parser.pos != parser.text.len() {
        return Err(parser.error("unexpected text after the shape"));
    }
    Ok(counted)
}

/// Parses the `shapes_list` column of a memory usage report: counted shapes
/// separated by commas, e.g. `f32[], s32[8192], 6×u32[]` or
/// `(f32[4096], f32[4096], u32[])`.
pub fn parse_counted_shape_list(text: &str) -> Result<Vec<(u64, Shape)>, ShapeError> {
    let mut parser = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    let mut shapes = Vec::new();
    loop {
        parser.skip_space();
        shapes.push(parser.counted_shape()?);
        parser.skip_space();
        if parser.pos == parser.text.len() {
            return Ok(shapes);
        }
        parser.expect(b',')?;
    }
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, message: impl Into<String>) -> ShapeError {
        ShapeError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    /// Skips whitespace and `/*...*/` comments (XLA marks every fifth tuple
    /// element with `/*index=N*/`).
    fn skip_space(&mut self) {
        loop {
            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                self.pos += 1;
            }
            if !self.rest().starts_with(b"/*") {
                return;
            }
            match self.rest().windows(2).position(|w| w == b"*/") {
                Some(end) => self.pos += end + 2,
                None => return,
            }
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), ShapeError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{}'", c as char)))
        }
    }

    fn integer(&mut self) -> Result<i64, ShapeError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = self.text_since(start);
        if digits.is_empty() || digits == "-" {
            self.pos = start;
            return Err(self.error("expected a number"));
        }
        digits.parse::<i64>().map_err(|_| ShapeError {
            offset: start,
            message: format!("number {digits} out of range"),
        })
    }

    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.pos += 1;
        }
        self.text_since(start)
    }

    /// The input not read yet.
    fn rest(&self) -> &'a [u8] {
        self.text.get(self.pos..).unwrap_or_default()
    }

    /// The text read since `start` (ASCII by construction of the callers).
    fn text_since(&self, start: usize) -> &'a str {
        std::str::from_utf8(self.text.get(start..self.pos).unwrap_or_default()).unwrap_or("")
    }

    /// `[N× | Nx] shape`: a shape with an optional repeat count.
    fn counted_shape(&mut self) -> Result<(u64, Shape), ShapeError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let mut count = 1;
        if self.pos > start {
            let digits = self.text_since(start);
            if self.rest().starts_with("×".as_bytes()) {
                self.pos += "×".len();
            } else {
                self.expect(b'x')?;
            }
            count = digits.parse::<u64>().map_err(|_| ShapeError {
                offset: start,
                message: format!("repeat count {digits} out of range"),
            })?;
        }
        Ok((count, self.shape(0)?))
    }

    fn shape(&mut self, depth: usize) -> Result<Shape, ShapeError> {
        if depth > MAX_NESTING {
            return Err(self.error(format!("tuples nested deeper than {MAX_NESTING}")));
        }
        if self.eat(b'(') {
            let mut elements = Vec::new();
            self.skip_space();
            if self.eat(b')') {
                return Ok(Shape::Tuple(elements));
            }
            loop {
                self.skip_space();
                elements.push(self.shape(depth + 1)?);
                self.skip_space();
                if self.eat(b')') {
                    return Ok(Shape::Tuple(elements));
                }
                self.expect(b',')?;
            }
        }
        let start = self.pos;
        let name = self.word();
        if name.is_empty() {
            return Err(self.error("expected an element type or '('"));
        }
        let element_type = match ElementType::from_name(name) {
            Some(t) => t,
            None => {
                self.pos = start;
                return Err(self.error(format!("unknown element type '{name}'")));
            }
        };
        let (dims, dynamic) = self.dimensions()?;
        match element_type {
            ElementType::Token => return Ok(Shape::Token),
            ElementType::OpaqueType => return Ok(Shape::Opaque),
            ElementType::Tuple | ElementType::Buffer => {
                self.pos = start;
                return Err(self.error(format!("'{name}' is not an array element type")));
            }
            _ => {}
        }
        let layout = if self.peek() == Some(b'{') {
            Some(self.layout(depth)?)
        } else {
            None
        };
        Ok(Shape::Array(ArrayShape {
            element_type,
            dims,
            dynamic,
            layout,
        }))
    }

    fn dimensions(&mut self) -> Result<(Vec<i64>, Vec<bool>), ShapeError> {
        self.expect(b'[')?;
        let mut dims = Vec::new();
        let mut dynamic = Vec::new();
        if self.eat(b']') {
            return Ok((dims, dynamic));
        }
        loop {
            self.skip_space();
            if self.eat(b'?') {
                dims.push(UNBOUNDED_DIMENSION);
                dynamic.push(true);
            } else {
                let is_dynamic = self.eat(b'<');
                if is_dynamic {
                    self.expect(b'=')?;
                }
                let size = self.integer()?;
                if size < 0 {
                    return Err(self.error("negative dimension size"));
                }
                dims.push(size);
                dynamic.push(is_dynamic);
            }
            self.skip_space();
            if self.eat(b']') {
                return Ok((dims, dynamic));
            }
            self.expect(b',')?;
        }
    }

    fn integer_list(&mut self, close: u8) -> Result<Vec<i64>, ShapeError> {
        let mut values = Vec::new();
        if self.eat(close) {
            return Ok(values);
        }
        loop {
            values.push(self.integer()?);
            if self.eat(close) {
                return Ok(values);
            }
            self.expect(b',')?;
        }
    }

    fn primitive_in_parens(&mut self) -> Result<ElementType, ShapeError> {
        self.expect(b'(')?;
        let name = self.word();
        let t = ElementType::from_name(name)
            .ok_or_else(|| self.error(format!("unknown element type '{name}'")))?;
        self.expect(b')')?;
        Ok(t)
    }

    fn number_in_parens(&mut self) -> Result<i64, ShapeError> {
        self.expect(b'(')?;
        let n = self.integer()?;
        self.expect(b')')?;
        Ok(n)
    }

    fn layout(&mut self, depth: usize) -> Result<Layout, ShapeError> {
        self.expect(b'{')?;
        let mut layout = Layout::default();
        // minor_to_major, possibly empty (scalars print `{:T(128)}` or `{}`).
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            layout.minor_to_major.push(self.integer()?);
            if !self.eat(b',') {
                break;
            }
        }
        if self.eat(b'}') {
            return Ok(layout);
        }
        self.expect(b':')?;
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(layout);
                }
                Some(b'D') => {
                    self.pos += 1;
                    self.expect(b'(')?;
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c != b')') {
                        self.pos += 1;
                    }
                    let inner = self.text_since(start);
                    layout.dim_level_types = inner.split(',').map(str::to_string).collect();
                    self.expect(b')')?;
                }
                Some(b'T') => {
                    self.pos += 1;
                    while self.peek() == Some(b'(') {
                        self.pos += 1;
                        let mut dims = Vec::new();
                        loop {
                            if self.eat(b'*') {
                                dims.push(COMBINE_DIMENSION);
                            } else {
                                let d = self.integer()?;
                                if d <= 0 {
                                    return Err(self.error("tile dimension must be positive"));
                                }
                                dims.push(d);
                            }
                            if self.eat(b')') {
                                break;
                            }
                            self.expect(b',')?;
                        }
                        layout.tiles.push(Tile { dims });
                    }
                }
                Some(b'L') => {
                    self.pos += 1;
                    layout.tail_padding_alignment_in_elements = self.number_in_parens()?;
                }
                Some(b'#') => {
                    self.pos += 1;
                    layout.index_primitive_type = Some(self.primitive_in_parens()?);
                }
                Some(b'*') => {
                    self.pos += 1;
                    layout.pointer_primitive_type = Some(self.primitive_in_parens()?);
                }
                Some(b'E') => {
                    self.pos += 1;
                    let bits = self.number_in_parens()?;
                    layout.element_size_in_bits = u32::try_from(bits)
                        .map_err(|_| self.error("element size in bits out of range"))?;
                }
                Some(b'S') if self.text.get(self.pos + 1) == Some(&b'C') => {
                    self.pos += 2;
                    while self.eat(b'(') {
                        let dimension = self.integer()?;
                        self.expect(b':')?;
                        let split_indices = self.integer_list(b')')?;
                        layout.split_configs.push(SplitConfig {
                            dimension,
                            split_indices,
                        });
                    }
                }
                Some(b'S') => {
                    self.pos += 1;
                    layout.memory_space = self.number_in_parens()?;
                }
                Some(b'P') => {
                    self.pos += 1;
                    self.expect(b'(')?;
                    let physical = self.shape(depth + 1)?;
                    self.expect(b')')?;
                    layout.physical_shape = Some(Box::new(physical));
                }
                Some(b'M') => {
                    self.pos += 1;
                    layout.dynamic_shape_metadata_prefix_bytes = self.number_in_parens()?;
                }
                Some(_) => return Err(self.error("unknown layout attribute")),
                None => return Err(self.error("layout not closed with '}'")),
            }
        }
    }
}
