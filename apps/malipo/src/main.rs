//! `malipo`: with no subcommand it serves, so `cargo run` starts the service.

use std::net::TcpListener;

/// jemalloc returns freed pages to the system on a decay timer; glibc's per-thread arenas kept
/// fragmented memory from bursts of concurrent requests (see docs/performance.md).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use clap::Parser;
use malipo::cli::{Action, Cli};

fn main() -> std::process::ExitCode {
    let _ = dotenvy::dotenv();
    let action = Cli::parse().into_action().unwrap_or_else(|e| e.exit());
    let result = match action {
        Action::Serve(settings) => {
            with_few_malloc_arenas();
            malipo::init_logging(&settings.log);
            serve(settings).map(|()| 0)
        }
        Action::Operator(settings, command) => {
            malipo::init_logging(&settings.log);
            malipo::cli::run(&settings, *command)
        }
    };
    match result {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("malipo: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn serve(settings: malipo::Settings) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(async move {
        let (platform, _store) = malipo::platform(&settings)?;
        let listener = TcpListener::bind(&settings.bind).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.bind))?;
        let addr = listener.local_addr()?;
        if settings.demo {
            malipo::demo::ensure_demo(&platform, &settings.database_url, &format!("http://{addr}"))?;
        }
        let running = malipo::start(&settings, platform, listener)?;
        tracing::info!(%addr, database = %redact(&settings.database_url), "serving");
        running.done.await??;
        Ok(())
    })
}

/// The C libraries (SQLite, libpq, OpenSSL) allocate with glibc's `malloc` (Rust's own
/// allocations go to jemalloc, above), which gives up to eight arenas per core to the threads
/// that use it. The requests' database calls hop between blocking threads, so SQLite's pages and
/// statements were spread over many arenas and their freed memory kept. Two arenas are enough
/// for those libraries' allocations, and the memory one thread frees is reused by the next
/// instead of staying in an arena of its own (docs/throughput.md, "Memory"). glibc reads
/// `MALLOC_ARENA_MAX` only when the process starts, so the server starts itself again with it
/// set, unless the environment already sets it (then the operator's value stands).
#[cfg(unix)]
fn with_few_malloc_arenas() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let failed = std::process::Command::new(exe).args(std::env::args_os().skip(1)).env("MALLOC_ARENA_MAX", "2").exec();
    // Only returns on failure: serve as we are.
    eprintln!("malipo: could not restart with MALLOC_ARENA_MAX=2 ({failed}); serving with glibc's default arenas");
}

#[cfg(not(unix))]
fn with_few_malloc_arenas() {}

/// The database URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***{}", &url[..s], &url[at..]),
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// jemalloc is built with the options `.cargo/config.toml` gives it (small thread caches,
    /// pages returned from a background thread after a second) and runs with them. Fails when
    /// the workspace's build configuration is lost.
    #[test]
    fn jemalloc_is_built_with_the_workspace_options() {
        let built = tikv_jemalloc_ctl::config::malloc_conf::read().unwrap();
        // The crate reads the C string with its terminating NUL.
        assert_eq!(built.trim_end_matches(char::from(0)), "background_thread:true,dirty_decay_ms:1000,tcache_max:1024");
        if std::env::var_os("_RJEM_MALLOC_CONF").is_none() {
            assert!(tikv_jemalloc_ctl::opt::background_thread::read().unwrap());
            assert_eq!(tikv_jemalloc_ctl::opt::tcache_max::read().unwrap(), 1024);
        }
    }
}
