//! `PathGuard::read_text`: the checks made on the file itself after the path was approved.

use std::fs;
use std::io::Write;
use std::process::Command;

use aria_tools::{DEFAULT_MAX_READ_BYTES, PathGuard, ReadError, SensitivePatterns};
use pretty_assertions::assert_eq;

use super::fixture::fixture;

#[test]
fn the_default_limit_is_ten_megabytes() {
    assert_eq!(DEFAULT_MAX_READ_BYTES, 10 * 1024 * 1024);
}

#[test]
fn reads_a_text_file() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("a/b.txt").unwrap();
    assert_eq!(g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap(), "hello");
    fs::write(fx.root.join("utf8.txt"), "größe ✓ 日本").unwrap();
    let r = g.resolve_existing("utf8.txt").unwrap();
    assert_eq!(g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap(), "größe ✓ 日本");
}

#[test]
fn files_over_the_limit_are_refused() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("a/b.txt").unwrap();
    let err = g.read_text(&r, 4).unwrap_err();
    assert!(matches!(err, ReadError::TooLarge { size: 5, max: 4, .. }), "{err:?}");
    assert!(err.is_refusal());
    assert_eq!(g.read_text(&r, 5).unwrap(), "hello");
}

#[test]
fn a_file_that_grew_after_the_check_is_still_capped() {
    let fx = fixture();
    let g = fx.guard();
    let path = fx.root.join("grow.txt");
    fs::write(&path, "tiny").unwrap();
    let r = g.resolve_existing("grow.txt").unwrap();
    fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&[b'x'; 100]).unwrap();
    let err = g.read_text(&r, 50).unwrap_err();
    assert!(matches!(err, ReadError::TooLarge { .. }), "{err:?}");
}

#[test]
fn a_nul_byte_in_the_first_8_kib_means_binary() {
    let fx = fixture();
    let g = fx.guard();
    let mut bytes = vec![b'a'; 8191];
    bytes.push(0);
    fs::write(fx.root.join("bin.dat"), &bytes).unwrap();
    let r = g.resolve_existing("bin.dat").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::Binary { offset: 8191, .. }), "{err:?}");
    assert!(err.is_refusal());
    assert!(err.to_string().contains("binary"), "{err}");
}

#[test]
fn invalid_utf8_is_refused_with_its_offset() {
    let fx = fixture();
    let g = fx.guard();
    fs::write(fx.root.join("latin1.txt"), b"caf\xe9 au lait").unwrap();
    let r = g.resolve_existing("latin1.txt").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::NotUtf8 { offset: 3, .. }), "{err:?}");
    assert!(err.is_refusal());
}

#[test]
fn directories_are_not_read() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("a").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::IsADirectory { .. }), "{err:?}");
}

#[test]
fn fifos_are_refused_without_blocking() {
    let fx = fixture();
    let g = fx.guard();
    let fifo = fx.root.join("pipe");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let r = g.resolve_existing("pipe").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::NotRegular { .. }), "{err:?}");
    assert!(err.is_refusal());
}

#[test]
fn devices_are_refused() {
    let g = PathGuard::new(&["/dev".into()], SensitivePatterns::default()).unwrap();
    let r = g.resolve_existing("null").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::NotRegular { .. }), "{err:?}");
}

#[test]
fn a_file_replaced_after_the_check_is_refused() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("notes.txt").unwrap();
    // Another process swaps the file (a new inode) between check and use.
    let other = fx.root.join("other.txt");
    fs::write(&other, "swapped").unwrap();
    fs::rename(&other, fx.root.join("notes.txt")).unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::Changed { .. }), "{err:?}");
    assert!(err.is_refusal());
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_refused() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("notes.txt").unwrap();
    fs::remove_file(fx.root.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.root.join("notes.txt")).unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::Changed { .. }), "{err:?}");
}

/// The open itself is confined by the kernel (`openat2` beneath the root, no symlinks): a
/// directory on the way swapped for a link out of the root fails to open, even when what lies
/// outside is the very same inode (a hard link), which the inode re-check alone would pass.
#[test]
fn a_directory_swapped_for_a_link_out_of_the_root_is_refused_at_open() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("a/b.txt").unwrap();
    let elsewhere = fx.outside.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::hard_link(fx.root.join("a/b.txt"), elsewhere.join("b.txt")).unwrap();
    fs::rename(fx.root.join("a"), fx.root.join("a.old")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.root.join("a")).unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::Changed { .. }), "{err:?}");
}

#[test]
fn a_file_deleted_after_the_check_is_not_found() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_existing("notes.txt").unwrap();
    fs::remove_file(fx.root.join("notes.txt")).unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::NotFound { .. }), "{err:?}");
    assert!(!err.is_refusal());
}

#[test]
fn a_path_resolved_for_create_cannot_be_read() {
    let fx = fixture();
    let g = fx.guard();
    let r = g.resolve_for_create("new.txt").unwrap();
    fs::write(fx.root.join("new.txt"), "appeared later").unwrap();
    let err = g.read_text(&r, DEFAULT_MAX_READ_BYTES).unwrap_err();
    assert!(matches!(err, ReadError::NotFound { .. } | ReadError::Changed { .. }), "{err:?}");
}
