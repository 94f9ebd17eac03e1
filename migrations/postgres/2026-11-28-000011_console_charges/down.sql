-- Undoes up.sql.
DROP INDEX events_object_idx;
DROP INDEX charges_created_idx;
DROP INDEX charges_state_idx;
DROP INDEX charges_payer_idx;
