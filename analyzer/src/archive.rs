//! Expanding what users drop: `.zip`, `.tar`, `.tar.gz`/`.tgz` and `.gz`.
//!
//! Archives come from strangers, so every expansion is bounded: total
//! decompressed bytes, entry count and nesting depth. Hitting a limit is an
//! error naming the archive; what was read before the limit is kept.

use crate::InputFile;
use std::io::Read;

/// Limits that keep an archive bomb from taking the tab (or the CLI) down.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Total bytes all expanded entries may take.
    pub max_total_bytes: u64,
    /// Entries in all archives together.
    pub max_entries: usize,
    /// Archives inside archives.
    pub max_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 4 << 30,
            max_entries: 100_000,
            max_depth: 4,
        }
    }
}

/// What kind of container a file is, judged by its magic bytes first and its
/// name second (names lie less often than users think, but bytes never do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Zip,
    Gzip,
    Tar,
}

pub fn container_of(name: &str, data: &[u8]) -> Option<Container> {
    if data.starts_with(b"PK\x03\x04") || data.starts_with(b"PK\x05\x06") {
        return Some(Container::Zip);
    }
    if data.starts_with(&[0x1f, 0x8b]) {
        return Some(Container::Gzip);
    }
    if data.len() >= 262 && &data[257..262] == b"ustar" {
        return Some(Container::Tar);
    }
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tar") && data.len() >= 512 {
        return Some(Container::Tar);
    }
    None
}

/// Budget shared by one expansion (all nested archives of one dropped file).
pub struct Budget {
    limits: Limits,
    used_bytes: u64,
    entries: usize,
}

impl Budget {
    pub fn new(limits: Limits) -> Self {
        Budget {
            limits,
            used_bytes: 0,
            entries: 0,
        }
    }

    fn take_entry(&mut self, archive: &str) -> Result<(), String> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(format!(
                "{archive}: more than {} entries; stopped (archive bomb?)",
                self.limits.max_entries
            ));
        }
        Ok(())
    }

    fn remaining(&self) -> u64 {
        self.limits.max_total_bytes.saturating_sub(self.used_bytes)
    }

    /// Read `reader` fully, charging the bytes to the budget. Memory is
    /// reserved fallibly, so running out of it (a wasm32 worker has at most
    /// 4 GiB, less than the byte limit needs while a buffer grows) is an
    /// error naming the archive instead of an abort.
    fn read_bounded(
        &mut self,
        archive: &str,
        entry: &str,
        reader: impl Read,
    ) -> Result<Vec<u8>, String> {
        let cap = self.remaining();
        let mut reader = reader.take(cap.saturating_add(1));
        let mut out = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let n = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("{archive}: {entry}: cannot decompress: {e}")),
            };
            out.try_reserve(n).map_err(|_| {
                format!("{archive}: {entry}: out of memory after expanding {} bytes; stopped (archive bomb?)", out.len())
            })?;
            out.extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
        if out.len() as u64 > cap {
            return Err(format!(
                "{archive}: expands to more than {} bytes; stopped (archive bomb?)",
                self.limits.max_total_bytes
            ));
        }
        self.used_bytes += out.len() as u64;
        Ok(out)
    }
}

/// Expand `file` if it is a container; returns the files inside (recursively
/// expanded), or the file itself when it is no container. Errors name the
/// archive; entries read before an error are returned alongside it.
pub fn expand(
    file: InputFile,
    budget: &mut Budget,
    depth: u32,
) -> (Vec<InputFile>, Vec<(String, String)>) {
    expand_where(file, budget, depth, &|_| true)
}

/// Whether the file `member` (a name [`expand`] gives) may come out of the
/// archive `archive`: an entry of it, or what a lone `.gz` holds.
pub fn may_hold(archive: &str, member: &str) -> bool {
    member.starts_with(&format!("{archive}/"))
        || (archive != member && strip_gz_suffix(archive) == member)
}

