//! The HTTP/1.1 listener (hyper on a current-thread tokio runtime): `POST /` JSON-RPC,
//! `GET /metrics`, `GET /healthz`, and the limits that keep a bad client from hurting mining:
//!
//! - request headers must arrive within the I/O timeout (also between keep-alive requests, so an
//!   idle or half-open connection is closed), and the body within the same timeout again;
//! - bodies over the size limit are refused (413) without being buffered;
//! - at most `max_connections` connections are served at once (more wait in the OS backlog);
//! - with a token, every request needs `Authorization: Bearer <token>` (401 otherwise);
//! - each request is answered on its own: an error in one never affects the next.
//!
//! On shutdown the listener closes, in-flight requests get up to the grace period to finish (a
//! cancelled slot answers with its partial counts), then the runtime is dropped.

use crate::config::{Access, ServerConfig, MAX_BLOCKING_THREADS, MAX_HEADER_BYTES};
use crate::error::ServeError;
use crate::metrics::{self, Metrics};
use crate::rpc;
use crate::service::Service;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};

/// Tells a running [`Server`] to stop; cheap to clone, callable from any thread (a signal
/// handler's included).
#[derive(Clone)]
pub struct Shutdown(Arc<watch::Sender<bool>>);

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown(Arc::new(watch::Sender::new(false)))
    }
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn trigger(&self) {
        self.0.send_replace(true);
    }
}

enum Routes {
    Rpc(Arc<Service>),
    MetricsOnly(Arc<Metrics>),
}

struct App {
    routes: Routes,
    token: Option<Vec<u8>>,
    max_body_bytes: usize,
    io_timeout: Duration,
}

impl App {
    fn metrics(&self) -> &Metrics {
        match &self.routes {
            Routes::Rpc(service) => service.metrics(),
            Routes::MetricsOnly(metrics) => metrics,
        }
    }
}

/// A bound listener, ready to run.
pub struct Server {
    listener: std::net::TcpListener,
    config: ServerConfig,
    app: Arc<App>,
}

impl Server {
    /// Binds the JSON-RPC service (and its metrics) on `config.listen`.
    pub fn rpc(config: ServerConfig, service: Arc<Service>) -> Result<Server, ServeError> {
        Server::bind(config, Routes::Rpc(service))
    }

    /// Binds a listener that serves only `GET /metrics` and `GET /healthz`.
    pub fn metrics_only(config: ServerConfig, metrics: Arc<Metrics>) -> Result<Server, ServeError> {
        Server::bind(config, Routes::MetricsOnly(metrics))
    }

    fn bind(config: ServerConfig, routes: Routes) -> Result<Server, ServeError> {
        config.check()?;
        let bind_error = |source| ServeError::Bind {
            addr: config.listen,
            source,
        };
        let listener = std::net::TcpListener::bind(config.listen).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let token = match &config.access {
            Access::Token { token, .. } => Some(token.as_bytes().to_vec()),
            Access::LoopbackOnly | Access::Open => None,
        };
        let app = Arc::new(App {
            routes,
            token,
            max_body_bytes: config.max_body_bytes,
            io_timeout: config.io_timeout,
        });
        Ok(Server {
            listener,
            config,
            app,
        })
    }

    /// The bound address (the port the OS chose for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener
            .local_addr()
            .map_err(|source| ServeError::Bind {
                addr: self.config.listen,
                source,
            })
    }

    /// Serves until `shutdown` is triggered, then lets in-flight requests finish (at most the
    /// grace period) and returns.
    pub fn run(self, shutdown: &Shutdown) -> Result<(), ServeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .thread_name("pora-serve")
            .build()
            .map_err(ServeError::Runtime)?;
        let stop = shutdown.0.subscribe();
        let result = runtime.block_on(self.serve(stop));
        // A cancelled slot that has not returned yet must not hold the process.
        runtime.shutdown_timeout(Duration::from_millis(200));
        result
    }

    async fn serve(self, mut stop: watch::Receiver<bool>) -> Result<(), ServeError> {
        let addr = self.config.listen;
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(|source| ServeError::Bind { addr, source })?;
        let graceful = GracefulShutdown::new();
        let permits = Arc::new(Semaphore::new(self.config.max_connections.max(1)));
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.config.io_timeout)
            .max_buf_size(MAX_HEADER_BYTES);
        loop {
            let permit = tokio::select! {
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(p) => p,
                    Err(_) => break,
                },
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        // Out of file descriptors, or a connection reset before accept: back
                        // off briefly instead of spinning.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                },
                _ = stop.wait_for(|stop| *stop) => break,
            };
            let _ = stream.set_nodelay(true);
            let app = self.app.clone();
            let service = hyper::service::service_fn(move |req| handle(app.clone(), req));
            let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(async move {
                // A connection's error (timeout, reset, malformed HTTP) ends that connection only.
                let _ = conn.await;
                drop(permit);
            });
        }
        drop(listener);
        let _ = tokio::time::timeout(self.config.shutdown_grace, graceful.shutdown()).await;
        Ok(())
    }
}

