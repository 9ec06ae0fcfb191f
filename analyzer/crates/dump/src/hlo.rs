//! Zero-copy parser for HLO module text as XLA dumps it
//! (`*.before_optimizations.txt`, `*.after_optimizations.txt`,
//! `*.after_optimizations_after_buffer_assignment.txt`, `*.oom_intermediate_module.txt`).
//!
//! Everything borrows from the input text. The parser keeps what the memory
//! analysis needs (names, shape text, opcode, operands, metadata, the order of
//! instructions, which is the schedule of a scheduled module, and the
//! `FileNames`/`FunctionNames`/`FileLocations`/`StackFrames` tables) and skips
//! every other attribute by bracket and string matching alone, so attributes
//! of other XLA versions (backend_config JSON, frontend_attributes, sharding,
//! control-predecessors, ...) never stop it. Shapes are kept as printed and
//! parsed (with `oomscope-layout`) only when sizes are needed.
//!
//! Malformed or truncated input never panics: the parser records a
//! [`HloProblem`] naming the line, skips to the next line, and returns what it
//! could read.

use memchr::memchr;

/// One HLO module as printed by `HloModule::ToString`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloModule<'a> {
    /// The module name from the `HloModule name, ...` header line.
    pub name: &'a str,
    /// `is_scheduled=true`: instruction order in each computation is the schedule.
    pub is_scheduled: bool,
    /// The `entry_computation_layout={...}` value without the braces.
    pub entry_computation_layout: Option<&'a str>,
    /// `replica_count=` and `num_partitions=` of the header; the printer
    /// omits each when it is 1.
    pub replica_count: u64,
    pub num_partitions: u64,
    pub stack_frames: StackFrameTables<'a>,
    pub computations: Vec<HloComputation<'a>>,
    /// Index into `computations` of the `ENTRY` computation.
    pub entry: Option<usize>,
}

/// A computation: `[ENTRY] %name (params) -> result { instructions }`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloComputation<'a> {
    pub name: &'a str,
    pub is_entry: bool,
    /// The signature between the name and the opening brace, as printed.
    pub signature: &'a str,
    pub instructions: Vec<HloInstruction<'a>>,
}

/// One instruction line: `[ROOT] %name = shape opcode(operands), attributes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloInstruction<'a> {
    pub name: &'a str,
    pub is_root: bool,
    /// The shape as printed, layout included (a tuple shape keeps its parentheses).
    pub shape: &'a str,
    pub opcode: &'a str,
    /// The text between the operand parentheses; see [`HloInstruction::operand_names`].
    pub operands: &'a str,
    /// Everything after the operand list (`, key=value` pairs), unparsed.
    pub attributes: &'a str,
    pub metadata: Metadata<'a>,
    /// 1-based line of the instruction in the text.
    pub line: u32,
}

/// The fields of `metadata={...}` the analysis uses. Strings are as printed
/// (C escapes are kept; op names and paths rarely have any).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metadata<'a> {
    pub op_type: &'a str,
    pub op_name: &'a str,
    pub source_file: &'a str,
    pub source_line: Option<u32>,
    pub stack_frame_id: Option<u64>,
}

