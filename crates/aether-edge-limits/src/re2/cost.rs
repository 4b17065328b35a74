//! What a sub-expression costs in RE2's flattened program: the unit the
//! walk adds up and each class reports (see the parent module's comment for
//! the bound).

/// What a sub-expression adds to RE2's flattened program, at most:
/// `instructions` that consume or mark input (they stay), and `nop_edges`,
/// the edges of its `Alt`s (and empty matches) that may lead to an
/// instruction flattening makes a list of its own, and so become a `Nop`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cost {
    pub(super) instructions: u64,
    pub(super) nop_edges: u64,
}

impl Cost {
    pub(super) const fn new(instructions: u64, nop_edges: u64) -> Self {
        Self {
            instructions,
            nop_edges,
        }
    }

    pub(super) fn plus(self, other: Self) -> Self {
        Self::new(
            self.instructions.saturating_add(other.instructions),
            self.nop_edges.saturating_add(other.nop_edges),
        )
    }

    pub(super) fn times(self, count: u32) -> Self {
        Self::new(
            self.instructions.saturating_mul(count.into()),
            self.nop_edges.saturating_mul(count.into()),
        )
    }

    /// The bound of the flattened program (see the parent module's comment).
    pub(super) fn total(self) -> u64 {
        self.instructions.saturating_add(self.nop_edges).saturating_add(6)
    }
}

/// The `Alt` of a `*`, `+` or `?`: both its edges (into the loop or the
/// optional part, and out of it) may lead to a list of its own.
pub(super) const ALT: Cost = Cost::new(0, 2);
