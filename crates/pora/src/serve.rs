//! `pora serve`: the shards of `--file` served as a local JSON-RPC 2.0 mining service with
//! Prometheus metrics (the pora-serve crate), and the metrics listener of
//! `pora mine --metrics-listen`.
//!
//! Safe by default: loopback only; another address needs `--allow-remote` and a bearer token
//! (`--auth-token-file`). SIGTERM / SIGINT (Ctrl-C) cancel the running slot, which answers with
//! its partial counts, and the process exits 0 within 2 s; a second signal exits at once.

use crate::common::SessionArgs;
use anyhow::{anyhow, Context};
use pora_mine::session::Session;
use pora_serve::{Access, MetricsExporter, ServeError, Server, ServerConfig, Service, Shutdown};
use std::net::SocketAddr;
use std::path::PathBuf;
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
    #[arg(long, default_value_t = pora_serve::MAX_BODY_BYTES,
        value_parser = clap::value_parser!(u64).range(pora_serve::MAX_BODY_BYTES_RANGE))]
    max_body_bytes: u64,
    /// Seconds a client may take to send a request's headers (also between keep-alive
    /// requests), and again its body; slower or idle connections are closed.
    #[arg(long, default_value_t = pora_serve::IO_TIMEOUT_SECS, value_parser = parse_timeout)]
    io_timeout: f64,
    /// Most connections served at once; more wait in the OS backlog.
    #[arg(long, default_value_t = pora_serve::MAX_CONNECTIONS,
        value_parser = clap::value_parser!(u64).range(pora_serve::MAX_CONNECTIONS_RANGE))]
    max_connections: u64,
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    let range = pora_serve::IO_TIMEOUT_SECS_RANGE;
    let (lo, hi) = (range.start(), range.end());
    let secs = s.parse::<f64>().ok().filter(|secs| range.contains(secs));
    secs.ok_or_else(|| format!("--io-timeout {s}: not a number of seconds from {lo} to {hi}"))
}

pub fn run(args: ServeArgs) -> anyhow::Result<std::process::ExitCode> {
    let config = server_config(&args)?;
    let session = Session::open(&args.session.files.0, &args.session.open_options())?;
    let service = Service::new(session)?;
    let server = Server::rpc(config, service.clone()).map_err(with_flags)?;
    let shutdown = Shutdown::new();
    install_stop_handler(&service, &shutdown);
    let session = service.session();
    for line in [session.notes().to_vec(), session.opening_lines()].concat() {
        eprintln!("pora serve: {line}");
    }
    eprintln!("pora serve: listening on http://{}", server.local_addr()?);
    server.run(&shutdown)?;
    eprintln!("pora serve: stopped");
    Ok(std::process::ExitCode::SUCCESS)
}

/// The listener's config from the flags, checked before any shard is opened.
fn server_config(args: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let mut config = ServerConfig::new(args.listen);
    config.max_body_bytes = args.max_body_bytes as usize;
    config.io_timeout = Duration::from_secs_f64(args.io_timeout);
    config.max_connections = args.max_connections as usize;
    if let Some(path) = &args.auth_token_file {
        let token = pora_serve::read_token_file(path).map_err(with_flags)?;
        if pora_serve::readable_by_others(path) {
            let path = path.display();
            eprintln!("pora serve: warning: {path} is readable by other users; chmod 600 it");
        }
        let remote = args.allow_remote;
        config.access = Access::Token { token, remote };
    }
    config.check().map_err(with_flags)?;
    Ok(config)
}

/// The service's refusals as this command tells them: naming the flags that fix them.
fn with_flags(e: ServeError) -> anyhow::Error {
    match e {
        ServeError::NotLoopback { addr } => anyhow!(
            "--listen {addr}: not a loopback address; to serve beyond this machine pass --allow-remote and --auth-token-file"
        ),
        ServeError::TokenFile { path, why } => anyhow!("--auth-token-file {}: {why}", path.display()),
        other => other.into(),
    }
}

/// First SIGTERM / SIGINT: cancel the slot (it answers with partial counts) and stop serving;
/// a second one exits at once.
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
    let addr = exporter.local_addr();
    eprintln!("pora mine: metrics on http://{addr}/metrics");
    Ok(Some(exporter))
}
