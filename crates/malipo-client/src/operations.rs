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

        /// The constants' names, in the order of [`OPERATIONS`].
        #[cfg(test)]
        const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

operations! {
    CREATE_CHARGE = "createCharge" "POST" "/partner/stk",
    GET_CHARGE_STATUS = "getChargeStatus" "GET" "/partner/status",
    LIST_CHARGES = "listCharges" "GET" "/partner/charges",
    GET_CHARGE = "getCharge" "GET" "/partner/charges/{charge_ref}",
    GET_ORGANISATION = "getOrganisation" "GET" "/organisation",
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
    GET_CALLBACK_SECRET = "getCallbackSecret" "GET" "/webhooks/callback-secret",
    ROTATE_CALLBACK_SECRET = "rotateCallbackSecret" "POST" "/webhooks/callback-secret/rotate",
    LIST_EVENTS = "listEvents" "GET" "/events",
    GET_EVENT = "getEvent" "GET" "/events/{event_id}",
    REDELIVER_EVENT = "redeliverEvent" "POST" "/events/{event_id}/redeliver",
    REVOKE_TOKEN = "revokeToken" "POST" "/oauth/revoke",
    LIST_ACCOUNTS = "listAccounts" "GET" "/accounts",
    GET_ACCOUNT_STATEMENT = "getAccountStatement" "GET" "/accounts/{account_id}/statement",
    CREATE_TRANSFER = "createTransfer" "POST" "/accounts/transfers",
    CREATE_CASH_IN = "createCashIn" "POST" "/agents/cash-in",
    CREATE_CASH_OUT = "createCashOut" "POST" "/agents/cash-out",
    GET_CASH_OUT = "getCashOut" "GET" "/agents/cash-out/{withdrawal_ref}",
    GET_AGENT_FLOAT = "getAgentFloat" "GET" "/agents/float",
    LIST_COUNTRIES = "listCountries" "GET" "/config/countries",
    CREATE_BULK_PAYOUT = "createBulkPayout" "POST" "/bulk-payouts",
    LIST_BULK_PAYOUTS = "listBulkPayouts" "GET" "/bulk-payouts",
    GET_BULK_PAYOUT = "getBulkPayout" "GET" "/bulk-payouts/{batch_id}",
    APPROVE_BULK_PAYOUT = "approveBulkPayout" "POST" "/bulk-payouts/{batch_id}/approve",
    REJECT_BULK_PAYOUT = "rejectBulkPayout" "POST" "/bulk-payouts/{batch_id}/reject",
    LIST_BULK_PAYOUT_ITEMS = "listBulkPayoutItems" "GET" "/bulk-payouts/{batch_id}/items",
    CREATE_PAYMENT_REQUEST = "createPaymentRequest" "POST" "/biz/request",
    LIST_PAYMENT_REQUESTS = "listPaymentRequests" "GET" "/biz/requests",
    GET_PAYMENT_REQUEST = "getPaymentRequest" "GET" "/biz/requests/{request_id}",
    CANCEL_PAYMENT_REQUEST = "cancelPaymentRequest" "POST" "/biz/requests/{request_id}/cancel",
    OPEN_WALLET = "openWallet" "POST" "/wallets",
    GET_WALLET = "getWallet" "GET" "/wallets/{msisdn}",
    SET_WALLET_PIN = "setWalletPin" "POST" "/wallets/{msisdn}/pin",
    LOCK_WALLET = "lockWallet" "POST" "/wallets/{msisdn}/lock",
    UNLOCK_WALLET = "unlockWallet" "POST" "/wallets/{msisdn}/unlock",
    SUBMIT_WALLET_KYC = "submitWalletKyc" "POST" "/wallets/{msisdn}/kyc",
    LIST_WALLET_TRANSACTIONS = "listWalletTransactions" "GET" "/wallets/{msisdn}/transactions",
    SIMULATE_CHARGE = "simulateCharge" "POST" "/sandbox/charges/{charge_ref}/simulate",
    CREATE_SANDBOX_WALLET = "createSandboxWallet" "POST" "/sandbox/wallets",
    CONTINUE_USSD_SESSION = "continueUssdSession" "POST" "/ussd",
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sources that send requests: every operation of the table is sent by a method in one
    /// of them (as `ops::NAME`), so the table cannot hold an operation the client has no method for.
    const SOURCES: &[&str] = &[
        include_str!("token.rs"),
        include_str!("resources/accounts.rs"),
        include_str!("resources/agents.rs"),
        include_str!("resources/bulk_payouts.rs"),
        include_str!("resources/charges.rs"),
        include_str!("resources/countries.rs"),
        include_str!("resources/payment_requests.rs"),
        include_str!("resources/payouts.rs"),
        include_str!("resources/reversals.rs"),
        include_str!("resources/sandbox.rs"),
        include_str!("resources/transactions.rs"),
        include_str!("resources/ussd.rs"),
        include_str!("resources/wallets.rs"),
        include_str!("resources/webhooks.rs"),
    ];

    #[test]
    fn every_operation_in_the_table_is_sent_by_a_method() {
        assert_eq!(NAMES.len(), OPERATIONS.len());
        let unsent: Vec<&str> = NAMES.iter().copied().filter(|name| !SOURCES.iter().any(|s| s.contains(&format!("ops::{name}")))).collect();
        assert!(unsent.is_empty(), "operations no method sends: {unsent:?}");
        let mut ids: Vec<&str> = OPERATIONS.iter().map(|o| o.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), OPERATIONS.len(), "one entry per operation");
    }
}
