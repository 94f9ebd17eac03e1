//! Configuration (contract section 11): the served countries.

use actix_web::{web, HttpResponse};

use crate::extract::Auth;
use crate::problem::{ApiError, Problem};
use crate::routes::channels::dto::CountryDto;
use crate::routes::shared::ListDto;
use crate::state::AppState;

/// The configured countries: numbering plans, currencies, ID types, PIN rules, KYC tiers with
/// their limits, and fee schedules. Any valid token may read it, whatever its scopes.
#[utoipa::path(
    get, path = "/api/v1/config/countries", operation_id = "listCountries", tag = "Channels",
    responses(
        (status = 200, description = "Every configured country, in the configuration file's order (one page)", body = ListDto<CountryDto>),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
    ),
    security(("bearer" = []))
)]
pub async fn countries(_auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let data = state.platform.countries().all().iter().map(CountryDto::from).collect();
    Ok(HttpResponse::Ok().json(ListDto { data, has_more: false, next_cursor: None }))
}
