//! Pushes a payment prompt to a customer's phone and waits for the outcome.
//!
//! ```console
//! $ export MALIPO_URL=http://127.0.0.1:8080 MALIPO_CLIENT_ID=ck_test_… MALIPO_CLIENT_SECRET=cs_test_…
//! $ cargo run -p malipo-client --example push_charge -- 254712345678 250.00 ORDER-1042
//! ch_… pending: waiting for the customer
//! ch_… completed (fee 2.00 KES)
//! ```
//!
//! In the sandbox a number ending in `1001` declines, `1009` waits until simulated; see the
//! contract's sandbox table. Exits 0 when the charge completed, 1 otherwise.

use std::time::Duration;

use malipo_client::{ChargeState, Client, NewCharge};
use rust_decimal::Decimal;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let client = Client::new(&env("MALIPO_URL")?, &env("MALIPO_CLIENT_ID")?, &env("MALIPO_CLIENT_SECRET")?)?;
    let mut args = std::env::args().skip(1);
    let (Some(msisdn), Some(amount), Some(reference)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: push_charge MSISDN AMOUNT REFERENCE".into());
    };
    let amount: Decimal = amount.parse()?;
    // The client sends one idempotency key on every try: a retried create cannot charge twice.
    let charge = client.charges().create(&NewCharge::new(msisdn, amount, reference)).await?;
    println!("{} {}: waiting for the customer", charge.charge_ref, charge.state.as_str());
    // A webhook tells a server at once; a script polls, with a deadline past the prompt's expiry.
    let done = client.charges().wait(&charge.charge_ref, Duration::from_secs(180)).await?;
    match (done.state, &done.failure_reason) {
        (ChargeState::Completed, _) => println!("{} completed (fee {} {})", done.charge_ref, done.fee, done.currency),
        (state, reason) => {
            let reason = reason.as_ref().map_or("no reason given", |r| r.as_str());
            println!("{} {} ({reason})", done.charge_ref, state.as_str());
            std::process::exit(1);
        }
    }
    Ok(())
}
