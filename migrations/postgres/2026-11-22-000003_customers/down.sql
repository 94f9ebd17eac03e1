DROP TABLE ussd_sessions;
ALTER TABLE charges DROP CONSTRAINT charges_id_prefix_check, DROP COLUMN commission, DROP COLUMN kind;
DROP INDEX wallets_id_document_key;
ALTER TABLE wallets
    DROP CONSTRAINT wallets_lock_reason_check,
    DROP CONSTRAINT wallets_id_check,
    DROP COLUMN lock_reason,
    DROP COLUMN date_of_birth,
    DROP COLUMN id_number,
    DROP COLUMN id_type;
