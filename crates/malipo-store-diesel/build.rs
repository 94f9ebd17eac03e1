//! `embed_migrations!` reads the migration directories while compiling, and Cargo does not know
//! about them: rebuild the crate when one changes (a new migration, an edited `up.sql`, a
//! `metadata.toml`).

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