/// The file `wanted` (a name [`expand`] gives: `run.zip/dir/x.pickle`) out
/// of the archive `file`, expanded again under the limits of its analysis
/// but alone: entries on no path to it are skipped unread, so memory holds
/// the archive and that one member (a snapshot's replay reads it again: a
/// member has no file of its own). The error names the archive.
pub fn member(file: InputFile, wanted: &str) -> Result<Vec<u8>, String> {
    let archive = file.name.clone();
    let on_path = |name: &str| name == wanted || wanted.starts_with(&format!("{name}/"));
    let keep = |name: &str| on_path(name) || on_path(&strip_gz_suffix(name));
    let mut budget = Budget::new(Limits::default());
    let (files, errors) = expand_where(file, &mut budget, 0, &keep);
    match files.into_iter().find(|f| f.name == wanted) {
        Some(f) => Ok(f.data),
        None => Err(match errors.into_iter().next() {
            Some((_, message)) => message,
            None => format!("{archive} holds no {wanted}"),
        }),
    }
}

/// [`expand`], reading only the entries whose name `keep` accepts.
fn expand_where(
    file: InputFile,
    budget: &mut Budget,
    depth: u32,
    keep: &dyn Fn(&str) -> bool,
) -> (Vec<InputFile>, Vec<(String, String)>) {
    let Some(kind) = container_of(&file.name, &file.data) else {
        return (vec![file], Vec::new());
    };
    expand_container(&file, kind, budget, depth, keep)
}

/// [`expand`] of an archive the caller keeps (`kind`: [`container_of`] it),
/// so that it can still read the archive's bytes beside what came out (the
/// analysis hashes both together).
pub fn expand_kept(
    file: &InputFile,
    kind: Container,
    budget: &mut Budget,
) -> (Vec<InputFile>, Vec<(String, String)>) {
    expand_container(file, kind, budget, 0, &|_| true)
}

fn expand_container(
    file: &InputFile,
    kind: Container,
    budget: &mut Budget,
    depth: u32,
    keep: &dyn Fn(&str) -> bool,
) -> (Vec<InputFile>, Vec<(String, String)>) {
    if depth >= budget.limits.max_depth {
        let msg = format!(
            "{}: archives nested more than {} deep; not expanded",
            file.name, budget.limits.max_depth
        );
        return (Vec::new(), vec![(file.name.clone(), msg)]);
    }
    let mut errors = Vec::new();
    let inner = match kind {
        Container::Zip => unzip(file, budget, &mut errors, keep),
        Container::Tar => untar(&file.name, &file.data, budget, &mut errors, keep),
        Container::Gzip => gunzip(file, budget, &mut errors, keep),
    };
    let mut out = Vec::new();
    for f in inner {
        let (files, errs) = expand_where(f, budget, depth + 1, keep);
        out.extend(files);
        errors.extend(errs);
    }
    (out, errors)
}

fn unzip(
    file: &InputFile,
    budget: &mut Budget,
    errors: &mut Vec<(String, String)>,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<InputFile> {
    let mut out = Vec::new();
    let mut archive = match zip::ZipArchive::new(std::io::Cursor::new(&file.data[..])) {
        Ok(a) => a,
        Err(e) => {
            errors.push((
                file.name.clone(),
                format!("{}: not a readable zip archive: {e}", file.name),
            ));
            return out;
        }
    };
    for i in 0..archive.len() {
        if let Err(e) = budget.take_entry(&file.name) {
            errors.push((file.name.clone(), e));
            break;
        }
        let entry = match archive.by_index(i) {
            Ok(e) => e,
            Err(e) => {
                errors.push((file.name.clone(), format!("{}: entry {i}: {e}", file.name)));
                continue;
            }
        };
        if entry.is_dir() {
            continue;
        }
        let entry_name = entry
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| format!("entry {i}"));
        if !keep(&join(&file.name, &entry_name)) {
            continue;
        }
        match budget.read_bounded(&file.name, &entry_name, entry) {
            Ok(data) => out.push(InputFile {
                name: join(&file.name, &entry_name),
                data,
            }),
            Err(e) => {
                errors.push((file.name.clone(), e));
                break;
            }
        }
    }
    out
}

