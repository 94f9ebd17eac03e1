//! The tables, written by hand to match both migrations
//! (`migrations/{postgres,sqlite}/2026-11-22-000001_core/up.sql`, `…-000002_webhooks/up.sql`,
//! `…-000003_customers/up.sql`, `…-000004_payouts/up.sql` and the later ones named at their
//! tables). Ids are `Text`, timestamps `BigInt` microseconds, money `BigInt` minor units.

#![allow(missing_docs, unreachable_pub)]

diesel::table! {
    organisations (id) {
        id -> Text,
        name -> Text,
        kind -> Text,
        country -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    credentials (client_id) {
        client_id -> Text,
        org_id -> Text,
        mode -> Text,
        secret_hash -> Text,
        scopes -> Text,
        created_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
        created_by -> Nullable<Text>,
        last_used_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    access_tokens (digest) {
        digest -> Text,
        client_id -> Text,
        org_id -> Text,
        mode -> Text,
        scopes -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    accounts (id) {
        id -> Text,
        org_id -> Nullable<Text>,
        mode -> Text,
        kind -> Text,
        currency -> Text,
        balance -> BigInt,
        held -> BigInt,
        allow_negative -> Bool,
        owner_msisdn -> Nullable<Text>,
        created_at -> BigInt,
        posted_at -> BigInt,
    }
}

diesel::table! {
    ledger_heads (mode, currency) {
        mode -> Text,
        currency -> Text,
        seq -> BigInt,
        hash -> Text,
    }
}

diesel::table! {
    journals (id) {
        id -> Text,
        mode -> Text,
        currency -> Text,
        kind -> Text,
        source_ref -> Text,
        created_at -> BigInt,
        seq -> Nullable<BigInt>,
        prev_hash -> Nullable<Text>,
        hash -> Nullable<Text>,
    }
}

diesel::table! {
    postings (id) {
        id -> BigInt,
        journal_id -> Text,
        line_no -> Integer,
        account_id -> Text,
        amount -> BigInt,
        balance_after -> BigInt,
        created_at -> BigInt,
        fee -> BigInt,
    }
}

diesel::table! {
    wallets (mode, msisdn) {
        mode -> Text,
        msisdn -> Text,
        account_id -> Text,
        country -> Text,
        currency -> Text,
        state -> Text,
        kyc_tier -> Integer,
        pin_hash -> Nullable<Text>,
        pin_attempts -> Integer,
        first_name -> Nullable<Text>,
        last_name -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
        id_type -> Nullable<Text>,
        id_number -> Nullable<Text>,
        date_of_birth -> Nullable<Text>,
        lock_reason -> Nullable<Text>,
    }
}

diesel::table! {
    charges (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        payer_msisdn -> Text,
        amount -> BigInt,
        fee -> BigInt,
        currency -> Text,
        amount_reversed -> BigInt,
        reference -> Text,
        description -> Nullable<Text>,
        state -> Text,
        failure_reason -> Nullable<Text>,
        transaction_id -> Nullable<Text>,
        merchant_account -> Text,
        payer_account -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
        expires_at -> BigInt,
        completed_at -> Nullable<BigInt>,
        next_action_at -> Nullable<BigInt>,
        kind -> Text,
        commission -> BigInt,
    }
}

diesel::table! {
    ussd_sessions (org_id, mode, session_id) {
        org_id -> Text,
        mode -> Text,
        session_id -> Text,
        msisdn -> Text,
        state -> Text,
        hops -> Integer,
        last_screen -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    idempotency_keys (org_id, mode, operation, key) {
        org_id -> Text,
        mode -> Text,
        operation -> Text,
        key -> Text,
        fingerprint -> Text,
        status -> Nullable<Integer>,
        response_body -> Nullable<Binary>,
        created_at -> BigInt,
        snapshot -> Nullable<Binary>,
    }
}

diesel::table! {
    webhook_endpoints (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        url -> Text,
        description -> Nullable<Text>,
        events -> Text,
        enabled -> Bool,
        secret -> Binary,
        previous_secret -> Nullable<Binary>,
        previous_secret_expires_at -> Nullable<BigInt>,
        disabled_reason -> Nullable<Text>,
        failing_since -> Nullable<BigInt>,
        deleted_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    events (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        kind -> Text,
        object_id -> Text,
        data -> Binary,
        amount -> Nullable<Text>,
        currency -> Nullable<Text>,
        state -> Nullable<Text>,
        reference -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    deliveries (id) {
        id -> Text,
        event_id -> Text,
        endpoint_id -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    delivery_attempts (id) {
        id -> BigInt,
        delivery_id -> Text,
        event_id -> Text,
        endpoint_id -> Text,
        attempted_at -> BigInt,
        status -> Nullable<Integer>,
        latency_ms -> Integer,
        error -> Nullable<Text>,
    }
}

diesel::table! {
    bulk_payouts (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        reference -> Text,
        currency -> Text,
        item_count -> Integer,
        total_amount -> BigInt,
        total_fees -> BigInt,
        payout_account -> Text,
        created_by -> Text,
        approved_by -> Nullable<Text>,
        rejected_by -> Nullable<Text>,
        rejection_reason -> Nullable<Text>,
        state -> Text,
        pending_count -> Integer,
        completed_count -> Integer,
        failed_count -> Integer,
        created_at -> BigInt,
        approved_at -> Nullable<BigInt>,
        completed_at -> Nullable<BigInt>,
        updated_at -> BigInt,
        // `…-000012_corporate`: the people behind maker and checker.
        created_by_person -> Nullable<Text>,
        approved_by_person -> Nullable<Text>,
        rejected_by_person -> Nullable<Text>,
    }
}

diesel::table! {
    payouts (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        payee_msisdn -> Text,
        amount -> BigInt,
        fee -> BigInt,
        currency -> Text,
        amount_reversed -> BigInt,
        reference -> Text,
        narration -> Nullable<Text>,
        state -> Text,
        failure_reason -> Nullable<Text>,
        transaction_id -> Nullable<Text>,
        bulk_payout_id -> Nullable<Text>,
        bulk_index -> Nullable<Integer>,
        payout_account -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
        completed_at -> Nullable<BigInt>,
        next_action_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    reversals (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        charge_ref -> Nullable<Text>,
        payout_ref -> Nullable<Text>,
        original_transaction_id -> Text,
        amount -> BigInt,
        fee_reversed -> BigInt,
        currency -> Text,
        reason -> Text,
        transaction_id -> Text,
        created_at -> BigInt,
    }
}

diesel::joinable!(credentials -> organisations (org_id));
diesel::joinable!(access_tokens -> credentials (client_id));
diesel::joinable!(postings -> journals (journal_id));
diesel::joinable!(deliveries -> events (event_id));
diesel::joinable!(deliveries -> webhook_endpoints (endpoint_id));
diesel::joinable!(delivery_attempts -> deliveries (delivery_id));
diesel::joinable!(payouts -> bulk_payouts (bulk_payout_id));

diesel::allow_tables_to_appear_in_same_query!(
    organisations,
    credentials,
    access_tokens,
    accounts,
    ledger_heads,
    journals,
    postings,
    wallets,
    charges,
    idempotency_keys,
    webhook_endpoints,
    events,
    deliveries,
    delivery_attempts,
    bulk_payouts,
    payouts,
    reversals,
);

// Merchant payment requests (`…-000006_payment_requests/up.sql`).
diesel::table! {
    payment_requests (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        pay_code -> Text,
        state -> Text,
        amount -> BigInt,
        fee -> BigInt,
        currency -> Text,
        reference -> Text,
        description -> Nullable<Text>,
        payer_msisdn -> Nullable<Text>,
        paid_by_msisdn -> Nullable<Text>,
        transaction_id -> Nullable<Text>,
        merchant_account -> Text,
        expires_at -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
        paid_at -> Nullable<BigInt>,
    }
}

// Lines waiting to be applied to a hot account (`…-000008_deferred_lines/up.sql`).
diesel::table! {
    deferred_lines (id) {
        id -> BigInt,
        journal_id -> Text,
        line_no -> Integer,
        account_id -> Text,
        amount -> BigInt,
        fee -> BigInt,
        created_at -> BigInt,
    }
}

diesel::joinable!(deferred_lines -> journals (journal_id));
diesel::allow_tables_to_appear_in_same_query!(deferred_lines, journals);
diesel::allow_tables_to_appear_in_same_query!(deferred_lines, accounts);
diesel::allow_tables_to_appear_in_same_query!(deferred_lines, postings);

// People who use the console (`…-000010_people/up.sql`).
diesel::table! {
    users (id) {
        id -> Text,
        org_id -> Text,
        email -> Text,
        email_key -> Text,
        name -> Text,
        role -> Text,
        password_hash -> Nullable<Text>,
        totp_secret -> Nullable<Binary>,
        totp_enabled_at -> Nullable<BigInt>,
        totp_last_step -> BigInt,
        demo -> Bool,
        created_at -> BigInt,
        activated_at -> Nullable<BigInt>,
        removed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    invitations (digest) {
        digest -> Text,
        user_id -> Text,
        invited_by -> Nullable<Text>,
        created_at -> BigInt,
        expires_at -> BigInt,
        accepted_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    recovery_codes (user_id, digest) {
        user_id -> Text,
        digest -> Text,
        created_at -> BigInt,
        used_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    console_sessions (digest) {
        digest -> Text,
        user_id -> Text,
        stage -> Text,
        mode -> Text,
        created_at -> BigInt,
        last_seen_at -> BigInt,
        expires_at -> BigInt,
        ip -> Text,
    }
}

diesel::table! {
    sign_in_failures (subject) {
        subject -> Text,
        window_start -> BigInt,
        count -> Integer,
        locked_until -> Nullable<BigInt>,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Text,
        org_id -> Nullable<Text>,
        user_id -> Nullable<Text>,
        actor -> Text,
        action -> Text,
        object_id -> Nullable<Text>,
        detail -> Text,
        ip -> Nullable<Text>,
        mode -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    organisation_settings (org_id) {
        org_id -> Text,
        require_two_factor -> Bool,
    }
}

diesel::joinable!(users -> organisations (org_id));
diesel::joinable!(recovery_codes -> users (user_id));
diesel::joinable!(console_sessions -> users (user_id));
diesel::joinable!(audit_log -> organisations (org_id));
diesel::joinable!(organisation_settings -> organisations (org_id));
diesel::allow_tables_to_appear_in_same_query!(
    users,
    invitations,
    recovery_codes,
    console_sessions,
    audit_log,
    organisation_settings,
    organisations,
);

// Callbacks and callback secrets (`…-000015_callbacks/up.sql`).
diesel::table! {
    callbacks (id) {
        id -> Text,
        org_id -> Text,
        mode -> Text,
        client_id -> Text,
        object_id -> Text,
        url -> Text,
        correlation_id -> Nullable<Text>,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Nullable<BigInt>,
        last_status -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    callback_secrets (org_id, mode) {
        org_id -> Text,
        mode -> Text,
        secret -> Binary,
        previous_secret -> Nullable<Binary>,
        previous_secret_expires_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}
