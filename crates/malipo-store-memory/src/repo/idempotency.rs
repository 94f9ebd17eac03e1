//! [`IdempotencyRepo`] over the in-memory tables.

use malipo_core::Timestamp;
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};
use malipo_service::{IdempotencyRepo, StoreError};

use crate::state::IdemKey;
use crate::tx::MemoryTx;

fn idem_key(scope: &KeyScope, key: &IdempotencyKey) -> IdemKey {
    (scope.org_id.clone(), scope.mode, scope.operation.clone(), key.as_str().to_owned())
}

impl IdempotencyRepo for MemoryTx<'_> {
    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self.r().keys.get(&idem_key(scope, key)).cloned())
    }

    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError> {
        let s = self.w()?;
        let k = idem_key(scope, key);
        if s.keys.contains_key(&k) {
            return Ok(false);
        }
        s.keys.insert(k, record.clone());
        Ok(true)
    }

    fn insert_keys(&mut self, keys: &[(KeyScope, IdempotencyKey, IdempotencyRecord)]) -> Result<usize, StoreError> {
        let mut stored = 0;
        for (scope, key, record) in keys {
            if self.insert_key(scope, key, record)? {
                stored += 1;
            }
        }
        Ok(stored)
    }

    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let count = s.keys.len();
        s.keys.retain(|_, r| r.created_at >= before);
        Ok(u64::try_from(count - s.keys.len()).unwrap_or(u64::MAX))
    }
}
