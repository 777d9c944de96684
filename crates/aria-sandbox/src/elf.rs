//! What a program needs in order to start: its ELF interpreter (`PT_INTERP`, e.g.
//! `/lib64/ld-linux-x86-64.so.2`) or, for a `#!` script, the interpreter named on its first
//! line. The kernel opens these with execute intent during `execve`, so the exec allowlist must
//! include them.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes read from the start of a program to find its interpreter.
const HEAD: usize = 4096;

/// The interpreter the kernel loads to start `program`, canonicalised; `None` for a static
/// executable or a file that is neither ELF nor a `#!` script.
pub(crate) fn interpreter(program: &Path) -> Option<PathBuf> {
    let mut head = Vec::with_capacity(HEAD);
    File::open(program).ok()?.take(HEAD as u64).read_to_end(&mut head).ok()?;
    let path = if head.starts_with(b"#!") { shebang(&head)? } else { elf_interp(&head, program)? };
    path.canonicalize().ok()
}

/// The interpreter of a `#!` line: the first word after `#!`.
fn shebang(head: &[u8]) -> Option<PathBuf> {
    let line = head[2..].split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let word = text.split_whitespace().next()?;
    word.starts_with('/').then(|| PathBuf::from(word))
}

/// `PT_INTERP` of a 64- or 32-bit little-endian ELF file. The program headers are usually
/// within the first page; if not, the file is read again at their offset.
fn elf_interp(head: &[u8], program: &Path) -> Option<PathBuf> {
    if head.len() < 52 || &head[..4] != b"\x7fELF" || head[5] != 1 {
        return None;
    }
    let wide = match head[4] {
        2 => true,
        1 => false,
        _ => return None,
    };
    let u16_at = |b: &[u8], o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let (phoff, phentsize, phnum) = if wide {
        (u64_at(head, 0x20)?, u16_at(head, 0x36)?, u16_at(head, 0x38)?)
    } else {
        (u64::from(u32_at(head, 0x1C)?), u16_at(head, 0x2A)?, u16_at(head, 0x2C)?)
    };
    let table_len = usize::from(phentsize) * usize::from(phnum);
    let phoff = usize::try_from(phoff).ok()?;
    let table = read_range(head, program, phoff, table_len)?;
    for i in 0..usize::from(phnum) {
        let entry = &table[i * usize::from(phentsize)..];
        const PT_INTERP: u32 = 3;
        if u32_at(entry, 0)? != PT_INTERP {
            continue;
        }
        let (offset, size) = if wide {
            (u64_at(entry, 0x08)?, u64_at(entry, 0x20)?)
        } else {
            (u64::from(u32_at(entry, 0x04)?), u64::from(u32_at(entry, 0x10)?))
        };
        let size = usize::try_from(size).ok().filter(|s| *s > 1 && *s <= 4096)?;
        let bytes = read_range(head, program, usize::try_from(offset).ok()?, size)?;
        let text = bytes.split(|b| *b == 0).next()?;
        let text = std::str::from_utf8(text).ok()?;
        return text.starts_with('/').then(|| PathBuf::from(text));
    }
    None
}

/// `len` bytes at `offset`: from `head` when they are in it, else read from the file.
fn read_range(head: &[u8], program: &Path, offset: usize, len: usize) -> Option<Vec<u8>> {
    if let Some(slice) = head.get(offset..offset.checked_add(len)?) {
        return Some(slice.to_vec());
    }
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(program).ok()?;
    f.seek(SeekFrom::Start(offset as u64)).ok()?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_names_the_dynamic_loader() {
        let interp = interpreter(Path::new("/bin/ls")).expect("ls is dynamically linked");
        let name = interp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("ld-"), "{interp:?}");
    }

    #[test]
    fn a_script_names_its_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh -e\necho hi\n").unwrap();
        assert_eq!(interpreter(&script), Path::new("/bin/sh").canonicalize().ok());
    }

    #[test]
    fn other_files_have_none() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("data");
        std::fs::write(&f, "\x7fELF\x02\x01 truncated").unwrap();
        assert_eq!(interpreter(&f), None);
        std::fs::write(&f, "plain text").unwrap();
        assert_eq!(interpreter(&f), None);
    }
}