/// The stack-frame index newer XLA prints between the header and the
/// computations; `stack_frame_id` in metadata points into `stack_frames`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackFrameTables<'a> {
    /// `(id, file name)`, in the order printed.
    pub file_names: Vec<(u64, &'a str)>,
    pub function_names: Vec<(u64, &'a str)>,
    pub file_locations: Vec<(u64, FileLocation)>,
    pub stack_frames: Vec<(u64, StackFrame)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileLocation {
    pub file_name_id: u64,
    pub function_name_id: u64,
    pub line: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackFrame {
    pub file_location_id: u64,
    pub parent_frame_id: u64,
}

/// Something the parser could not read; parsing went on after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HloProblem {
    /// 1-based line (0 when the problem concerns the whole text).
    pub line: u32,
    pub message: String,
}

/// The parse of one HLO text: what could be read and what could not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HloParse<'a> {
    pub module: HloModule<'a>,
    pub problems: Vec<HloProblem>,
}

impl<'a> HloInstruction<'a> {
    /// Operand instruction names, `%` removed. Handles both the current form
    /// (`%a, %b`) and the older one that prints each operand's shape first
    /// (`f32[2]{0} %a, (f32[], s32[]) %b`).
    pub fn operand_names(&self) -> impl Iterator<Item = &'a str> + 'a {
        split_top_level(self.operands, b',').filter_map(|operand| {
            // Long operand lists carry `/*index=5*/` before every fifth operand.
            let operand = strip_index_comment(operand.trim());
            let name = operand.rsplit(' ').next().unwrap_or(operand);
            let name = name.strip_prefix('%').unwrap_or(name);
            if name.is_empty() || !is_name_start(name.as_bytes()[0]) {
                return None; // literals of constants, empty operand lists
            }
            Some(name)
        })
    }

    /// The value of a top-level attribute (`calls`, `index`, `to_apply`, ...), as printed.
    pub fn attribute(&self, key: &str) -> Option<&'a str> {
        split_top_level(self.attributes, b',').find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == key).then_some(v)
        })
    }
}

/// `/*index=5*/%a` → `%a`: the comment XLA prints before every fifth
/// element of a long list.
fn strip_index_comment(text: &str) -> &str {
    match text
        .strip_prefix("/*")
        .and_then(|rest| rest.split_once("*/"))
    {
        Some((_, after)) => after.trim_start(),
        None => text,
    }
}

impl<'a> HloModule<'a> {
    /// Parse HLO module text.
    pub fn parse(text: &'a str) -> HloParse<'a> {
        Parser::new(text).run()
    }

    pub fn entry_computation(&self) -> Option<&HloComputation<'a>> {
        self.entry.and_then(|i| self.computations.get(i))
    }

    /// `file:line` of an instruction: the metadata's `source_file`/`source_line`,
    /// else the innermost frame of its `stack_frame_id`; empty when unknown.
    pub fn source_of(&self, metadata: &Metadata<'_>) -> String {
        if !metadata.source_file.is_empty() {
            return match metadata.source_line {
                Some(line) => format!("{}:{}", metadata.source_file, line),
                None => metadata.source_file.to_string(),
            };
        }
        let Some(frame_id) = metadata.stack_frame_id else {
            return String::new();
        };
        let tables = &self.stack_frames;
        let found = lookup(&tables.stack_frames, frame_id)
            .and_then(|frame| lookup(&tables.file_locations, frame.file_location_id))
            .and_then(|loc| lookup(&tables.file_names, loc.file_name_id).map(|f| (*f, loc.line)));
        match found {
            Some((file, line)) => format!("{file}:{line}"),
            None => String::new(),
        }
    }
}

fn lookup<T>(table: &[(u64, T)], id: u64) -> Option<&T> {
    // Tables are printed with dense ascending ids; fall back to a search otherwise.
    let direct = usize::try_from(id)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| table.get(i));
    match direct {
        Some((found, value)) if *found == id => Some(value),
        _ => table.iter().find(|(found, _)| *found == id).map(|(_, v)| v),
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'%'
}

/// Split at `sep` outside brackets and strings.
pub(crate) fn split_top_level(text: &str, sep: u8) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0usize;
    let mut finished = text.is_empty();
    std::iter::from_fn(move || {
        if finished {
            return None;
        }
        let mut depth = 0i32;
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => i = skip_string(bytes, i),
                b'(' | b'{' | b'[' => depth += 1,
                b')' | b'}' | b']' => depth -= 1,
                b if b == sep && depth <= 0 => {
                    let piece = &text[start..i];
                    start = i + 1;
                    return Some(piece);
                }
                _ => {}
            }
            i += 1;
        }
        finished = true;
        Some(&text[start..])
    })
}

