# shellcheck shell=bash
# Sourced by bench/transactions.sh and bench/replication.sh.
#
# seed_sql BACKEND ACCOUNT_ID: the INSERTs of ROWS charge journals of KES 250.00 (fee 2.50),
# PER_DAY a day, ending now: each pays the account 247.50 from one of 10,000 seeded wallets and
# 2.50 to a seeded revenue account (three postings, so the account holds a third of the table, as
# in a database with many customers); and the account's balance.
seed_sql() {
    local backend=$1 account=$2 now_us step_us net=24750
    now_us=$(($(date +%s) * 1000000))
    step_us=$((86400000000 / PER_DAY))
    local start_us=$((now_us - ROWS * step_us))
    if [[ $backend == postgres ]]; then
        cat <<SQL
INSERT INTO accounts (id, org_id, mode, kind, currency, balance, held, allow_negative, owner_msisdn, created_at)
SELECT 'acc_seedw' || w, NULL, 'test', 'wallet', 'KES', 0, 0, false, '2547' || lpad(w::text, 8, '0'), 0 FROM generate_series(0, 10000) AS w;
INSERT INTO journals (id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash)
SELECT 'tx_seed' || lpad(i::text, 9, '0'), 'test', 'KES', 'charge', 'ch_seed' || lpad(i::text, 9, '0'),
       $start_us + i::bigint * $step_us, 1000000000 + i, '', ''
FROM generate_series(1, $ROWS) AS i;
INSERT INTO postings (journal_id, line_no, account_id, amount, balance_after, created_at, fee)
SELECT 'tx_seed' || lpad(i::text, 9, '0'), l, CASE l WHEN 0 THEN 'acc_seedw' || (i % 10000) WHEN 1 THEN '$account' ELSE 'acc_seedw10000' END,
       CASE l WHEN 0 THEN -25000 WHEN 1 THEN $net ELSE 250 END,
       CASE l WHEN 1 THEN i::bigint * $net ELSE 0 END, $start_us + i::bigint * $step_us, CASE l WHEN 1 THEN 250 ELSE 0 END
FROM generate_series(1, $ROWS) AS i, generate_series(0, 2) AS l ORDER BY i, l;
UPDATE accounts SET balance = $ROWS::bigint * $net, posted_at = $start_us + $ROWS::bigint * $step_us WHERE id = '$account';
ANALYZE postings; ANALYZE journals; ANALYZE accounts;
SQL
    else
        cat <<SQL
WITH RECURSIVE w(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM w WHERE i < 10000)
INSERT INTO accounts (id, org_id, mode, kind, currency, balance, held, allow_negative, owner_msisdn, created_at)
SELECT 'acc_seedw' || i, NULL, 'test', 'wallet', 'KES', 0, 0, 0, printf('2547%08d', i), 0 FROM w;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ROWS)
INSERT INTO journals (id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash)
SELECT printf('tx_seed%09d', i), 'test', 'KES', 'charge', printf('ch_seed%09d', i), $start_us + i * $step_us, 1000000000 + i, '', '' FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ROWS), l(j) AS (VALUES (0), (1), (2))
INSERT INTO postings (journal_id, line_no, account_id, amount, balance_after, created_at, fee)
SELECT printf('tx_seed%09d', i), j, CASE j WHEN 0 THEN 'acc_seedw' || (i % 10000) WHEN 1 THEN '$account' ELSE 'acc_seedw10000' END,
       CASE j WHEN 0 THEN -25000 WHEN 1 THEN $net ELSE 250 END,
       CASE j WHEN 1 THEN i * $net ELSE 0 END, $start_us + i * $step_us, CASE j WHEN 1 THEN 250 ELSE 0 END
FROM n, l ORDER BY i, j;
UPDATE accounts SET balance = $ROWS * $net, posted_at = $start_us + $ROWS * $step_us WHERE id = '$account';
ANALYZE;
SQL
    fi
}
