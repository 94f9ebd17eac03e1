-- pgbench script: the SQL of one `POST /partner/stk` (charge creation), for `bench/run.sh`.
--
-- KEEP IN STEP WITH the statements crates/malipo-store-diesel issues for a charge creation
-- (Platform::authenticate through Store::query, then Platform::create_charge inside
-- Platform::idempotent) and with
-- migrations/postgres/*/up.sql (copied into bench/pgbench_schema.sql). Run it with `-M prepared`,
-- as diesel prepares its statements. The variables play the request: one of 1,000 bearer tokens,
-- a random idempotency key and payer.
--
-- pgbench reads a colon followed by a letter or digit as a variable even inside a string, so no
-- such colon may appear in this file except for the variables (hence the spaces in the JSON).

\set tok random(1, 1000)
\set idem random(1, 9000000000000000000)
\set cid random(1, 9000000000000000000)
\set payer random(254700000000, 254799999999)

-- 1. Authenticate: one statement outside any transaction (Store::query). The server caches the
-- merchant's collection account id after its first charge; here the lookup rides along as a join,
-- so pgbench does slightly more than the server, never less.
-- The server's clock (µs) and a time-ordered charge id like `ch_` + UUIDv7 come back with the
-- row; the real server makes both in Rust, so they cost nothing extra here.
SELECT t.digest AS tok_digest, t.client_id AS tok_client_id, t.org_id AS org_id, t.mode AS mode,
       t.scopes AS tok_scopes, t.created_at AS tok_created_at, t.expires_at AS tok_expires_at,
       t.revoked_at AS tok_revoked_at, o.id AS org_row_id, o.name AS org_name, o.kind AS org_kind,
       o.country AS org_country, o.created_at AS org_created_at, c.revoked_at AS cred_revoked_at,
       a.id AS acct_id,
       (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now_us,
       'ch_' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
             || lpad(to_hex(:cid::bigint), 16, '0') || lpad(to_hex(:tok::int), 4, '0') AS charge_id
  FROM access_tokens t
  JOIN credentials c ON c.client_id = t.client_id
  JOIN organisations o ON o.id = t.org_id
  JOIN accounts a ON a.org_id = t.org_id AND a.mode = t.mode AND a.kind = 'collection'
 WHERE t.digest = encode(sha256(('tok-' || :tok::text)::bytea), 'hex')
 LIMIT 1
\gset

-- 2. The effect, then its idempotency key stored with the response, in one read-committed
-- transaction (Platform::idempotent: a conflicting key rolls the effect back and replays).
BEGIN ISOLATION LEVEL READ COMMITTED;
INSERT INTO charges (id, org_id, mode, payer_msisdn, amount, fee, currency, amount_reversed, reference,
                     description, state, failure_reason, transaction_id, merchant_account, payer_account,
                     created_at, updated_at, expires_at, completed_at, next_action_at)
VALUES (:charge_id::text, :org_id::text, :mode::text, :payer::text, 10000, 0, 'KES', 0,
        'bench-' || :idem::text, NULL, 'pending', NULL, NULL, :acct_id::text, NULL,
        :now_us::bigint, :now_us::bigint, :now_us::bigint + 90000000, NULL, :now_us::bigint)
ON CONFLICT DO NOTHING;
INSERT INTO idempotency_keys (org_id, mode, operation, key, fingerprint, status, response_body, created_at)
VALUES (:org_id::text, :mode::text, 'POST /partner/stk', 'idem-' || :idem::text,
        '5f2b8c0e7a1d4b6f9c3e2a1b0d8f7e6c5b4a39281706f5e4d3c2b1a098f7e6d5', 200,
        convert_to(
           '{"charge_ref": "' || :charge_id::text || '", "state": "pending", "mode": "test", '
           || '"payer_msisdn": "' || :payer::text || '", "amount": 100.00, "currency": "KES", '
           || '"fee": 0.00, "amount_reversed": 0.00, "reference": "bench-' || :idem::text || '", '
           || '"description": null, "failure_reason": null, "transaction_id": null, '
           || '"created_at": ' || to_json(to_timestamp(:now_us::bigint / 1000000.0))::text
           || ', "updated_at": ' || to_json(to_timestamp(:now_us::bigint / 1000000.0))::text
           || ', "expires_at": ' || to_json(to_timestamp(:now_us::bigint / 1000000.0 + 90))::text
           || ', "completed_at": null}', 'UTF8'),
        :now_us::bigint)
ON CONFLICT DO NOTHING;
COMMIT;
