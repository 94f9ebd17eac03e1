//! The corporate application (console contract section 4, Corporate): "Bulk payouts" (upload a
//! CSV file, see its preview, submit it for approval; the batches and each batch's items, with
//! "Download failed items"), "Approvals" (a checker approves with a fresh authentication code,
//! or rejects with a reason), and the transfer between the organisation's own accounts on Home.
//!
//! Every action is the API's use case (`POST /bulk-payouts`, `…/approve`, `…/reject`,
//! `POST /accounts/transfers`) with the form's one-time key. The person who made a batch (in
//! the console, or through a key pair they created there) can never approve or reject it: the
//! batch's state machine refuses it (403 `maker_checker_violation`), and so does the database.

pub mod approvals;
pub mod batch;
pub mod bulk;
pub mod multipart;
pub mod rows;
pub mod transfer;

use actix_web::web;

/// `/console/bulk-payouts…`, `/console/approvals`, `/console/transfer`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/bulk-payouts", web::get().to(bulk::list_page))
        .route("/bulk-payouts", web::post().to(bulk::submit))
        .route("/bulk-payouts/preview", web::post().to(bulk::preview))
        .route("/bulk-payouts/{batch_id}", web::get().to(batch::show))
        .route("/bulk-payouts/{batch_id}/live", web::get().to(batch::live))
        .route("/bulk-payouts/{batch_id}/failed.csv", web::get().to(batch::failed_csv))
        .route("/bulk-payouts/{batch_id}/approve", web::post().to(batch::approve))
        .route("/bulk-payouts/{batch_id}/reject", web::post().to(batch::reject))
        .route("/approvals", web::get().to(approvals::show))
        .route("/transfer", web::post().to(transfer::transfer));
}
