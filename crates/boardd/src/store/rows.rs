//! The rows both engines keep beside the board's own types: members'
//! credentials, the tokens the lead issued, and budgets with what they came to.
//!
//! Only a credential's SHA-256 digest is kept, never the credential: a copy of
//! the database (a backup, a bug report) vouches for nobody. A member has one
//! row, which each credential `register` issues replaces: the one before is
//! revoked. A token is kept the same way; a name has at most one per team.
//!
//! A budget is keyed by its scope and period as JSON, which is what names it on
//! the wire; its row holds the budget as the wire has it, and beside it what it
//! came to ([`BudgetMarks`]), so that an exhausted budget is still exhausted
//! after a restart and the lead is not told twice.

use serde::{Deserialize, Serialize};
use teamboard_board::BudgetMarks;
use teamboard_protocol::spend::{Amounts, Budget};

/// A member's current credential, as its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRow {
    pub team: String,
    pub name: String,
    pub digest: [u8; 32],
}

/// A name's token, as its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub team: String,
    pub name: String,
    pub digest: [u8; 32],
    /// Milliseconds since the Unix epoch.
    pub created_ms: i64,
}

/// What a batch did to the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenChange {
    Put(TokenRow),
    Revoke { team: String, name: String },
}

/// A budget's row. A row written before the marks were kept reads as a
/// budget with none.
#[derive(Serialize, Deserialize)]
pub(super) struct BudgetRow {
    #[serde(flatten)]
    budget: Budget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refused: Option<Amounts>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    warned: bool,
}

impl BudgetRow {
    pub fn new(budget: &Budget, marks: &BudgetMarks) -> BudgetRow {
        BudgetRow {
            budget: budget.clone(),
            refused: marks.refused,
            warned: marks.warned,
        }
    }

    pub fn into_parts(self) -> (Budget, BudgetMarks) {
        let marks = BudgetMarks {
            refused: self.refused,
            warned: self.warned,
        };
        (self.budget, marks)
    }
}
