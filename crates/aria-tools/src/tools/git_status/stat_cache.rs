//! ARIA's private stat cache for `git_status`: a copy of the user's index that status may
//! refresh, so the user's own index is never written.
//!
//! The index remembers each file's stat data (size, times, inode); when a file's stat data no
//! longer matches (after a `touch`, a checkout of identical content, a tool that rewrites
//! files unchanged), status must read and hash the file to know it is unchanged. `git status`
//! then writes the refreshed stat data back into the index, so it pays once; libgit2 does so
//! only when asked to (`GIT_STATUS_OPT_UPDATE_INDEX`), and writing the user's index behind
//! their back is not ARIA's to do. So status runs against a copy, kept in the git directory as
//! `aria/status-index-<key>`, that libgit2 refreshes in place; 100,000 touched files cost
//! seconds once instead of on every call (`benches/git.rs`).
//!
//! The key is a digest of the user's index file's identity (inode, size, modification and
//! change times, trailing checksum): any write of the index by git or libgit2 replaces the file
//! and changes it, so a copy is only ever used for the exact index it was made from, and its
//! entries (what is staged, conflicts) are the user's. The copy keeps the original's
//! modification time, so libgit2's racy-entry check (a file changed in the same instant the
//! index was written) judges it as it would the original.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use git2::{Index, ObjectType, Oid, Repository};

/// The directory inside the git directory that holds ARIA's files.
const DIR: &str = "aria";
const PREFIX: &str = "status-index-";

/// Points `repo` at the private copy of its index (made now if there is none for the current
/// index). `None` when there is no index yet or the copy cannot be made (a read-only git
/// directory): the caller then reads the user's index as it is.
pub(super) fn attach(repo: &Repository) -> Option<PathBuf> {
    let gitdir = repo.path();
    let user = gitdir.join("index");
    let key = key(&user)?;
    let dir = gitdir.join(DIR);
    let cache = dir.join(format!("{PREFIX}{key}"));
    if !cache.is_file() {
        copy(&user, &dir, &cache, &key)?;
    }
    let mut index = Index::open(&cache).ok()?;
    repo.set_index(&mut index).ok()?;
    Some(cache)
}

/// A digest of what identifies the user's index file right now.
fn key(index: &Path) -> Option<String> {
    let meta = fs::metadata(index).ok()?;
    let mut trailer = [0u8; 20];
    if meta.len() >= 20 {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(index).ok()?;
        f.seek(SeekFrom::End(-20)).ok()?;
        f.read_exact(&mut trailer).ok()?;
    }
    let identity = format!(
        "{} {} {} {}.{} {}.{} {:?}",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        trailer
    );
    let digest = Oid::hash_object(ObjectType::Blob, identity.as_bytes()).ok()?;
    Some(digest.to_string()[..20].to_owned())
}

/// Copies the user's index to `cache` (through a temporary file and a rename, so no reader
/// sees half a copy), keeping its modification time; removes copies of older indexes.
fn copy(user: &Path, dir: &Path, cache: &Path, key: &str) -> Option<()> {
    fs::create_dir_all(dir).ok()?;
    let tmp = dir.join(format!("{PREFIX}{key}.{}.tmp", std::process::id()));
    let made = (|| {
        fs::copy(user, &tmp).ok()?;
        let modified = fs::metadata(user).ok()?.modified().ok()?;
        fs::File::options().write(true).open(&tmp).ok()?.set_modified(modified).ok()?;
        // The index changed while it was copied: the copy may not be the one `key` names.
        if self::key(user)?.as_str() != key {
            return None;
        }
        fs::rename(&tmp, cache).ok()
    })();
    if made.is_none() {
        let _ = fs::remove_file(&tmp);
        return None;
    }
    remove_stale(dir, cache);
    Some(())
}

/// Copies made for earlier versions of the index (and their leftovers) are never used again.
fn remove_stale(dir: &Path, keep: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(PREFIX);
        if ours && path != keep && !path.to_string_lossy().ends_with(".lock") {
            let _ = fs::remove_file(&path);
        }
    }
}
