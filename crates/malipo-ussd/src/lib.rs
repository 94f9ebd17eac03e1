//! The USSD menu of Malipo (`POST /ussd`), as a pure model. The service keeps the session (its
//! [`State`], stored as JSON between hops) and calls the [`Menu`] one hop at a time: the menu
//! answers either a [`Screen`] to show now, or an [`Effect`] that needs data or the database,
//! whose [`Outcome`] the service feeds back through [`Menu::resume`].
//!
//! The model never stores a PIN: the gateway re-sends the whole input (`text`, hops joined by
//! `*`) on every request, so a PIN is read from the hop that holds it when it is needed, and
//! states only remember the index of such a hop.
//!
//! Menu: 1. Send money, 2. Pay merchant, 3. Approve payments, 4. My balance, 5. My account.
//! Every screen fits in [`MAX_SCREEN_CHARS`] with its `CON `/`END ` prefix.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod menu;
mod model;
mod screen;

#[cfg(test)]
mod tests;

pub use menu::{clip, Menu, NAME_CHARS};
pub use model::{Caller, Effect, Outcome, Prompt, PromptKind, State, Step};
pub use screen::{display_amount, split_hops, text_too_long, Screen, MAX_HOP_CHARS, MAX_SCREEN_CHARS, MAX_TEXT_CHARS};
