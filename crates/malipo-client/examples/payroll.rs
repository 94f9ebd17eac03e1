//! Payroll: a bulk payout uploaded as CSV by the maker, approved by the checker (another key
//! pair of the same organisation), and followed to the end.
//!
//! ```console
//! $ export MALIPO_URL=http://127.0.0.1:8080
//! $ export MALIPO_MAKER_ID=ck_test_… MALIPO_MAKER_SECRET=cs_test_…       # scope bulk:create
//! $ export MALIPO_CHECKER_ID=ck_test_… MALIPO_CHECKER_SECRET=cs_test_…   # scope bulk:approve
//! $ cargo run -p malipo-client --example payroll -- payroll-2026-11.csv PAYROLL-2026-11
//! bp_… awaiting_approval: 3 items, 45000.00 KES
//! bp_… approved by the checker
//! bp_… completed: 3 completed, 0 failed
//! ```
//!
//! The CSV has the header `payee_msisdn,amount,reference,narration`. A bad row rejects the
//! whole file (every bad row listed); the maker cannot approve its own batch.
//! Exits 0 when every item was paid, 1 otherwise.

use std::time::Duration;

use malipo_client::{BulkPayoutState, Client, Error};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let base = env("MALIPO_URL")?;
    let maker = Client::new(&base, &env("MALIPO_MAKER_ID")?, &env("MALIPO_MAKER_SECRET")?)?;
    let checker = Client::new(&base, &env("MALIPO_CHECKER_ID")?, &env("MALIPO_CHECKER_SECRET")?)?;
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(reference)) = (args.next(), args.next()) else {
        return Err("usage: payroll FILE.csv REFERENCE".into());
    };
    let file = tokio::fs::File::open(&path).await?;
    let batch = match maker.bulk_payouts().upload_csv(&reference, file).await {
        Ok(batch) => batch,
        Err(Error::Api(problem)) if !problem.errors.is_empty() => {
            for row in &problem.errors {
                eprintln!("{}: {}", row.field, row.message);
            }
            return Err(format!("{path}: {} bad rows, nothing uploaded", problem.errors.len()).into());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{} {}: {} items, {} {}", batch.batch_id, batch.state.as_str(), batch.item_count, batch.total_amount, batch.currency);
    checker.bulk_payouts().approve(&batch.batch_id).await?;
    println!("{} approved by the checker", batch.batch_id);
    let done = checker.bulk_payouts().wait(&batch.batch_id, Duration::from_secs(300)).await?;
    let c = &done.counts;
    println!("{} {}: {} completed, {} failed", done.batch_id, done.state.as_str(), c.completed, c.failed);
    if done.state != BulkPayoutState::Completed || c.failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
