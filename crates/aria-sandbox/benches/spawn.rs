//! What the sandbox costs per program: `true` run N times plainly and through the sandbox
//! (private temp dir, Landlock ruleset, seccomp, rlimits, capture threads). Prints figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;
use std::time::Instant;

use aria_sandbox::{Sandbox, SpawnSpec};

const RUNS: u32 = 200;

fn main() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();

    let start = Instant::now();
    for _ in 0..RUNS {
        let status = Command::new("/bin/true").current_dir(&root).status().unwrap();
        assert!(status.success());
    }
    let plain = start.elapsed() / RUNS;

    let start = Instant::now();
    for _ in 0..RUNS {
        let spec = SpawnSpec::new(vec!["true".into()], root.clone(), vec![root.clone()]);
        let out = Sandbox::run(spec).unwrap();
        assert!(out.exit.success());
    }
    let sandboxed = start.elapsed() / RUNS;

    println!("spawn `true` x{RUNS}: plain {plain:?}/run, sandboxed {sandboxed:?}/run");
    println!("protections on this machine:\n{}", Sandbox::planned_protections(false));
}
