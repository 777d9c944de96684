//! Every keeper is forked from one long-lived thread.
//!
//! The keeper asks for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`), so that nothing
//! outlives a killed ARIA. Linux sends that signal when the parent *thread* exits, not the
//! process: a keeper forked from a short-lived thread (a blocking-pool worker retired after a
//! quiet minute, a pipeline stage started from a helper thread) would be killed mid-run. This
//! thread never exits, so the signal fires only when ARIA's process does.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread;

type Job = (Command, Sender<io::Result<Child>>);

/// Spawns `cmd` on the keeper thread and drops it there once spawned (closing the parent's
/// copies of the child's stdio ends).
pub(crate) fn spawn(cmd: Command) -> io::Result<Child> {
    static THREAD: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    let sender = THREAD.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = thread::Builder::new().name("aria-sandbox-spawner".into()).spawn(move || {
            for (mut cmd, reply) in rx {
                let spawned = cmd.spawn();
                drop(cmd);
                let _ = reply.send(spawned);
            }
        });
        started.ok().map(|_| Mutex::new(tx))
    });
    let Some(sender) = sender else {
        return Err(io::Error::other("the sandbox's spawner thread could not be started"));
    };
    let (reply_tx, reply_rx) = mpsc::channel();
    let sent = sender.lock().unwrap_or_else(PoisonError::into_inner).send((cmd, reply_tx));
    if sent.is_err() {
        return Err(io::Error::other("the sandbox's spawner thread is gone"));
    }
    reply_rx
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("the sandbox's spawner thread is gone")))
}