/// Index of the closing quote of the string opening at `open` (or the end).
fn skip_string(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i,
            b'\n' => return i - 1, // an unterminated string ends at its line
            _ => i += 1,
        }
    }
    bytes.len()
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    out: HloParse<'a>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            line: 1,
            out: HloParse::default(),
        }
    }

    fn problem(&mut self, line: u32, message: impl Into<String>) {
        // Bound the list: a binary or hostile file could otherwise produce one per line.
        if self.out.problems.len() < 100 {
            self.out.problems.push(HloProblem {
                line,
                message: message.into(),
            });
        }
    }

    /// The next line (without its newline), advancing past it.
    fn next_line(&mut self) -> Option<&'a str> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let end = memchr(b'\n', &self.bytes[self.pos..]).map_or(self.bytes.len(), |i| self.pos + i);
        let line = &self.text[self.pos..end];
        self.pos = end + 1;
        self.line += 1;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    fn run(mut self) -> HloParse<'a> {
        let mut saw_header = false;
        let mut table: Option<&'a str> = None;
        while self.pos < self.bytes.len() {
            let line_no = self.line;
            let Some(line) = self.next_line() else { break };
            let trimmed = line.trim();
            if trimmed.is_empty() {
                table = None;
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix("HloModule ") {
                if saw_header {
                    self.problem(
                        line_no,
                        "a second `HloModule` header; only the first module is read",
                    );
                    break;
                }
                saw_header = true;
                self.header(rest);
                continue;
            }
            match trimmed {
                "FileNames" | "FunctionNames" | "FileLocations" | "StackFrames" => {
                    table = Some(trimmed);
                    continue;
                }
                _ => {}
            }
            if let Some(kind) = table {
                self.table_row(kind, trimmed, line_no);
                continue;
            }
            // `[ENTRY] %name (params) -> shape {`, or just `name {` in older dumps.
            if trimmed.ends_with('{') {
                self.computation(trimmed, line_no);
                continue;
            }
            self.problem(
                line_no,
                format!("unexpected text outside a computation: `{}`", clip(trimmed)),
            );
        }
        if !saw_header {
            self.out.problems.insert(
                0,
                HloProblem {
                    line: 0,
                    message: "no `HloModule` header line: not an HLO module dump".into(),
                },
            );
        }
        self.out
    }

    fn header(&mut self, rest: &'a str) {
        let module = &mut self.out.module;
        let mut parts = split_top_level(rest, b',');
        module.name = parts.next().unwrap_or("").trim();
        module.replica_count = 1;
        module.num_partitions = 1;
        for part in parts {
            let Some((key, value)) = part.trim().split_once('=') else {
                continue;
            };
            match key {
                "is_scheduled" => module.is_scheduled = value == "true",
                "replica_count" => module.replica_count = value.trim().parse().unwrap_or(1),
                "num_partitions" => module.num_partitions = value.trim().parse().unwrap_or(1),
                "entry_computation_layout" => {
                    let inner = value
                        .strip_prefix('{')
                        .and_then(|v| v.strip_suffix('}'))
                        .unwrap_or(value);
                    module.entry_computation_layout = Some(inner);
                }
                _ => {}
            }
        }
    }

    fn table_row(&mut self, kind: &str, row: &'a str, line_no: u32) {
        let parsed = (|| {
            let (id, rest) = row.split_once(' ')?;
            let id: u64 = id.parse().ok()?;
            let tables = &mut self.out.module.stack_frames;
            match kind {
                "FileNames" => tables.file_names.push((id, unquote(rest.trim()))),
                "FunctionNames" => tables.function_names.push((id, unquote(rest.trim()))),
                "FileLocations" => {
                    let loc = FileLocation {
                        file_name_id: brace_field(rest, "file_name_id")?,
                        function_name_id: brace_field(rest, "function_name_id").unwrap_or(0),
                        line: brace_field(rest, "line")
                            .and_then(|l| u32::try_from(l).ok())
                            .unwrap_or(0),
                    };
                    tables.file_locations.push((id, loc));
                }
                _ => {
                    let frame = StackFrame {
                        file_location_id: brace_field(rest, "file_location_id")?,
                        parent_frame_id: brace_field(rest, "parent_frame_id").unwrap_or(0),
                    };
                    tables.stack_frames.push((id, frame));
                }
            }
            Some(())
        })();
        if parsed.is_none() {
            self.problem(line_no, format!("unreadable {kind} row `{}`", clip(row)));
        }
    }

    /// A computation header line has been read; parse instructions up to `}`.
    fn computation(&mut self, header: &'a str, header_line: u32) {
        let header = header.strip_suffix('{').unwrap_or(header).trim_end();
        let (is_entry, header) = match header.strip_prefix("ENTRY ") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, header),
        };
        let name_end = header.find([' ', '(']).unwrap_or(header.len());
        let name = header[..name_end].trim_start_matches('%');
        let mut computation = HloComputation {
            name,
            is_entry,
            signature: header[name_end..].trim(),
            instructions: Vec::new(),
        };
        let mut closed = false;
        while self.pos < self.bytes.len() {
            // Skip indentation without materialising the line: an instruction
            // may continue over several lines (multi-line constant literals).
            while self.pos < self.bytes.len()
                && matches!(self.bytes[self.pos], b' ' | b'\t' | b'\r')
            {
                self.pos += 1;
            }
            match self.bytes.get(self.pos) {
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                Some(b'}') => {
                    self.next_line(); // `}` or `}, execution_thread="..."`
                    closed = true;
                    break;
                }
                Some(_) => {
                    let line_no = self.line;
                    match self.instruction(line_no) {
                        Ok(instruction) => computation.instructions.push(instruction),
                        Err(message) => {
                            let at_end = memchr(b'\n', &self.bytes[self.pos..]).is_none();
                            let message = if at_end {
                                format!("{message}; the text ends here: it is truncated")
                            } else {
                                message
                            };
                            self.problem(line_no, format!("in computation `{name}`: {message}"));
                            self.skip_to_next_line();
                        }
                    }
                }
                None => break,
            }
        }
        if !closed {
            self.problem(
                header_line,
                format!("computation `{name}` is not closed: the text is truncated"),
            );
        }
        if is_entry {
            if self.out.module.entry.is_some() {
                self.problem(header_line, format!("a second ENTRY computation `{name}`"));
            } else {
                self.out.module.entry = Some(self.out.module.computations.len());
            }
        }
        self.out.module.computations.push(computation);
    }

    fn skip_to_next_line(&mut self) {
        match memchr(b'\n', &self.bytes[self.pos.min(self.bytes.len())..]) {
            Some(i) => {
                self.pos += i + 1;
                self.line += 1;
            }
            None => self.pos = self.bytes.len(),
        }
    }

    /// Parse one instruction starting at `self.pos` (indentation skipped).
    fn instruction(&mut self, line_no: u32) -> Result<HloInstruction<'a>, String> {
        let bytes = self.bytes;
        let text = self.text;
        let mut p = self.pos;
        let is_root = bytes[p..].starts_with(b"ROOT ");
        if is_root {
            p += 5;
        }
        // name
        let name_start = if bytes.get(p) == Some(&b'%') {
            p + 1
        } else {
            p
        };
        let mut i = name_start;
        while i < bytes.len() && !matches!(bytes[i], b' ' | b'\n' | b'=') {
            i += 1;
        }
        let name = &text[name_start..i];
        if name.is_empty() {
            return Err("expected an instruction name".into());
        }
        if !bytes[i..].starts_with(b" = ") {
            return Err(format!("expected ` = ` after `{}`", clip(name)));
        }
        i += 3;
        // shape: a tuple in parentheses, or a token up to the next space
        let shape_start = i;
        if bytes.get(i) == Some(&b'(') {
            i = self.matching(i, b'(', b')')?;
            i += 1;
        } else {
            while i < bytes.len() && !matches!(bytes[i], b' ' | b'\n') {
                if bytes[i] == b'{' {
                    i = self.matching(i, b'{', b'}')?;
                }
                i += 1;
            }
        }
        let shape = &text[shape_start..i.min(bytes.len())];
        if bytes.get(i) != Some(&b' ') {
            return Err(format!(
                "expected an opcode after the shape of `{}`",
                clip(name)
            ));
        }
        i += 1;
        // opcode
        let opcode_start = i;
        while i < bytes.len() && !matches!(bytes[i], b'(' | b' ' | b'\n' | b',') {
            i += 1;
        }
        let opcode = &text[opcode_start..i];
        if bytes.get(i) != Some(&b'(') || opcode.is_empty() {
            return Err(format!("expected `opcode(` for `{}`", clip(name)));
        }
        let close = self.matching(i, b'(', b')')?;
        let operands = &text[i + 1..close];
        // attributes: up to the end of the line, outside brackets and strings
        let attr_start = close + 1;
        let attr_end = self.attributes_end(attr_start);
        let attributes = &text[attr_start..attr_end];
        let metadata = if attributes.contains("metadata={") {
            parse_metadata(attributes)
        } else {
            Metadata::default()
        };
        // Advance past the instruction, counting the lines it spanned.
        let end = (attr_end + 1).min(bytes.len());
        self.line += bytes[self.pos..end].iter().filter(|&&b| b == b'\n').count() as u32;
        self.pos = end;
        Ok(HloInstruction {
            name,
            is_root,
            shape,
            opcode,
            operands,
            attributes,
            metadata,
            line: line_no,
        })
    }

    /// Index of the bracket closing the one at `open`; strings are skipped.
    fn matching(&self, open: usize, open_byte: u8, close_byte: u8) -> Result<usize, String> {
        let bytes = self.bytes;
        let mut depth = 0usize;
        let mut i = open;
        while i < bytes.len() {
            let b = bytes[i];
            if b == open_byte {
                depth += 1;
            } else if b == close_byte {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            } else if b == b'"' {
                i = skip_string(bytes, i);
            }
            i += 1;
        }
        Err(format!(
            "unbalanced `{}`: the text is truncated",
            open_byte as char
        ))
    }

    /// End of the attribute list starting at `start`: the first newline outside
    /// brackets and strings (or the end of the text).
    fn attributes_end(&self, start: usize) -> usize {
        let bytes = self.bytes;
        let mut depth = 0i32;
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' if depth <= 0 => return i,
                b'"' => i = skip_string(bytes, i),
                b'{' | b'(' | b'[' => depth += 1,
                b'}' | b')' | b']' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        bytes.len()
    }
}

