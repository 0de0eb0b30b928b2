//! `pora serve`: the shards of `--file` served as a local JSON-RPC 2.0 mining service with
//! Prometheus metrics (the pora-serve crate), and the metrics listener of
//! `pora mine --metrics-listen`.
//!
//! Safe by default: loopback only; another address needs `--allow-remote` and a bearer token
//! (`--auth-token-file`). SIGTERM / SIGINT (Ctrl-C) cancel the running slot, which answers with
//! its partial counts, and the process exits 0 within 2 s; a second signal exits at once.

use crate::common::SessionArgs;
use anyhow::Context;
use pora_mine::session::Session;
use pora_serve::{Access, MetricsExporter, Server, ServerConfig, Service, Shutdown};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Address and port to listen on (IP:PORT; port 0 lets the OS choose). The bound address
    /// is printed as `pora serve: listening on http://IP:PORT`.
    #[arg(long, default_value = "127.0.0.1:9645")]
    listen: SocketAddr,
    /// Allow a --listen address other than loopback; requires --auth-token-file.
    #[arg(long, requires = "auth_token_file")]
    allow_remote: bool,
    /// File holding the bearer token every request must carry (`Authorization: Bearer TOKEN`);
    /// surrounding whitespace is ignored.
    #[arg(long, value_name = "FILE")]
    auth_token_file: Option<PathBuf>,
    /// Largest request body, bytes (larger ones get 413).
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    max_body_bytes: u64,
    /// Seconds a client may take to send a request's headers (also between keep-alive
    /// requests), and again its body; slower or idle connections are closed.
    #[arg(long, default_value = "10", value_parser = parse_timeout)]
    io_timeout: Duration,
    /// Most connections served at once; more wait in the OS backlog.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65536))]
    max_connections: u64,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|e| format!("--io-timeout {s}: not a number of seconds ({e})"))?;
    if !(0.1..=3600.0).contains(&secs) {
        return Err(format!(
            "--io-timeout {s}: must be between 0.1 and 3600 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn run(args: ServeArgs) -> anyhow::Result<std::process::ExitCode> {
    let config = server_config(&args)?;
    let session = Session::open(&args.session.files.0, &args.session.open_options())?;
    for note in session.notes() {
        eprintln!("pora serve: {note}");
    }
    let service = Service::new(session)?;
    let server = Server::rpc(config, service.clone())?;
    let addr = server.local_addr()?;
    let shutdown = Shutdown::new();
    install_stop_handler(&service, &shutdown);
    for line in service.session().opening_lines() {
        eprintln!("pora serve: {line}");
    }
    eprintln!("pora serve: listening on http://{addr}");
    server.run(&shutdown)?;
    eprintln!("pora serve: stopped");
    Ok(std::process::ExitCode::SUCCESS)
}

fn server_config(args: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let mut config = ServerConfig::new(args.listen);
    config.max_body_bytes = args.max_body_bytes as usize;
    config.io_timeout = args.io_timeout;
    config.max_connections = args.max_connections as usize;
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        anyhow::bail!(
            "--listen {}: not a loopback address; to serve beyond this machine pass --allow-remote and --auth-token-file",
            args.listen
        );
    }
    if let Some(path) = &args.auth_token_file {
        config.access = Access::Token(read_token(path)?);
    }
    Ok(config)
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--auth-token-file {}", path.display()))?;
    let token = text.trim();
    anyhow::ensure!(
        !token.is_empty(),
        "--auth-token-file {}: the file is empty",
        path.display()
    );
    anyhow::ensure!(
        token.bytes().all(|b| b.is_ascii_graphic()),
        "--auth-token-file {}: the token must be printable ASCII without spaces",
        path.display()
    );
    warn_if_readable_by_others(path);
    Ok(token.to_string())
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "pora serve: warning: {} is readable by other users; chmod 600 it",
                path.display()
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

/// First SIGTERM / SIGINT: cancel the slot (it answers with partial counts) and stop serving;
/// a second one exits at once.
/// SIGTERM / Ctrl-C: answer the running slot with partial counts, stop listening, exit 0.
fn install_stop_handler(service: &std::sync::Arc<Service>, shutdown: &Shutdown) {
    let (service, shutdown) = (service.clone(), shutdown.clone());
    crate::signals::install_with("serve", 0, move || {
        eprintln!("pora serve: stopping (the running slot, if any, answers with partial counts)");
        service.begin_shutdown();
        shutdown.trigger();
    });
}

/// `pora mine --metrics-listen ADDR`: starts the metrics listener for `session`.
pub fn start_metrics(
    listen: Option<SocketAddr>,
    session: &Session,
) -> anyhow::Result<Option<MetricsExporter>> {
    let Some(listen) = listen else {
        return Ok(None);
    };
    let exporter = MetricsExporter::start(listen, session).context("--metrics-listen")?;
    eprintln!(
        "pora mine: metrics on http://{}/metrics",
        exporter.local_addr()
    );
    Ok(Some(exporter))
}
