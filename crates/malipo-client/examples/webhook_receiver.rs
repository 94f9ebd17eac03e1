//! A webhook receiver (actix-web) that verifies every delivery and handles each event once.
//!
//! ```console
//! $ export MALIPO_WEBHOOK_SECRET=whsec_…      # shown when the endpoint was created
//! $ cargo run -p malipo-client --example webhook_receiver -- 127.0.0.1:8088
//! listening on 127.0.0.1:8088
//! handled evt_… charge.completed ch_… 250.00 KES
//! duplicate evt_…
//! ```
//!
//! Deliveries are at least once and unordered: the receiver answers 2xx only after it has the
//! event, and deduplicates on the event id (`webhook-id`), so a retry of an event it already
//! handled is acknowledged without being handled again. Here the ids are kept in memory; a real
//! receiver records them in the same database transaction as the work the event causes.
//! A delivery that does not verify (forged, tampered, or older than five minutes) answers 400.
//! Set `MALIPO_WEBHOOK_OLD_SECRET` too during a secret rotation.

use std::collections::HashSet;
use std::sync::Mutex;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use malipo_client::{EventKind, Webhooks};

struct Receiver {
    verifier: Webhooks,
    seen: Mutex<HashSet<String>>,
}

async fn deliver(state: web::Data<Receiver>, request: HttpRequest, body: web::Bytes) -> HttpResponse {
    // The raw bytes, exactly as they arrived: the signature covers them. actix-web's headers are
    // read through a closure (any `Fn(&str) -> Option<String>` is a `Headers`).
    let headers = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let event = match state.verifier.check(&headers, &body) {
        Ok(event) => event,
        Err(refused) => {
            println!("refused: {refused}");
            return HttpResponse::BadRequest().body(refused.to_string());
        }
    };
    let first_time = state.seen.lock().map(|mut seen| seen.insert(event.id.clone())).unwrap_or(false);
    if !first_time {
        println!("duplicate {}", event.id);
        return HttpResponse::Ok().finish();
    }
    match (&event.kind, event.charge()) {
        (EventKind::ChargeCompleted, Some(charge)) => {
            println!("handled {} {} {} {} {}", event.id, event.kind.as_str(), charge.charge_ref, charge.amount, charge.currency);
        }
        (kind, _) => println!("handled {} {}", event.id, kind.as_str()),
    }
    HttpResponse::Ok().finish()
}

#[actix_web::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secret = std::env::var("MALIPO_WEBHOOK_SECRET").map_err(|_| "set MALIPO_WEBHOOK_SECRET")?;
    let mut verifier = Webhooks::new(&secret)?;
    if let Ok(old) = std::env::var("MALIPO_WEBHOOK_OLD_SECRET") {
        verifier = verifier.and(&old)?;
    }
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8088".to_owned());
    let state = web::Data::new(Receiver { verifier, seen: Mutex::new(HashSet::new()) });
    let server =
        HttpServer::new(move || App::new().app_data(state.clone()).route("/", web::post().to(deliver))).workers(1).bind(&listen)?;
    for addr in server.addrs() {
        println!("listening on {addr}");
    }
    server.run().await?;
    Ok(())
}