/// Read `metadata={op_type="..." op_name="..." source_file="..." source_line=N stack_frame_id=N}`.
fn parse_metadata(attributes: &str) -> Metadata<'_> {
    let mut metadata = Metadata::default();
    let Some(value) =
        split_top_level(attributes, b',').find_map(|pair| pair.trim().strip_prefix("metadata="))
    else {
        return metadata;
    };
    let inner = value
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .unwrap_or(value);
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && bytes[i] != b' ' {
            i += 1;
        }
        let key = &inner[key_start..i];
        if bytes.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        let value = if bytes.get(i) == Some(&b'"') {
            let close = skip_string(bytes, i).min(bytes.len());
            // An unterminated string ends before its line's last byte, which
            // may be inside a multi-byte character: end at a char boundary.
            let mut end = close.max(i + 1);
            while !inner.is_char_boundary(end) {
                end -= 1;
            }
            let v = &inner[i + 1..end];
            i = close + 1;
            v
        } else {
            let start = i;
            while i < bytes.len() && bytes[i] != b' ' {
                if bytes[i] == b'{' {
                    // nested values of newer fields (e.g. profile_info={...})
                    let mut depth = 0;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'{' => depth += 1,
                            b'}' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
                i += 1;
            }
            &inner[start..i.min(bytes.len())]
        };
        match key {
            "op_type" => metadata.op_type = value,
            "op_name" => metadata.op_name = value,
            "source_file" => metadata.source_file = value,
            "source_line" => metadata.source_line = value.parse().ok(),
            "stack_frame_id" => metadata.stack_frame_id = value.parse().ok(),
            _ => {}
        }
    }
    metadata
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

