//! Which files of a dump folder belong to which module.
//!
//! XLA names every file of one module with the same `module_NNNN.<name>`
//! prefix (`NNNN` is the module's unique id in that dump), then a suffix that
//! says what the file is:
//! `module_0000.jit_f.cl_1014260217.after_optimizations-buffer-assignment.txt` (TPU),
//! `module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt` (GPU),
//! `module_0003.SyncTensorsGraph.212.before_optimizations.txt` (names may hold dots).
//! Files are grouped by directory and `module_NNNN`.

use foldhash::{HashMap, HashMapExt};

/// The text files of a dump this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DumpFileKind {
    HloBeforeOptimizations,
    HloAfterOptimizations,
    HloAfterBufferAssignment,
    HloOomIntermediate,
    BufferAssignment,
    BufferAssignmentValues,
    LiveRange,
    MemoryUsageReport,
}

impl DumpFileKind {
    pub fn is_hlo(self) -> bool {
        matches!(
            self,
            DumpFileKind::HloBeforeOptimizations
                | DumpFileKind::HloAfterOptimizations
                | DumpFileKind::HloAfterBufferAssignment
                | DumpFileKind::HloOomIntermediate
        )
    }
}

/// Suffixes, longest first where one ends another.
const SUFFIXES: &[(&str, DumpFileKind)] = &[
    (
        "-buffer-assignment-values.txt",
        DumpFileKind::BufferAssignmentValues,
    ),
    ("-buffer-assignment.txt", DumpFileKind::BufferAssignment),
    ("-live-range.txt", DumpFileKind::LiveRange),
    ("-memory-usage-report.txt", DumpFileKind::MemoryUsageReport),
    (
        "after_optimizations_after_buffer_assignment.txt",
        DumpFileKind::HloAfterBufferAssignment,
    ),
    (
        "after_optimizations.txt",
        DumpFileKind::HloAfterOptimizations,
    ),
    (
        "before_optimizations.txt",
        DumpFileKind::HloBeforeOptimizations,
    ),
    (
        "oom_intermediate_module.txt",
        DumpFileKind::HloOomIntermediate,
    ),
];

/// The file's name without its directories.
fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// What kind of dump text file `path` names, if any.
pub fn dump_file_kind(path: &str) -> Option<DumpFileKind> {
    let name = base_name(path);
    if !name.starts_with("module_") {
        return None;
    }
    SUFFIXES
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|&(_, kind)| kind)
}

/// True for the XLA dump text files this crate reads.
pub fn is_dump_file(path: &str) -> bool {
    dump_file_kind(path).is_some()
}

/// The files of one module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpModule<'a> {
    /// Directory and `module_NNNN` of the first file, e.g. `run/module_0000`.
    pub prefix: &'a str,
    /// The `NNNN` number.
    pub number: u64,
    /// The name as the file names give it (`jit_f.cl_1014260217`); the HLO header has the bare one.
    pub file_name: &'a str,
    /// `(kind, path, text)`, sorted by kind.
    pub files: Vec<(DumpFileKind, &'a str, &'a str)>,
}

impl<'a> DumpModule<'a> {
    /// The first file of a kind: `(path, text)`.
    pub fn file(&self, kind: DumpFileKind) -> Option<(&'a str, &'a str)> {
        self.files
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map(|&(_, path, text)| (path, text))
    }
}

/// `dir/module_0000` and `jit_f.cl_1` of `dir/module_0000.jit_f.cl_1.after_optimizations.txt`.
fn split_module_name(path: &str, kind: DumpFileKind) -> (&str, u64, &str) {
    let name = base_name(path);
    let dir_len = path.len() - name.len();
    let number_end = name.find('.').unwrap_or(name.len());
    let number = name["module_".len().min(number_end)..number_end]
        .parse()
        .unwrap_or(0);
    let suffix = SUFFIXES
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("", |(s, _)| s);
    // The middle part, minus the `.after_optimizations` stem and a GPU tag `.sm_8.0_gpu`.
    let mut middle = name
        .get(number_end + 1..name.len() - suffix.len())
        .unwrap_or("");
    middle = middle.trim_end_matches(['.', '_']);
    if let Some(stem) = middle.strip_suffix("after_optimizations") {
        middle = stem.trim_end_matches(['.', '_']);
    }
    if let Some(i) = middle.find(".sm_") {
        if middle.ends_with("_gpu") {
            middle = &middle[..i];
        }
    }
    (&path[..dir_len + number_end], number, middle)
}

/// Group dump text files by module (other files are ignored), in order of
/// directory and module number.
pub fn group_modules<'a>(files: &[(&'a str, &'a str)]) -> Vec<DumpModule<'a>> {
    let mut modules: Vec<DumpModule<'a>> = Vec::new();
    let mut by_prefix: HashMap<&'a str, usize> = HashMap::new();
    for &(path, text) in files {
        let Some(kind) = dump_file_kind(path) else {
            continue;
        };
        let (prefix, number, file_name) = split_module_name(path, kind);
        let index = *by_prefix.entry(prefix).or_insert_with(|| {
            modules.push(DumpModule {
                prefix,
                number,
                file_name,
                files: Vec::new(),
            });
            modules.len() - 1
        });
        let module = &mut modules[index];
        if file_name.len() > module.file_name.len() {
            module.file_name = file_name;
        }
        module.files.push((kind, path, text));
    }
    for module in &mut modules {
        module
            .files
            .sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    }
    let directory = |m: &DumpModule<'a>| &m.prefix[..m.prefix.len() - base_name(m.prefix).len()];
    modules.sort_by(|a, b| directory(a).cmp(directory(b)).then(a.number.cmp(&b.number)));
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_names() {
        let files = [
            ("d/module_0000.jit_f.cl_1014260217.after_optimizations-buffer-assignment.txt", ""),
            ("d/module_0000.jit_f.cl_1014260217.after_optimizations-buffer-assignment-values.txt", ""),
            ("d/module_0000.jit_f.cl_1014260217.after_optimizations.txt", ""),
            ("d/module_0000.jit_f.cl_1014260217.after_optimizations.hlo.pb", ""),
            ("d/module_0012.jit_g.sm_8.0_gpu_after_optimizations.txt", ""),
            ("d/module_0012.jit_g.sm_8.0_gpu_after_optimizations-memory-usage-report.txt", ""),
            ("d/module_0003.SyncTensorsGraph.212.before_optimizations.txt", ""),
            ("d/module_0000.jit_f.cl_1014260217.oom_intermediate_module.txt", ""),
            ("e/module_0000.jit_h.after_optimizations-live-range.txt", ""),
            ("d/notes.txt", ""),
        ];
        assert!(!is_dump_file(
            "d/module_0000.jit_f.after_optimizations.hlo.pb"
        ));
        let modules = group_modules(&files);
        let summary: Vec<(&str, u64, &str, usize)> = modules
            .iter()
            .map(|m| (m.prefix, m.number, m.file_name, m.files.len()))
            .collect();
        assert_eq!(
            summary,
            [
                ("d/module_0000", 0, "jit_f.cl_1014260217", 4),
                ("d/module_0003", 3, "SyncTensorsGraph.212", 1),
                ("d/module_0012", 12, "jit_g", 2),
                ("e/module_0000", 0, "jit_h", 1),
            ]
        );
        assert_eq!(modules[0].files[0].0, DumpFileKind::HloAfterOptimizations);
    }
}
