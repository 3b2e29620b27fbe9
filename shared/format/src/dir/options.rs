//! What a save is asked for: the condition on what is stored ([`Expect`]) and how hard it works
//! to survive power loss ([`Durability`]).

use std::fmt;

/// What a save expects to find stored for the Task's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expect {
    /// Anything: an unconditional upsert.
    #[default]
    Any,
    /// No Task with this id yet (create if absent).
    Absent,
    /// The Task at exactly this version.
    Version(u64),
}

impl Expect {
    /// Whether a store holding `current` (the stored version; `None`: no Task) satisfies it.
    pub fn holds(self, current: Option<u64>) -> bool {
        match self {
            Expect::Any => true,
            Expect::Absent => current.is_none(),
            Expect::Version(v) => current == Some(v),
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Any => f.write_str("any version"),
            Expect::Absent => f.write_str("no task"),
            Expect::Version(v) => write!(f, "version {v}"),
        }
    }
}

/// How hard a save works to survive power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Flush the temp file's data before the rename and the directory after it: an
    /// acknowledged save survives a crash of the process and of the machine.
    #[default]
    Full,
    /// Skip both flushes: an acknowledged save survives a crash of the process (the rename is
    /// still atomic) but may be lost, as a whole, if the machine loses power.
    Relaxed,
}
