//! Reconciles a day: reads the day's report and export, recomputes the checksum and the totals
//! from the export, and lists every difference.
//!
//! ```console
//! $ export MALIPO_URL=http://127.0.0.1:8080 MALIPO_CLIENT_ID=ck_test_… MALIPO_CLIENT_SECRET=cs_test_…
//! $ cargo run -p malipo-client --example reconcile             # yesterday, the organisation's
//! $ cargo run -p malipo-client --example reconcile -- 2026-11-28
//! 2026-11-28 collection: 42 transactions, checksum 9f2c…: agrees
//! ```
//!
//! Exits 0 when the report and the export agree, 1 (listing the differences) otherwise.

use malipo_client::Client;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let client = Client::new(&env("MALIPO_URL")?, &env("MALIPO_CLIENT_ID")?, &env("MALIPO_CLIENT_SECRET")?)?;
    // The report's day is the organisation's country's calendar day, not this machine's or UTC's:
    // yesterday is the day before the organisation's today.
    let date = match std::env::args().nth(1) {
        Some(date) => date,
        None => {
            let today = client.transactions().today().await?;
            today.previous_day().ok_or("no day before today")?.to_string()
        }
    };
    let day = client.transactions().reconcile(&date, None).await?;
    let account = &day.report.account;
    println!("{date} {account}: {} transactions, checksum {}", day.transaction_count, day.checksum);
    if day.agrees() {
        println!("{date} {account}: agrees");
        return Ok(());
    }
    for difference in &day.differences {
        println!("differs: {difference}");
    }
    std::process::exit(1);
}
