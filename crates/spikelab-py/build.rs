//! The engine's build identity: a digest of every source the simulation is compiled from
//! (each workspace crate's `Cargo.toml` and `src/` tree, and `Cargo.lock`), exported as
//! `SPIKELAB_ENGINE_BUILD`. Python exposes it as `_core.__build__`; a sweep's fingerprint and
//! a Dask worker check include it, so results of one engine are never resumed, reused or mixed
//! with another's although the package version (`CARGO_PKG_VERSION`) is the same
//! (docs/results.md, "Resumable, crash-safe"). Same sources, same digest, on any machine: the files are
//! taken in path order with `/` separators, and their bytes as git checks them out.

use std::fs;
use std::path::{Path, PathBuf};

/// 64-bit FNV-1a: a change detector, not a security hash.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// A file: its path and length first, so that moving bytes between files changes the sum.
    fn file(&mut self, rel: &str, bytes: &[u8]) {
        self.update(rel.as_bytes());
        self.update(&[0]);
        self.update(&(bytes.len() as u64).to_le_bytes());
        self.update(bytes);
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let crates = manifest
        .parent()
        .expect("crates/spikelab-py sits in crates/");
    let root = crates.parent().expect("crates/ sits in the workspace");

    let mut files = Vec::new();
    let mut members: Vec<PathBuf> = fs::read_dir(crates)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    members.sort();
    for member in &members {
        files.push(member.join("Cargo.toml"));
        walk(&member.join("src"), &mut files);
        println!(
            "cargo:rerun-if-changed={}",
            member.join("Cargo.toml").display()
        );
        println!("cargo:rerun-if-changed={}", member.join("src").display());
    }
    let lock = root.join("Cargo.lock");
    files.push(lock.clone());
    println!("cargo:rerun-if-changed={}", lock.display());

    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (rel.join("/"), p)
        })
        .collect();
    named.sort();
    let mut digest = Digest::new();
    for (rel, path) in &named {
        let bytes = fs::read(path).unwrap_or_default();
        digest.file(rel, &bytes);
    }
    println!("cargo:rustc-env=SPIKELAB_ENGINE_BUILD={:016x}", digest.0);
}
