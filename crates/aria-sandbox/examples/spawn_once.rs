//! Runs `true` through the sandbox N times and prints where the time goes (start vs wait).
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::time::{Duration, Instant};
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (mut s, mut w, mut d) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        let spec =
            aria_sandbox::SpawnSpec::new(vec!["true".into()], root.clone(), vec![root.clone()]);
        let t = Instant::now();
        let r = aria_sandbox::Sandbox::start(spec).unwrap();
        s += t.elapsed();
        let t = Instant::now();
        let out = r.wait();
        w += t.elapsed();
        let t = Instant::now();
        drop(out);
        d += t.elapsed();
    }
    println!("start {:?}/run, wait {:?}/run", s / n as u32, w / n as u32);
}