/// `key=N` inside a `{a=1 b=2}` row.
fn brace_field(row: &str, key: &str) -> Option<u64> {
    let inner = row.trim().trim_start_matches('{').trim_end_matches('}');
    inner.split(' ').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        if k == key {
            v.parse().ok()
        } else {
            None
        }
    })
}

/// At most 80 characters of some text, for messages.
pub(crate) fn clip(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fifth_operand_of_a_long_list_is_read_past_its_index_comment() {
        // As the root tuple of fixtures/pair-donate-v6e prints it.
        let text = "HloModule m\n\nENTRY %e () -> (f32[], f32[], f32[], f32[], f32[], f32[]) {\n  ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%a, %b, %c, %d, %e, /*index=5*/%f.10)\n}\n";
        let parse = HloModule::parse(text);
        let root = &parse.module.computations[0].instructions[0];
        let names: Vec<&str> = root.operand_names().collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f.10"]);
    }

    #[test]
    fn parses_instruction_with_tuple_shape_backend_config_and_metadata() {
        let text = r#"HloModule m, is_scheduled=true, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0:T(128)} parameter(0), sharding={replicated}, metadata={op_name="x"}
  %t = (f32[2]{0}, s32[]{:S(2)}) tuple(%p, %p), backend_config={"a":{"b":"}{,"},"c":[1,2]}, metadata={op_name="jit(f)/tuple" source_file="/a \"b\".py" source_line=12}
  ROOT %g = f32[2]{0} get-tuple-element(%t), index=0, control-predecessors={%p}
}
"#;
        let parse = HloModule::parse(text);
        assert_eq!(parse.problems, vec![]);
        let m = parse.module;
        assert_eq!(m.name, "m");
        assert!(m.is_scheduled);
        assert_eq!(m.entry_computation_layout, Some("(f32[2]{0})->f32[2]{0}"));
        let entry = m.entry_computation().unwrap();
        assert_eq!(entry.name, "main");
        let t = &entry.instructions[1];
        assert_eq!(t.shape, "(f32[2]{0}, s32[]{:S(2)})");
        assert_eq!(t.opcode, "tuple");
        assert_eq!(t.operand_names().collect::<Vec<_>>(), ["p", "p"]);
        assert_eq!(t.metadata.op_name, "jit(f)/tuple");
        assert_eq!(t.metadata.source_line, Some(12));
        assert_eq!(m.source_of(&t.metadata), "/a \\\"b\\\".py:12");
        let g = &entry.instructions[2];
        assert!(g.is_root);
        assert_eq!(g.attribute("index"), Some("0"));
        assert_eq!(g.line, 6);
    }

    #[test]
    fn old_operand_form_with_shapes() {
        let text = "HloModule m\n\nENTRY %e (a: f32[]) -> f32[] {\n  %a = f32[]{:T(128)} parameter(0)\n  ROOT %b = f32[]{:T(128)} add(f32[]{:T(128)} %a, f32[]{:T(128)S(6)} %a)\n}\n";
        let parse = HloModule::parse(text);
        assert!(parse.problems.is_empty(), "{:?}", parse.problems);
        let b = &parse.module.computations[0].instructions[1];
        assert_eq!(b.operand_names().collect::<Vec<_>>(), ["a", "a"]);
    }

    #[test]
    fn multi_line_constant_literal() {
        let text = "HloModule m\n\nENTRY %e () -> f32[2,2] {\n  ROOT %c = f32[2,2]{1,0} constant({ { 1, 2 },\n  { 3, 4 } })\n}\n";
        let parse = HloModule::parse(text);
        assert!(parse.problems.is_empty(), "{:?}", parse.problems);
        let c = &parse.module.computations[0].instructions[0];
        assert_eq!(c.opcode, "constant");
        assert_eq!(c.operand_names().count(), 0);
    }
}
