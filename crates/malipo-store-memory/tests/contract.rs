//! The shared storage contract, run against the in-memory adapter.

fn make() -> Box<dyn malipo_service::Store> {
    Box::new(malipo_store_memory::MemoryStore::new())
}

malipo_store_contract::store_contract_tests!(make);