fn untar(
    name: &str,
    data: &[u8],
    budget: &mut Budget,
    errors: &mut Vec<(String, String)>,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<InputFile> {
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(data);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            errors.push((
                name.to_string(),
                format!("{name}: not a readable tar archive: {e}"),
            ));
            return out;
        }
    };
    for entry in entries {
        if let Err(e) = budget.take_entry(name) {
            errors.push((name.to_string(), e));
            break;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors.push((
                    name.to_string(),
                    format!("{name}: truncated or corrupt tar archive: {e}"),
                ));
                break;
            }
        };
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let entry_name = match entry.path() {
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(_) => continue,
        };
        if !keep(&join(name, &entry_name)) {
            continue;
        }
        match budget.read_bounded(name, &entry_name, entry) {
            Ok(bytes) => out.push(InputFile {
                name: join(name, &entry_name),
                data: bytes,
            }),
            Err(e) => {
                errors.push((name.to_string(), e));
                break;
            }
        }
    }
    out
}

fn gunzip(
    file: &InputFile,
    budget: &mut Budget,
    errors: &mut Vec<(String, String)>,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<InputFile> {
    let decoder = flate2::read::MultiGzDecoder::new(&file.data[..]);
    match budget.read_bounded(&file.name, "gzip stream", decoder) {
        Ok(data) => {
            let inner = strip_gz_suffix(&file.name);
            if container_of(&inner, &data) == Some(Container::Tar) {
                untar(&file.name, &data, budget, errors, keep)
            } else {
                vec![InputFile { name: inner, data }]
            }
        }
        Err(e) => {
            errors.push((file.name.clone(), e));
            Vec::new()
        }
    }
}

fn strip_gz_suffix(name: &str) -> String {
    for suffix in [".tar.gz", ".tgz"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            return format!("{stem}.tar");
        }
    }
    name.strip_suffix(".gz").unwrap_or(name).to_string()
}

/// `archive.zip` + `dir/file.txt` → `archive.zip/dir/file.txt`.
fn join(archive: &str, entry: &str) -> String {
    format!(
        "{}/{}",
        archive,
        entry.trim_start_matches("./").trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_bomb_is_stopped_with_a_message_naming_the_file() {
        let bomb = gz(&vec![0u8; 64 << 20]);
        let mut budget = Budget::new(Limits {
            max_total_bytes: 1 << 20,
            ..Limits::default()
        });
        let (files, errors) = expand(
            InputFile {
                name: "bomb.gz".into(),
                data: bomb,
            },
            &mut budget,
            0,
        );
        assert!(files.is_empty());
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].1.starts_with("bomb.gz: expands to more than"),
            "{:?}",
            errors
        );
    }

    #[test]
    fn nested_gzip_depth_is_bounded() {
        let mut data = b"hello".to_vec();
        for _ in 0..10 {
            data = gz(&data);
        }
        let mut budget = Budget::new(Limits::default());
        let (files, errors) = expand(
            InputFile {
                name: "deep.gz".into(),
                data,
            },
            &mut budget,
            0,
        );
        assert!(files.is_empty());
        assert!(errors[0].1.contains("nested more than"), "{:?}", errors);
    }

    #[test]
    fn truncated_gzip_reports_the_file() {
        let mut data = gz(&vec![7u8; 100_000]);
        data.truncate(data.len() / 2);
        let mut budget = Budget::new(Limits::default());
        let (_, errors) = expand(
            InputFile {
                name: "log.txt.gz".into(),
                data,
            },
            &mut budget,
            0,
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].1.starts_with("log.txt.gz:"), "{:?}", errors);
    }

    #[test]
    fn names_of_entries_carry_the_archive() {
        assert_eq!(join("d.zip", "./a/b.txt"), "d.zip/a/b.txt");
        assert_eq!(strip_gz_suffix("dump.tgz"), "dump.tar");
        assert_eq!(strip_gz_suffix("host.xplane.pb.gz"), "host.xplane.pb");
    }
}
