//! What the sandbox costs per program: `true` run N times plainly and through the sandbox
//! (namespaces, mounts, Landlock ruleset, seccomp, rlimits, capture threads), for the read tier
//! (roots read-only, one exec), the write tier, and with the network grant (a network
//! namespace of its own with loopback up, the egress listener passed back to ARIA and its
//! proxy thread started). Prints the median and p90 of each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use aria_sandbox::{Sandbox, SpawnSpec};

const RUNS: usize = 200;

fn figures(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let p50 = samples[samples.len() / 2];
    let p90 = samples[samples.len() * 9 / 10];
    format!("p50 {p50:?}, p90 {p90:?}")
}

fn measure(mut run: impl FnMut()) -> String {
    for _ in 0..5 {
        run();
    }
    let samples = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect();
    figures(samples)
}

fn sandboxed(root: &Path, tweak: impl Fn(SpawnSpec) -> SpawnSpec) -> String {
    measure(|| {
        let spec = SpawnSpec::new(vec!["true".into()], root.to_path_buf(), vec![root.into()]);
        let out = Sandbox::run(tweak(spec)).unwrap();
        assert!(out.exit.success(), "{out:?}");
    })
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();

    let plain = measure(|| {
        let status = Command::new("/bin/true").current_dir(&root).status().unwrap();
        assert!(status.success());
    });
    println!("spawn `true` x{RUNS}");
    println!("  plain:                      {plain}");
    println!("  sandboxed, read tier:       {}", sandboxed(&root, |s| s));
    println!("  sandboxed, write tier:      {}", sandboxed(&root, SpawnSpec::writable));
    println!(
        "  sandboxed, network granted: {}",
        sandboxed(&root, |mut s| {
            s.network = true;
            s
        })
    );
    println!("protections on this machine:\n{}", Sandbox::planned_protections(false));
}
