//! The shared storage contract (`malipo-store-contract`), run against both databases: every
//! case gets a fresh, migrated database of its own.

mod sqlite {
    use malipo_store_diesel::testing::TestDatabase;

    fn make() -> Box<dyn malipo_service::Store> {
        Box::new(TestDatabase::sqlite())
    }

    malipo_store_contract::store_contract_tests!(make);
}

mod postgres {
    use malipo_store_diesel::testing::TestDatabase;

    fn make() -> Box<dyn malipo_service::Store> {
        Box::new(TestDatabase::postgres())
    }

    malipo_store_contract::store_contract_tests!(make);
}
