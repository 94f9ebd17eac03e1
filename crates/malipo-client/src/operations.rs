//! The API's operations the client calls, as the OpenAPI document names them: every request the
//! client sends is made from one of these (its method and path template), so this table is
//! exactly the client's surface, and a test holds it to the served document.

/// One operation of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Operation {
    /// The document's `operationId`.
    pub id: &'static str,
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path after `/api/v1`, with `{name}` for each path parameter.
    pub path: &'static str,
}

macro_rules! operations {
    ($($name:ident = $id:literal $method:literal $path:literal,)*) => {
        $(
            #[doc = concat!("`", $id, "`: `", $method, " ", $path, "`.")]
            pub const $name: Operation = Operation { id: $id, method: $method, path: $path };
        )*
        /// Every operation the client calls.
        pub const OPERATIONS: &[Operation] = &[$($name),*];
    };
}

operations! {
    CREATE_CHARGE = "createCharge" "POST" "/partner/stk",
    GET_CHARGE_STATUS = "getChargeStatus" "GET" "/partner/status",
    LIST_CHARGES = "listCharges" "GET" "/partner/charges",
    GET_CHARGE = "getCharge" "GET" "/partner/charges/{charge_ref}",
    GET_BALANCE = "getBalance" "GET" "/partner/balance",
    CREATE_PAYOUT = "createPayout" "POST" "/payouts",
    LIST_PAYOUTS = "listPayouts" "GET" "/payouts",
    GET_PAYOUT = "getPayout" "GET" "/payouts/{payout_ref}",
    CREATE_REVERSAL = "createReversal" "POST" "/reversals",
    LIST_REVERSALS = "listReversals" "GET" "/reversals",
    GET_REVERSAL = "getReversal" "GET" "/reversals/{reversal_id}",
    LIST_TRANSACTIONS = "listTransactions" "GET" "/transactions",
    GET_TRANSACTION = "getTransaction" "GET" "/transactions/{transaction_id}",
    EXPORT_TRANSACTIONS = "exportTransactions" "GET" "/transactions/export",
    GET_DAILY_RECONCILIATION = "getDailyReconciliation" "GET" "/reconciliation/daily",
    CREATE_WEBHOOK_ENDPOINT = "createWebhookEndpoint" "POST" "/webhooks/endpoints",
    LIST_WEBHOOK_ENDPOINTS = "listWebhookEndpoints" "GET" "/webhooks/endpoints",
    GET_WEBHOOK_ENDPOINT = "getWebhookEndpoint" "GET" "/webhooks/endpoints/{endpoint_id}",
    DELETE_WEBHOOK_ENDPOINT = "deleteWebhookEndpoint" "DELETE" "/webhooks/endpoints/{endpoint_id}",
    ROTATE_WEBHOOK_SECRET = "rotateWebhookSecret" "POST" "/webhooks/endpoints/{endpoint_id}/rotate-secret",
    LIST_EVENTS = "listEvents" "GET" "/events",
    GET_EVENT = "getEvent" "GET" "/events/{event_id}",
    REDELIVER_EVENT = "redeliverEvent" "POST" "/events/{event_id}/redeliver",
}
