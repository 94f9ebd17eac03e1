//! Ledger accounts.

use std::fmt;
use std::str::FromStr;

use malipo_core::{AccountId, Currency, MinorUnit, Mode, OrgId, Timestamp};

/// What an account is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum AccountKind {
    /// A merchant's account that charges land in.
    Collection,
    /// A merchant's account that payouts are paid from.
    Payout,
    /// A customer's wallet.
    Wallet,
    /// An agent's float (cash-in source, cash-out destination).
    AgentFloat,
    /// The operator's fee revenue.
    Revenue,
    /// The operator's e-money issuance account: its negative balance is the e-money in circulation.
    Issuance,
    /// The sandbox's source of test money (test mode only in practice).
    SandboxFunding,
}

impl AccountKind {
    /// Every kind.
    pub const ALL: [AccountKind; 7] = [
        AccountKind::Collection,
        AccountKind::Payout,
        AccountKind::Wallet,
        AccountKind::AgentFloat,
        AccountKind::Revenue,
        AccountKind::Issuance,
        AccountKind::SandboxFunding,
    ];

    /// The storage and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AccountKind::Collection => "collection",
            AccountKind::Payout => "payout",
            AccountKind::Wallet => "wallet",
            AccountKind::AgentFloat => "agent_float",
            AccountKind::Revenue => "revenue",
            AccountKind::Issuance => "issuance",
            AccountKind::SandboxFunding => "sandbox_funding",
        }
    }

    /// Only the money-creating accounts may go below zero.
    pub fn allows_negative(self) -> bool {
        matches!(self, AccountKind::Issuance | AccountKind::SandboxFunding)
    }

    /// Whether every journal of its ledger may post to the account at once: the platform's
    /// revenue (every fee), issuance and sandbox funding (every funding) accounts. Lines on it
    /// that need no funds check (credits, and every line on an account that may go negative)
    /// wait to be applied in batches rather than update its row each time; a debit that checks
    /// funds applies them first. An organisation's accounts post at once: their postings'
    /// order is the order of the organisation's transactions across its accounts.
    pub fn defers_lines(self) -> bool {
        self.is_system()
    }

    /// Whether a line of `amount` on an account of this kind waits to be applied (see
    /// [`AccountKind::defers_lines`]): it needs no funds check.
    pub fn defers_line(self, amount: MinorUnit) -> bool {
        self.defers_lines() && (amount > MinorUnit::ZERO || self.allows_negative())
    }

    /// Whether the account belongs to the platform rather than an organisation or customer.
    pub fn is_system(self) -> bool {
        matches!(self, AccountKind::Revenue | AccountKind::Issuance | AccountKind::SandboxFunding)
    }
}

impl fmt::Display for AccountKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no account kind.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown account kind `{0}`")]
pub struct UnknownKind(pub String);

impl FromStr for AccountKind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AccountKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A ledger account with its running balance and reservations.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    /// `acc_…`.
    pub id: AccountId,
    /// The owning organisation (`None` for wallets and system accounts).
    pub org_id: Option<OrgId>,
    /// Each mode has its own ledger.
    pub mode: Mode,
    /// What it is for.
    pub kind: AccountKind,
    /// Its currency; postings are always in it.
    pub currency: Currency,
    /// Sum of all postings.
    pub balance: MinorUnit,
    /// Reserved for authorised but not yet completed debits.
    pub held: MinorUnit,
    /// The wallet's phone number.
    pub owner_msisdn: Option<String>,
    /// When opened.
    pub created_at: Timestamp,
}

impl Account {
    /// A new, empty account.
    pub fn open(
        org_id: Option<OrgId>,
        mode: Mode,
        kind: AccountKind,
        currency: Currency,
        owner_msisdn: Option<String>,
        now: Timestamp,
    ) -> Self {
        Account {
            id: AccountId::new(),
            org_id,
            mode,
            kind,
            currency,
            balance: MinorUnit::ZERO,
            held: MinorUnit::ZERO,
            owner_msisdn,
            created_at: now,
        }
    }

    /// Spendable: balance less reservations.
    /// (A figure to show: the ledger's own checks of a debit never go through it.)
    pub fn available(&self) -> MinorUnit {
        self.balance.saturating_sub(self.held)
    }
}
