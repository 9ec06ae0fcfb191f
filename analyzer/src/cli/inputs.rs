//! What the command line hands the analyzer: files read whole, standard
//! input (`-`), and XProf profiles opened for reading by slices (as the
//! page's worker does), so a multi-GB profile costs the few planes it needs,
//! not its size in memory.

use oomscope_analyzer::{InputFile, InputSource, ReadAt};
use std::io::Read;
use std::path::Path;

/// The name standard input gets in the report (`oomscope analyze -`).
pub const STDIN_NAME: &str = "stdin";

#[derive(Default)]
pub struct Inputs {
    pub files: Vec<InputFile>,
    pub sources: Vec<InputSource>,
    /// Paths that could not be read (`path: why`); the others still load.
    pub unreadable: Vec<(String, String)>,
}

/// An open file read at offsets.
struct FileSource {
    file: std::sync::Mutex<std::fs::File>,
    len: u64,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("file lock poisoned"))?;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }
}

impl Inputs {
    /// Adds what the user named: `-` (standard input), a file, or every file
    /// below a folder. A folder's files are named `folder/…` so they count as
    /// part of it; an entry that cannot be read is recorded and the walk goes on.
    pub fn add(&mut self, argument: &str) {
        if argument == "-" {
            let mut data = Vec::new();
            match std::io::stdin().lock().read_to_end(&mut data) {
                Ok(_) => self.files.push(InputFile {
                    name: STDIN_NAME.into(),
                    data,
                }),
                Err(e) => self.unreadable.push((STDIN_NAME.into(), e.to_string())),
            }
            return;
        }
        let path = Path::new(argument);
        self.walk(path, path);
    }

    fn walk(&mut self, root: &Path, path: &Path) {
        let is_dir = match std::fs::metadata(path) {
            Ok(meta) => meta.is_dir(),
            Err(e) => return self.unreadable(path, e),
        };
        if is_dir {
            let entries = match std::fs::read_dir(path) {
                Ok(entries) => entries,
                Err(e) => return self.unreadable(path, e),
            };
            let mut children = Vec::new();
            for entry in entries {
                match entry {
                    Ok(entry) => children.push(entry.path()),
                    Err(e) => self.unreadable(path, e),
                }
            }
            children.sort();
            for child in children {
                self.walk(root, &child);
            }
            return;
        }
        let name = input_name(root, path);
        // Profiles and memory snapshots (pickles) can be gigabytes: read by
        // slices, as their readers read.
        let added = if oomscope_analyzer::readers::reads_by_slices(&name) {
            std::fs::File::open(path).and_then(|file| {
                let len = file.metadata()?.len();
                self.sources.push(InputSource {
                    name,
                    source: Box::new(FileSource {
                        file: std::sync::Mutex::new(file),
                        len,
                    }),
                });
                Ok(())
            })
        } else {
            std::fs::read(path).map(|data| self.files.push(InputFile { name, data }))
        };
        if let Err(e) = added {
            self.unreadable(path, e);
        }
    }

    fn unreadable(&mut self, path: &Path, e: std::io::Error) {
        self.unreadable
            .push((path.display().to_string(), e.to_string()));
    }
}

/// A file's name in the report: its own name when named directly, else
/// `folder/relative/path` under the folder the user named.
fn input_name(root: &Path, path: &Path) -> String {
    if path == root {
        return path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
    }
    let base = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".".into());
    let relative = path.strip_prefix(root).unwrap_or(path);
    format!("{base}/{}", relative.display())
}
