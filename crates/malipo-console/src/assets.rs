//! The console's CSS and script, compiled into the binary and served from its own origin.

use actix_web::{web, HttpResponse};

/// The stylesheet.
pub const CSS: &str = include_str!("../assets/app.css");
/// The script (enhancements only: every page works without it).
pub const JS: &str = include_str!("../assets/app.js");

/// A short tag of the assets' content, in their URLs, so a new build's assets are fetched anew
/// while a browser keeps them cached meanwhile.
pub fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(CSS.as_bytes());
        h.update(JS.as_bytes());
        hex::encode(&h.finalize()[..6])
    })
}

async fn css() -> HttpResponse {
    HttpResponse::Ok().content_type("text/css; charset=utf-8").insert_header(("Cache-Control", "public, max-age=86400")).body(CSS)
}

async fn js() -> HttpResponse {
    HttpResponse::Ok().content_type("text/javascript; charset=utf-8").insert_header(("Cache-Control", "public, max-age=86400")).body(JS)
}

/// `/console/assets/app.css` and `/console/assets/app.js`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/assets/app.css", web::get().to(css)).route("/assets/app.js", web::get().to(js));
}
