//! Policy enums shared by the classifier, the broker and the CLI.

use serde::{Deserialize, Serialize};

/// How dangerous one action is. Ordered from least to most dangerous, so `max` combines tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// Reads only; runs without asking.
    Read,
    /// Changes files that are snapshotted first; runs without asking in `governed` mode.
    RecoverableWrite,
    /// Cannot be undone; asks the user.
    Irreversible,
    /// Never runs.
    Blocked,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::RecoverableWrite => "recoverable-write",
            Tier::Irreversible => "irreversible",
            Tier::Blocked => "blocked",
        }
    }
}

/// How much the user wants to be asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Reads and recoverable writes run; irreversible actions ask; blocked never runs.
    #[default]
    Governed,
    /// Every write asks.
    Supervised,
    /// Only reads run.
    ReadOnly,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Governed => "governed",
            ApprovalMode::Supervised => "supervised",
            ApprovalMode::ReadOnly => "read_only",
        }
    }

    /// How strict the mode is: governed 0 < supervised 1 < read_only 2.
    pub fn strictness(self) -> u8 {
        match self {
            ApprovalMode::Governed => 0,
            ApprovalMode::Supervised => 1,
            ApprovalMode::ReadOnly => 2,
        }
    }

    /// The stricter of the two (what a narrower setting may choose, never a looser one).
    pub fn stricter(self, other: ApprovalMode) -> ApprovalMode {
        if other.strictness() > self.strictness() { other } else { self }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "governed" => ApprovalMode::Governed,
            "supervised" => ApprovalMode::Supervised,
            "read_only" | "read-only" | "readonly" => ApprovalMode::ReadOnly,
            _ => return None,
        })
    }
}
