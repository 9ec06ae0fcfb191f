//! Turning what the user gives (picked files, a picked folder, a drop of
//! files and folders, pasted text, the embedded example) into named inputs
//! for the worker. No bytes are read here: files stay `Blob` handles the
//! worker reads itself; only bytes the page already owns become buffers.

use js_sys::{Array, ArrayBuffer, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, DataTransfer, File, FileList, FileSystemDirectoryEntry, FileSystemDirectoryReader,
    FileSystemEntry, FileSystemFileEntry,
};

/// One input for the worker, in the order the user gave them.
#[derive(Clone)]
pub struct PageInput {
    /// Path relative to what was given (`dump/module_0001.txt`).
    pub name: String,
    pub size_bytes: u64,
    pub payload: Payload,
}

#[derive(Clone)]
pub enum Payload {
    /// A file on the user's disk; the worker reads it.
    Blob(Blob),
    /// Bytes owned by the page, moved (transferred) to the worker.
    Bytes(ArrayBuffer),
}

impl PageInput {
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Self {
        let buffer = Uint8Array::from(bytes).buffer();
        PageInput {
            name: name.to_string(),
            size_bytes: bytes.len() as u64,
            payload: Payload::Bytes(buffer),
        }
    }

    fn from_file(name: String, file: File) -> Self {
        let size_bytes = file.size() as u64;
        PageInput {
            name,
            size_bytes,
            payload: Payload::Blob(file.into()),
        }
    }
}

/// Files from an `<input type=file>`; a folder picker (`webkitdirectory`)
/// gives each file its path inside the folder.
pub fn from_file_list(list: &FileList) -> Vec<PageInput> {
    (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|file| {
            let relative = Reflect::get(&file, &JsValue::from_str("webkitRelativePath"))
                .ok()
                .and_then(|v| v.as_string())
                .filter(|p| !p.is_empty());
            let name = relative.unwrap_or_else(|| file.name());
            PageInput::from_file(name, file)
        })
        .filter(|input| !is_hidden_path(&input.name))
        .collect()
}

/// What a drop carries, captured synchronously: the browser empties the
/// `DataTransfer` once the event handler returns, so entries are taken now
/// and walked later by [`walk_dropped`].
pub enum Dropped {
    Entry(FileSystemEntry),
    File(File),
}

pub fn capture_drop(transfer: &DataTransfer) -> Vec<Dropped> {
    let items = transfer.items();
    let mut dropped = Vec::new();
    for i in 0..items.length() {
        let Some(item) = items.get(i) else { continue };
        if item.kind() != "file" {
            continue;
        }
        match item.webkit_get_as_entry() {
            Ok(Some(entry)) => dropped.push(Dropped::Entry(entry)),
            _ => {
                if let Ok(Some(file)) = item.get_as_file() {
                    dropped.push(Dropped::File(file));
                }
            }
        }
    }
    if dropped.is_empty() {
        // Browsers without `items` still fill `files`.
        if let Some(files) = transfer.files() {
            dropped.extend(
                (0..files.length())
                    .filter_map(|i| files.get(i))
                    .map(Dropped::File),
            );
        }
    }
    dropped
}

/// Walks dropped folders recursively. Entries that cannot be read are
/// returned as `(path, message)` so the page can name them.
pub async fn walk_dropped(dropped: Vec<Dropped>) -> (Vec<PageInput>, Vec<(String, String)>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    let mut stack: Vec<FileSystemEntry> = Vec::new();
    for item in dropped {
        match item {
            Dropped::File(file) => inputs.push(PageInput::from_file(file.name(), file)),
            Dropped::Entry(entry) => stack.push(entry),
        }
    }
    // Depth-first, keeping each folder's listing order.
    stack.reverse();
    while let Some(entry) = stack.pop() {
        let path = entry.full_path().trim_start_matches('/').to_string();
        if is_hidden_path(&path) {
            continue;
        }
        if entry.is_file() {
            match entry_file(entry.unchecked_ref()).await {
                Ok(file) => inputs.push(PageInput::from_file(path, file)),
                Err(message) => errors.push((path, message)),
            }
        } else if entry.is_directory() {
            let directory: &FileSystemDirectoryEntry = entry.unchecked_ref();
            match read_directory(&directory.create_reader()).await {
                Ok(children) => stack.extend(children.into_iter().rev()),
                Err(message) => errors.push((path, message)),
            }
        }
    }
    (inputs, errors)
}

/// Dotfiles inside folders (`.DS_Store`, `._x` resource forks, `.git/`) are
/// never inputs.
fn is_hidden_path(path: &str) -> bool {
    path.split('/')
        .any(|part| part.starts_with('.') && part.len() > 1 && part != "..")
}

async fn entry_file(entry: &FileSystemFileEntry) -> Result<File, String> {
    let promise = Promise::new(&mut |resolve, reject| {
        entry.file_with_callback_and_callback(&resolve, &reject);
    });
    JsFuture::from(promise)
        .await
        .map(|v| v.unchecked_into())
        .map_err(|e| format!("the browser could not open it: {}", describe(&e)))
}

/// All entries of a folder: `readEntries` returns them in batches until an
/// empty one.
async fn read_directory(
    reader: &FileSystemDirectoryReader,
) -> Result<Vec<FileSystemEntry>, String> {
    let mut entries = Vec::new();
    loop {
        let mut call_error = None;
        let promise = Promise::new(&mut |resolve, reject| {
            if let Err(e) = reader.read_entries_with_callback_and_callback(&resolve, &reject) {
                call_error = Some(e);
            }
        });
        if let Some(e) = call_error {
            return Err(format!("the folder could not be listed: {}", describe(&e)));
        }
        let batch: Array = JsFuture::from(promise)
            .await
            .map_err(|e| format!("the folder could not be listed: {}", describe(&e)))?
            .unchecked_into();
        if batch.length() == 0 {
            return Ok(entries);
        }
        entries.extend(batch.iter().map(|v| v.unchecked_into::<FileSystemEntry>()));
    }
}

fn describe(value: &JsValue) -> String {
    Reflect::get(value, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| value.as_string())
        .unwrap_or_else(|| "unknown error".to_string())
}

#[cfg(test)]
mod tests {
    use super::is_hidden_path;

    #[test]
    fn dotfiles_in_folders_are_skipped() {
        assert!(is_hidden_path("dump/.DS_Store"));
        assert!(is_hidden_path(".git/config"));
        assert!(!is_hidden_path(
            "dump/module_0000.jit_f.after_optimizations.txt"
        ));
        assert!(!is_hidden_path("oom.log"));
    }
}
