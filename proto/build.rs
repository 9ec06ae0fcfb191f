//! Compiles every `.proto` under `protos/` with protox (pure Rust, no system
//! `protoc`) and generates the prost types into `OUT_DIR`.

use std::path::{Path, PathBuf};

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new("protos");
    println!("cargo:rerun-if-changed=protos");
    let mut files = Vec::new();
    collect_protos(root, &mut files)?;
    files.sort();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let descriptors = protox::compile(&files, [root])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
