//! The decision for one tool call: tier × approval mode × dry run → allow, ask, or refuse.
//! A pure table, so every combination is tested.

use aria_api::{ApprovalMode, Tier};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Refuse(String),
    /// `--dry-run`: describe the call, change nothing.
    DryRun,
}

/// `snapshots` says whether a recoverable write is really snapshotted before it runs. Without a
/// snapshot there is nothing to roll back to, so `governed` mode asks for it like any other
/// change instead of letting it through: a write may skip the question only because it can be
/// undone.
pub fn decide(tier: Tier, mode: ApprovalMode, dry_run: bool, snapshots: bool) -> Decision {
    if tier == Tier::Blocked {
        return Decision::Refuse(
            "this action is blocked by ARIA's policy and never runs; do it by hand if you really mean it".into(),
        );
    }
    if tier == Tier::Read {
        return Decision::Allow;
    }
    if mode == ApprovalMode::ReadOnly {
        return Decision::Refuse(format!(
            "the session is in read_only mode and this action is {}; rerun with --mode governed to allow changes",
            tier.as_str()
        ));
    }
    if dry_run {
        return Decision::DryRun;
    }
    match (mode, tier) {
        (ApprovalMode::Governed, Tier::RecoverableWrite) if snapshots => Decision::Allow,
        _ => Decision::Ask,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalMode::*;
    use Tier::*;

    #[test]
    fn the_whole_table() {
        let allow = Decision::Allow;
        let ask = Decision::Ask;
        let cases = [
            (Read, Governed, false, allow.clone()),
            (Read, Supervised, false, allow.clone()),
            (Read, ReadOnly, false, allow.clone()),
            (Read, Governed, true, allow.clone()),
            (RecoverableWrite, Governed, false, allow.clone()),
            (RecoverableWrite, Supervised, false, ask.clone()),
            (Irreversible, Governed, false, ask.clone()),
            (Irreversible, Supervised, false, ask.clone()),
            (RecoverableWrite, Governed, true, Decision::DryRun),
            (Irreversible, Supervised, true, Decision::DryRun),
        ];
        for (tier, mode, dry, want) in cases {
            assert_eq!(decide(tier, mode, dry, true), want, "{tier:?} {mode:?} dry={dry}");
        }
        for mode in [Governed, Supervised, ReadOnly] {
            for dry in [false, true] {
                assert!(matches!(decide(Blocked, mode, dry, true), Decision::Refuse(_)));
            }
        }
        assert!(
            matches!(decide(RecoverableWrite, ReadOnly, false, true), Decision::Refuse(m) if m.contains("read_only"))
        );
        assert!(matches!(decide(Irreversible, ReadOnly, true, true), Decision::Refuse(_)));
    }

    #[test]
    fn without_snapshots_a_recoverable_write_asks_even_in_governed_mode() {
        assert_eq!(decide(RecoverableWrite, Governed, false, false), Decision::Ask);
        assert_eq!(decide(RecoverableWrite, Supervised, false, false), Decision::Ask);
        assert_eq!(decide(Read, Governed, false, false), Decision::Allow);
        assert_eq!(decide(RecoverableWrite, Governed, true, false), Decision::DryRun);
        assert!(matches!(decide(Blocked, Governed, false, false), Decision::Refuse(_)));
    }
}
