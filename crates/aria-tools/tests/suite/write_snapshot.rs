//! A picture of a directory tree (files with content, symlinks with targets, directories)
//! to prove a write changed nothing, or only what it should.

use std::fs;
use std::path::Path;

/// Every entry under `dir`, sorted: `(relative path, "file:<content>" | "link:<target>" | "dir")`.
pub fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&p).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link:{}", fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                stack.push(p);
                "dir".to_owned()
            } else {
                format!("file:{}", String::from_utf8_lossy(&fs::read(&p).unwrap()))
            };
            out.push((rel, what));
        }
    }
    out.sort();
    out
}
