//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use std::sync::OnceLock;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::common_responses::CommonResponses;
use crate::problem;
use crate::routes::{
    accounts, agents, auth, bulk, channels, charges, ops, organisation, payment_requests, payouts, reversals, transactions, wallets,
    webhooks,
};
use crate::schema::{EventKind, EventType, IdempotencyKey, Msisdn, Name64, Reason200, Reason255, Reference, Text100, Text200};
use crate::wire::DecimalAmount;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("A token from POST /api/v1/oauth/token")).build(),
            ),
        );
    }
}

/// Malipo's API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Malipo API",
        version = "1",
        description = "Collect money from customers' phones and pay money out; run customers' wallets, agents and the USSD channel. Errors are RFC 9457 problem documents; amounts are decimal numbers in major units; every state-changing call carries an idempotency key."
    ),
    servers((url = "/", description = "This server")),
    components(schemas(
        problem::Problem,
        problem::ProblemField,
        DecimalAmount,
        Msisdn,
        IdempotencyKey,
        Reference,
        Text100,
        Text200,
        Name64,
        Reason200,
        Reason255,
        EventKind,
        EventType
    )),
    modifiers(&Security),
    tags(
        (name = "Auth", description = "OAuth 2.0 client credentials"),
        (name = "Organisation", description = "Which organisation a key pair acts for"),
        (name = "Charges", description = "Payment prompts pushed to customers' phones"),
        (name = "Accounts", description = "Balances, accounts, statements and transfers between the organisation's own accounts"),
        (name = "Payouts", description = "Money paid from the payout account to customers' wallets"),
        (name = "Bulk payouts", description = "Batches of payouts uploaded by a maker and approved or rejected by a checker"),
        (name = "Reversals", description = "Money given back on completed charges and payouts"),
        (name = "Transactions", description = "Ledger transactions, their CSV export and the daily reconciliation"),
        (name = "Wallets", description = "Customers' wallets, PINs and KYC (operator back office)"),
        (name = "Agents", description = "Agents' cash-in, cash-out and float"),
        (name = "Payment requests", description = "Merchants' requests to be paid, paid by customers with a pay code on the USSD menu"),
        (name = "Channels", description = "Sandbox helpers, USSD and configuration"),
        (name = "Webhooks", description = "Events, webhook endpoints and their deliveries"),
        (name = "Operations", description = "Health, readiness and this document"),
    )
)]
pub struct ApiDoc;

/// The document: the API's description, then each group's operations and objects, then what
/// every operation shares ([`CommonResponses`]).
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    for group in [
        auth::Api::openapi(),
        organisation::Api::openapi(),
        charges::Api::openapi(),
        accounts::Api::openapi(),
        payouts::Api::openapi(),
        bulk::Api::openapi(),
        reversals::Api::openapi(),
        transactions::Api::openapi(),
        wallets::Api::openapi(),
        agents::Api::openapi(),
        payment_requests::Api::openapi(),
        channels::Api::openapi(),
        webhooks::Api::openapi(),
        ops::Api::openapi(),
    ] {
        doc.merge(group);
    }
    CommonResponses.modify(&mut doc);
    doc
}

