//! Each check's result on the tree *before* the edit, so the governed
//! workflow ([`crate::workflow`]) restores only when the edit turned a passing check into a
//! failing one.
//!
//! The loop takes the baseline right after the snapshot that starts a repository's round of
//! edits, before the write runs: the snapshot and the baseline see the same tree. Running
//! every check before every round would double the time a small edit takes, so results are
//! remembered by the tree's state ([`crate::workflow::Governor::state`], the git tree id a
//! snapshot records) for [`FRESH_FOR`]: after a restore the tree is the one the baseline
//! saw, and after a commit it is the one the checks just passed on, so a second round usually
//! runs nothing before its edit. A result that says a check *could not run* is never
//! remembered: installing the program is the fix, and it must show at once.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::workflow::{CheckOutcome, CheckStatus, Governor};

/// How long a remembered check result stands for its tree: what the tree id does not cover
/// (ignored files, installed programs) may change meanwhile.
pub const FRESH_FOR: Duration = Duration::from_secs(10 * 60);

/// At most this many results are remembered; the oldest go first.
const MAX_REMEMBERED: usize = 256;

/// Recent check results, by repository, tree state and check. One per agent, shared by its
/// runs; cheap to clone into a blocking task behind an `Arc`.
#[derive(Debug, Default)]
pub struct CheckMemory {
    results: Mutex<HashMap<Key, (Instant, CheckOutcome)>>,
}

/// (repository, state, check).
type Key = (String, String, String);

impl CheckMemory {
    /// Remembers `outcomes`, run on `repository` in `state`, at `now`. Results that say a check
    /// could not run are left out (see the module docs).
    pub fn remember(&self, repository: &str, state: &str, outcomes: &[CheckOutcome], now: Instant) {
        let mut results = self.results.lock().unwrap_or_else(PoisonError::into_inner);
        results.retain(|_, (at, _)| now.saturating_duration_since(*at) < FRESH_FOR);
        for o in outcomes.iter().filter(|o| o.status != CheckStatus::CouldNotRun) {
            let key = (repository.to_owned(), state.to_owned(), o.profile.clone());
            results.insert(key, (now, o.clone()));
        }
        while results.len() > MAX_REMEMBERED {
            let Some(oldest) =
                results.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone())
            else {
                break;
            };
            results.remove(&oldest);
        }
    }

    /// The result of `check` on `repository` in `state`, if one was remembered less than
    /// [`FRESH_FOR`] before `now`.
    pub fn recall(
        &self,
        repository: &str,
        state: &str,
        check: &str,
        now: Instant,
    ) -> Option<CheckOutcome> {
        let results = self.results.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (repository.to_owned(), state.to_owned(), check.to_owned());
        let (at, outcome) = results.get(&key)?;
        (now.saturating_duration_since(*at) < FRESH_FOR).then(|| outcome.clone())
    }
}

/// Each check's result on a repository before the edit. Audited as `workflow.baseline`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Baseline {
    pub repository: String,
    /// The tree state it was taken on, when the governor can tell.
    pub state: Option<String>,
    /// The results, in check order (a check missing here is not known).
    pub checks: Vec<CheckOutcome>,
    /// Whether they were remembered from an earlier run of the checks on the same tree
    /// instead of run now.
    pub reused: bool,
    /// Why the checks did not run before the edit, when they did not (and were not
    /// remembered): every check's result before is then unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl Baseline {
    /// The status of `check` before the edit, if known.
    pub fn status_of(&self, check: &str) -> Option<CheckStatus> {
        self.checks.iter().find(|c| c.profile == check).map(|c| c.status)
    }
}

/// Each check's result on `repository` as it is now (before the edit): remembered results
/// for this tree state when every check has one, else every check run now — unless
/// `may_run` says why they may not run (`Err`), when the results are left unknown. `None`
/// when the repository has no checks. Blocking.
pub fn baseline(
    governor: &dyn Governor,
    memory: &CheckMemory,
    repository: &str,
    session: &str,
    may_run: Result<(), String>,
) -> Option<Baseline> {
    let planned = governor.plan(repository);
    if planned.is_empty() {
        return None;
    }
    let state = governor.state(repository);
    let now = Instant::now();
    let remembered: Option<Vec<CheckOutcome>> = state.as_deref().and_then(|s| {
        planned.iter().map(|p| memory.recall(repository, s, &p.profile, now)).collect()
    });
    let mut taken = Baseline {
        repository: repository.to_owned(),
        state: state.clone(),
        checks: Vec::new(),
        reused: false,
        not_run: None,
    };
    match (remembered, may_run) {
        (Some(checks), _) => {
            taken.checks = checks;
            taken.reused = true;
        }
        (None, Err(why)) => taken.not_run = Some(why),
        (None, Ok(())) => {
            taken.checks = governor.check(repository, session, &mut |_| true);
            if let Some(state) = &state {
                memory.remember(repository, state, &taken.checks, Instant::now());
            }
        }
    }
    Some(taken)
}