type Answer = Response<Full<Bytes>>;

enum Route {
    Rpc(Arc<Service>),
    Metrics,
    Health,
    WrongMethod(&'static str),
    NotFound,
}

fn route(app: &App, method: &Method, path: &str) -> Route {
    let is_rpc = matches!(app.routes, Routes::Rpc(_));
    match (method, path, &app.routes) {
        (&Method::POST, "/", Routes::Rpc(service)) => Route::Rpc(service.clone()),
        (&Method::GET, "/metrics", _) => Route::Metrics,
        (&Method::GET, "/healthz", _) => Route::Health,
        (_, "/", _) if is_rpc => Route::WrongMethod("POST"),
        (_, "/metrics" | "/healthz", _) => Route::WrongMethod("GET"),
        _ => Route::NotFound,
    }
}

async fn handle(app: Arc<App>, req: Request<Incoming>) -> Result<Answer, Infallible> {
    // A slot's time counts from here, before the body is read: the caller's clock started when
    // it sent the request.
    let received = Instant::now();
    if let Some(token) = &app.token {
        if !authorized(req.headers(), token) {
            let mut answer = text(StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n");
            let headers = answer.headers_mut();
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            // The body is left unread, so the connection cannot carry another request: say so,
            // or a client reuses it and finds it closed.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Ok(answer);
        }
    }
    let answer = match route(&app, req.method(), req.uri().path()) {
        Route::Rpc(service) => rpc_answer(&app, &service, req, received).await,
        Route::Metrics => {
            let mut answer = Response::new(Full::new(Bytes::from(app.metrics().encode())));
            answer.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(metrics::CONTENT_TYPE),
            );
            answer
        }
        Route::Health => text(StatusCode::OK, "ok\n"),
        Route::WrongMethod(allow) => {
            let mut answer = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            answer
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
            answer
        }
        Route::NotFound => text(
            StatusCode::NOT_FOUND,
            "not found: POST / (JSON-RPC), GET /metrics, GET /healthz\n",
        ),
    };
    Ok(answer)
}

/// Reads the body (size limit, timeout) and answers the JSON-RPC request(s) in it, received at
/// `received`.
async fn rpc_answer(
    app: &App,
    service: &Arc<Service>,
    req: Request<Incoming>,
    received: Instant,
) -> Answer {
    let limit = app.max_body_bytes;
    let too_large = || {
        rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body over {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let body = Limited::new(req.into_body(), limit).collect();
    let bytes = match tokio::time::timeout(app.io_timeout, body).await {
        Err(_) => {
            let secs = app.io_timeout.as_secs_f64();
            return rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                format!("body not received within {secs} s"),
            );
        }
        Ok(Err(e)) if e.is::<LengthLimitError>() => return too_large(),
        Ok(Err(e)) => return rpc_error(StatusCode::BAD_REQUEST, format!("reading the body: {e}")),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    match rpc::handle_body(service, &bytes, received).await {
        Some(answer) => json(StatusCode::OK, &answer),
        None => text(StatusCode::NO_CONTENT, ""),
    }
}

/// An HTTP-level refusal, with a JSON-RPC error body (`id` null) for clients that only read it.
fn rpc_error(status: StatusCode, why: String) -> Answer {
    let mut answer = json(status, &rpc::refused(why));
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

fn json(status: StatusCode, value: &serde_json::Value) -> Answer {
    // Rendering a `Value` cannot fail: its map keys are strings.
    let mut answer = Response::new(Full::new(Bytes::from(value.to_string())));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}

fn text(status: StatusCode, body: &'static str) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}

/// `Authorization: Bearer <token>`, compared without an early exit on the first differing byte.
fn authorized(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some((scheme, given)) = value.split_first_chunk::<7>() else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case(b"Bearer ") || given.len() != token.len() {
        return false;
    }
    given
        .iter()
        .zip(token)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn bearer_token_must_match_exactly() {
        assert!(authorized(&headers("Bearer s3cret"), b"s3cret"));
        assert!(authorized(&headers("bearer s3cret"), b"s3cret"));
        assert!(!authorized(&headers("Bearer s3cre"), b"s3cret"));
        assert!(!authorized(&headers("Bearer s3cretx"), b"s3cret"));
        assert!(!authorized(&headers("Basic s3cret"), b"s3cret"));
        assert!(!authorized(&HeaderMap::new(), b"s3cret"));
    }
}
