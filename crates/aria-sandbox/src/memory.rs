//! Process memory: what `aria serve` gives back once it is up, and again each
//! time it is idle.
//!
//! This crate is the workspace's one `unsafe` crate, so the two calls this needs
//! (`malloc_trim`, `madvise`) live here, each with its `// SAFETY:` reasoning.

/// Gives back the memory that start-up, and later whatever ran since the last call, left
/// behind but an idle daemon does not need (an always-on `aria serve` should stay small when
/// idle).
/// `aria serve` calls it once start-up is over and then after each periodic status collection
/// that finds no run in flight.
///
/// Start-up runs code from all over the 45 MB executable (configuration, SQLite and its
/// migrations, the tools' schemas, the router and its OpenAPI description, the HTTP
/// clients…), and the kernel maps the executable in 64 KiB windows around each page touched
/// (`fault_around_bytes`): about 25 MiB of code and read-only data stayed mapped, most of which
/// an idle daemon never runs again. Each later status collection runs about 0.5 MiB of code
/// and, by the same windows, maps about 10 MiB again. Two things are given back:
/// - the heap's free memory (`malloc_trim`): what start-up or a request allocated and freed;
/// - the executable's read-only mappings (code, read-only data), unmapped with
///   `MADV_DONTNEED`. Those pages are the file's own, unchanged (mappings holding private
///   copies, such as the relocated `.data.rel.ro`, are left alone), so nothing is lost: a page
///   the daemon runs again is mapped again on that access, from the page cache (a minor fault)
///   or from disk if the kernel dropped it. The pages stay in the page cache as cache, which
///   the kernel reclaims first when memory is short; the daemon's RSS no longer counts them.
///   What the idle daemon and each request run comes back on first use (bench/README.md,
///   `aria serve`: the first health request and the first streamed answer after it measured
///   no slower than without it).
///
/// `ARIA_SERVE_KEEP_STARTUP_MEMORY=1` skips it (to compare, or to rule it out).
pub fn release_unused_memory() {
    if std::env::var_os("ARIA_SERVE_KEEP_STARTUP_MEMORY").is_some_and(|v| v == "1") {
        return;
    }
    trim_heap();
    #[cfg(target_os = "linux")]
    if let Err(e) = unmap_executable_pages() {
        tracing::debug!("could not give back the start-up code pages: {e}");
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    // SAFETY: malloc_trim only returns free heap memory to the kernel; it takes the
    // allocator's locks like any allocation and is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

/// Unmaps the executable's read-only, file-backed pages (see the module's comment).
#[cfg(target_os = "linux")]
fn unmap_executable_pages() -> std::io::Result<()> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    // The executable is the file mapped where this function's code is.
    let here = unmap_executable_pages as *const () as usize;
    let mappings = parse(&smaps);
    let Some(exe) = mappings.iter().find(|m| m.start <= here && here < m.end) else {
        return Ok(());
    };
    let file = (exe.device.clone(), exe.inode);
    // Only the executable's own pages, only where it cannot have written (no `w`, and no
    // private copy of a page: `Anonymous: 0`).
    let unchanged: Vec<&Mapping> = mappings
        .iter()
        .filter(|m| (m.device.clone(), m.inode) == file && !m.writable && m.anonymous_kib == 0)
        .collect();
    for m in &unchanged {
        // SAFETY: the range is a whole mapping of the executable, read-only and without
        // any private (anonymous) page, so MADV_DONTNEED only drops page-table entries of
        // pages equal to the file's: the next access maps the same bytes again. No Rust
        // reference or object lives in these pages other than code and constants.
        let r = unsafe {
            libc::madvise(m.start as *mut libc::c_void, m.end - m.start, libc::MADV_DONTNEED)
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[derive(Debug)]
struct Mapping {
    start: usize,
    end: usize,
    writable: bool,
    device: String,
    inode: u64,
    anonymous_kib: u64,
}

/// The mappings of `/proc/self/smaps` with what [`unmap_executable_pages`] needs. A mapping
/// whose `Anonymous:` line is missing counts as holding private pages (left alone).
fn parse(smaps: &str) -> Vec<Mapping> {
    let mut mappings: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) =
                (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
        {
            let perms = words.next().unwrap_or("");
            let _offset = words.next();
            let device = words.next().unwrap_or("").to_owned();
            let inode = words.next().and_then(|i| i.parse().ok()).unwrap_or(0);
            mappings.push(Mapping {
                start,
                end,
                writable: perms.contains('w') || perms.contains('s'),
                device,
                inode,
                anonymous_kib: u64::MAX,
            });
        } else if first == "Anonymous:"
            && let Some(m) = mappings.last_mut()
        {
            m.anonymous_kib = words.next().and_then(|k| k.parse().ok()).unwrap_or(u64::MAX);
        }
    }
    // Anonymous memory has inode 0: never the executable.
    mappings.retain(|m| m.inode != 0);
    mappings
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_read_only_pages_of_a_file_without_private_copies() {
        let smaps = "\
55d0-55e0 r--p 00000000 fd:01 42 /usr/bin/aria
Size: 64 kB
Anonymous: 0 kB
55e0-55f0 r-xp 00010000 fd:01 42 /usr/bin/aria
Anonymous: 0 kB
55f0-5600 r--p 00020000 fd:01 42 /usr/bin/aria
Anonymous: 64 kB
5600-5610 rw-p 00030000 fd:01 42 /usr/bin/aria
Anonymous: 8 kB
7f00-7f10 rw-p 00000000 00:00 0
Anonymous: 64 kB
";
        let m = super::parse(smaps);
        assert_eq!(m.len(), 4);
        assert_eq!((m[1].start, m[1].end, m[1].inode), (0x55e0, 0x55f0, 42));
        assert!(!m[0].writable && m[0].anonymous_kib == 0);
        assert_eq!(m[2].anonymous_kib, 64);
        assert!(m[3].writable);
    }

    /// The test binary's own resident pages (kB): the `Rss:` of the mappings of the file
    /// that holds this function's code, the only pages [`super::release_unused_memory`]
    /// unmaps. Shared libraries are left out: their pages come and go with what the process
    /// runs and with the kernel's reclaim, which is noise to this measure.
    #[cfg(target_os = "linux")]
    fn executable_kib() -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let here = executable_kib as *const () as usize;
        let mappings = super::parse(&smaps);
        let Some(exe) = mappings.iter().find(|m| m.start <= here && here < m.end) else {
            return 0;
        };
        let file = (exe.device.clone(), exe.inode);
        let mut total = 0;
        let mut counting = false;
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or("");
            if let Some((start, _)) = first.split_once('-')
                && let Ok(start) = usize::from_str_radix(start, 16)
            {
                counting = mappings
                    .iter()
                    .any(|m| m.start == start && (m.device.clone(), m.inode) == file);
            } else if counting && first == "Rss:" {
                total += words.next().and_then(|k| k.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        total
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn giving_back_again_and_again_keeps_the_process_working() {
        let keep = std::env::var_os("ARIA_SERVE_KEEP_STARTUP_MEMORY").is_some_and(|v| v == "1");
        let mut first_after = None;
        for round in 0..5 {
            // Code and constants from all over the binary run again after each release.
            let text: String = (0..2_000).map(|i| format!("{i:x}-")).collect();
            let parsed = super::parse("1-2 r--p 0 fd:01 7 /x\nAnonymous: 0 kB\n");
            assert_eq!(parsed.len(), 1, "round {round}");
            assert!(text.contains("7cf-"), "round {round}");
            let before = executable_kib();
            super::release_unused_memory();
            let after = executable_kib();
            if keep {
                continue;
            }
            // The first release gives back what the test binary ran so far. What runs after
            // a release (its own tail, this measure) maps a few 64 KiB windows again, and the
            // relocated constants (private copies) stay, so "after" is never zero, and later
            // rounds, which run the same few pages, may give back nothing more.
            if round == 0 {
                assert!(after < before, "nothing given back: {before} kB then {after} kB");
            }
            // And releases do not leave a growing set behind: each one ends near the first.
            let first = *first_after.get_or_insert(after);
            assert!(
                after <= first + 256,
                "round {round}: {after} kB stay mapped after the release, {first} kB after the first"
            );
        }
    }
}