/// The document as JSON (built once).
pub fn document_json() -> String {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| document().to_pretty_json().unwrap_or_else(|_| "{}".into())).clone()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    #[test]
    fn the_document_has_every_customer_side_operation() {
        let doc: serde_json::Value = serde_json::from_str(&super::document_json()).unwrap();
        for (path, method, tag, scope) in [
            ("/api/v1/wallets", "post", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}", "get", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}/pin", "post", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}/lock", "post", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}/unlock", "post", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}/kyc", "post", "Wallets", Some("wallets")),
            ("/api/v1/wallets/{msisdn}/transactions", "get", "Wallets", Some("wallets")),
            ("/api/v1/agents/cash-in", "post", "Agents", Some("agent")),
            ("/api/v1/agents/cash-out", "post", "Agents", Some("agent")),
            ("/api/v1/agents/cash-out/{withdrawal_ref}", "get", "Agents", Some("agent")),
            ("/api/v1/agents/float", "get", "Agents", Some("agent")),
            ("/api/v1/ussd", "post", "Channels", Some("ussd")),
            ("/api/v1/config/countries", "get", "Channels", None),
        ] {
            let op = &doc["paths"][path][method];
            assert!(op.is_object(), "{method} {path}");
            assert_eq!(op["tags"][0], tag, "{method} {path}");
            let scopes = &op["security"][0]["bearer"];
            match scope {
                Some(s) => assert_eq!(scopes[0], s, "{method} {path}"),
                None => assert_eq!(scopes.as_array().map(Vec::len), Some(0), "{method} {path}"),
            }
        }
        let ussd = &doc["paths"]["/api/v1/ussd"]["post"];
        let content = ussd["requestBody"]["content"].as_object().unwrap();
        assert!(content.contains_key("application/json") && content.contains_key("application/x-www-form-urlencoded"), "{content:?}");
        assert!(ussd["responses"]["200"]["content"]["text/plain; charset=utf-8"].is_object(), "{}", ussd["responses"]["200"]);
        for schema in ["WalletDto", "CashInDto", "CashOutDto", "CountryDto", "StatementLineDto", "UssdCallback", "FeeScheduleDto"] {
            assert!(doc["components"]["schemas"][schema].is_object(), "{schema}");
        }
        assert_eq!(doc["components"]["schemas"]["CountryDto"]["properties"]["fees"]["type"], "object");
        let required = doc["components"]["schemas"]["UssdCallback"]["required"].as_array().unwrap();
        assert!(required.contains(&"sessionId".into()) && required.contains(&"phoneNumber".into()) && !required.contains(&"text".into()));
        assert!(doc["components"]["schemas"]["WalletDto"]["required"].as_array().unwrap().contains(&"limits".into()));
    }

    #[test]
    fn the_document_has_every_money_out_operation() {
        let doc: serde_json::Value = serde_json::from_str(&super::document_json()).unwrap();
        let any_bulk_reader = ["bulk:create", "bulk:approve", "payouts"];
        for (path, method, tag, scopes) in [
            ("/api/v1/accounts/transfers", "post", "Accounts", &["payments"][..]),
            ("/api/v1/accounts/{account_id}/statement", "get", "Accounts", &["payments"]),
            ("/api/v1/payouts", "post", "Payouts", &["payouts"]),
            ("/api/v1/payouts", "get", "Payouts", &["payouts"]),
            ("/api/v1/payouts/{payout_ref}", "get", "Payouts", &["payouts"]),
            ("/api/v1/bulk-payouts", "post", "Bulk payouts", &["bulk:create"]),
            ("/api/v1/bulk-payouts", "get", "Bulk payouts", &any_bulk_reader),
            ("/api/v1/bulk-payouts/{batch_id}", "get", "Bulk payouts", &any_bulk_reader),
            ("/api/v1/bulk-payouts/{batch_id}/items", "get", "Bulk payouts", &any_bulk_reader),
            ("/api/v1/bulk-payouts/{batch_id}/approve", "post", "Bulk payouts", &["bulk:approve"]),
            ("/api/v1/bulk-payouts/{batch_id}/reject", "post", "Bulk payouts", &["bulk:approve"]),
            ("/api/v1/reversals", "post", "Reversals", &["reversals"]),
            ("/api/v1/reversals", "get", "Reversals", &["reversals"]),
            ("/api/v1/reversals/{reversal_id}", "get", "Reversals", &["reversals"]),
        ] {
            let op = &doc["paths"][path][method];
            assert!(op.is_object(), "{method} {path}");
            assert_eq!(op["tags"][0], tag, "{method} {path}");
            let granted: Vec<&str> = op["security"].as_array().unwrap().iter().map(|s| s["bearer"][0].as_str().unwrap()).collect();
            assert_eq!(granted, scopes, "{method} {path}");
            let responses = op["responses"].as_object().unwrap();
            for (status, response) in responses {
                let schema = &response["content"]["application/problem+json"]["schema"]["$ref"];
                if status != "200" {
                    assert_eq!(schema, "#/components/schemas/Problem", "{method} {path} {status}");
                }
            }
            for status in ["200", "401", "403", "429", "503"] {
                assert!(responses.contains_key(status), "{method} {path} {status}");
            }
            if method == "post" {
                assert!(op["requestBody"]["content"]["application/json"].is_object(), "{method} {path}");
                for status in ["400", "409", "413", "415", "422"] {
                    assert!(responses.contains_key(status), "{method} {path} {status}");
                }
            }
        }
        let upload = &doc["paths"]["/api/v1/bulk-payouts"]["post"];
        assert!(upload["requestBody"]["content"]["text/csv"].is_object());
        assert!(upload["responses"]["413"]["description"].as_str().unwrap().contains("5 MiB"));
        for (op, code) in [("approve", "maker_checker_violation"), ("reject", "maker_checker_violation")] {
            let path = format!("/api/v1/bulk-payouts/{{batch_id}}/{op}");
            assert!(doc["paths"][&path]["post"]["responses"]["403"]["description"].as_str().unwrap().contains(code), "{path}");
        }
        let reversal = &doc["paths"]["/api/v1/reversals"]["post"]["responses"]["422"]["description"];
        assert!(reversal.as_str().unwrap().contains("reversal_exceeds_original"));
        let schemas = &doc["components"]["schemas"];
        for schema in [
            "TransferRequest",
            "TransferDto",
            "StatementDto",
            "PayoutRequest",
            "PayoutDto",
            "BulkRequest",
            "BulkItemRequest",
            "RejectRequest",
            "BulkPayoutDto",
            "ReversalRequest",
            "ReversalDto",
            "DecimalAmount",
        ] {
            assert!(schemas[schema].is_object(), "{schema}");
        }
        let amount = &schemas["DecimalAmount"]["oneOf"];
        assert_eq!((amount[0]["type"].as_str(), amount[1]["type"].as_str()), (Some("string"), Some("number")));
        for request in ["TransferRequest", "PayoutRequest", "BulkItemRequest"] {
            assert_eq!(schemas[request]["properties"]["amount"]["$ref"], "#/components/schemas/DecimalAmount", "{request}");
        }
        let tags: Vec<&str> = doc["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        for tag in ["Accounts", "Payouts", "Bulk payouts", "Reversals"] {
            assert!(tags.contains(&tag), "{tag}");
        }
    }

    fn request_schemas(doc: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (media, content) in op["requestBody"]["content"].as_object().into_iter().flatten() {
                    if let Some(name) = content["schema"]["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
                        out.push((format!("{method} {path} {media} {name}"), doc["components"]["schemas"][name].clone()));
                    }
                }
            }
        }
        out
    }

    /// An object schema's properties, also inside `allOf`.
    fn properties(schema: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
        let mut out: Vec<(String, serde_json::Value)> =
            schema["properties"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
        for part in schema["allOf"].as_array().into_iter().flatten() {
            out.extend(properties(part));
        }
        out
    }

    #[test]
    fn every_operation_lists_the_statuses_every_operation_can_answer() {
        let doc: serde_json::Value = serde_json::from_str(&super::document_json()).unwrap();
        let mut operations = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            if !path.starts_with("/api/v1/") || path == "/api/v1/openapi.json" {
                continue;
            }
            for (method, op) in item.as_object().unwrap() {
                operations += 1;
                let at = format!("{method} {path}");
                let responses = op["responses"].as_object().unwrap();
                let authenticated = op["security"].as_array().unwrap().iter().any(|s| s.as_object().is_some_and(|o| !o.is_empty()));
                let mut expected = vec!["500", "503"];
                if authenticated {
                    expected.extend(["401", "403", "429"]);
                }
                if op["requestBody"].is_object() {
                    expected.extend(["400", "413", "415", "422"]);
                }
                if op["parameters"].as_array().into_iter().flatten().any(|p| p["name"] == "Idempotency-Key") {
                    expected.extend(["409", "422"]);
                    assert!(op["responses"]["200"]["headers"]["Idempotent-Replayed"].is_object(), "{at}");
                }
                for status in expected {
                    assert!(responses.contains_key(status), "{at} lists no {status}");
                }
                for (status, response) in responses {
                    assert!(response["headers"]["X-Request-Id"].is_object(), "{at} {status}");
                    if status.starts_with('2') {
                        continue;
                    }
                    let content = response["content"].as_object().unwrap();
                    let (media, schema) = if path.starts_with("/api/v1/oauth/") {
                        ("application/json", "#/components/schemas/OAuthProblem")
                    } else {
                        ("application/problem+json", "#/components/schemas/Problem")
                    };
                    assert_eq!(content.keys().collect::<Vec<_>>(), [media], "{at} {status}");
                    assert_eq!(content[media]["schema"]["$ref"], schema, "{at} {status}");
                }
                if authenticated {
                    for header in ["Retry-After", "RateLimit", "RateLimit-Policy"] {
                        assert!(responses["429"]["headers"][header].is_object(), "{at} 429 {header}");
                    }
                    assert!(responses["401"]["headers"]["WWW-Authenticate"].is_object(), "{at}");
                }
                assert!(responses["503"]["headers"]["Retry-After"].is_object(), "{at}");
            }
        }
        assert!(operations >= 45, "{operations} operations");
        assert!(doc["components"]["schemas"]["OAuthProblem"]["allOf"][1]["required"].as_array().unwrap().contains(&"error".into()));
    }

    #[test]
    fn request_schemas_state_what_the_server_accepts() {
        let doc: serde_json::Value = serde_json::from_str(&super::document_json()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let amount = &schemas["DecimalAmount"]["oneOf"];
        let re = regex::Regex::new(amount[0]["pattern"].as_str().unwrap()).unwrap();
        let pattern = |t: &str| re.is_match(t);
        for ok in ["250", "250.00", "250.5", "0.01", "007.10", "9999999999999.99", "1.000"] {
            assert!(pattern(ok), "{ok}");
        }
        for bad in ["0", "0.00", "-1", "1e3", "1.001", ".5", "5.", "", " 1", "10000000000000"] {
            assert!(!pattern(bad), "{bad}");
        }
        assert_eq!(amount[1]["exclusiveMinimum"], 0);
        assert_eq!(amount[1]["multipleOf"], 0.01);
        let mut amounts = 0;
        for (at, schema) in request_schemas(&doc) {
            if at.contains("application/json") {
                let closed = schema["additionalProperties"] == false || schema["allOf"][0]["additionalProperties"] == false;
                assert!(closed, "{at}: unknown fields are refused (422 unknown_field)");
            }
            for (name, property) in properties(&schema) {
                let text = property.to_string();
                assert!(!text.contains("\"double\"") && !text.contains("\"float\""), "{at}.{name}: {text}");
                if ["amount", "balance"].contains(&name.as_str()) {
                    amounts += 1;
                    assert!(text.contains("#/components/schemas/DecimalAmount"), "{at}.{name}: {text}");
                }
                if name.ends_with("msisdn") {
                    assert!(text.contains("#/components/schemas/Msisdn"), "{at}.{name}: {text}");
                }
            }
        }
        assert!(amounts >= 6, "{amounts} amounts");
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let at = format!("{method} {path} {}", p["name"]);
                    match p["name"].as_str().unwrap() {
                        "limit" => {
                            assert_eq!((p["schema"]["minimum"].as_u64(), p["schema"]["maximum"].as_u64()), (Some(1), Some(100)), "{at}")
                        }
                        "Idempotency-Key" => assert!(p["schema"]["pattern"].is_string(), "{at}"),
                        "from" | "to" => assert_eq!(p["schema"]["format"], "date-time", "{at}"),
                        _ if p["in"] == "path" || p["name"] == "cursor" => assert!(p["schema"]["pattern"].is_string(), "{at}"),
                        _ => {}
                    }
                }
            }
        }
    }
}
