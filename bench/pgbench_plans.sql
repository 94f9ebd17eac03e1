-- Generic plans (what a prepared statement ends up with) of the keyed statements in charge.sql, on
-- the seeded scratch tables. bench/report.py flags any "Seq Scan" in this output.
SET plan_cache_mode = force_generic_plan;
PREPARE token_lookup(text) AS
  SELECT t.org_id, t.mode, o.kind, c.revoked_at
    FROM access_tokens t
    JOIN credentials c ON c.client_id = t.client_id
    JOIN organisations o ON o.id = t.org_id
   WHERE t.digest = $1 LIMIT 1;
EXPLAIN EXECUTE token_lookup('x');
PREPARE collection_account(text, text) AS
  SELECT id FROM accounts WHERE org_id = $1 AND mode = $2 AND kind = 'collection' LIMIT 1;
EXPLAIN EXECUTE collection_account('org_1', 'test');
PREPARE store_response(text, text, text, bytea) AS
  UPDATE idempotency_keys SET status = 200, response_body = $4
   WHERE org_id = $1 AND mode = $2 AND operation = 'POST /partner/stk' AND key = $3;
EXPLAIN EXECUTE store_response('org_1', 'test', 'idem-1', '\x00');
