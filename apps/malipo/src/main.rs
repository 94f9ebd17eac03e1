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

/// The database URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***{}", &url[..s], &url[at..]),
        _ => url.to_owned(),
    }
}
