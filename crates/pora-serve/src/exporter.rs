//! `pora mine --metrics-listen ADDR`: the same metrics as `pora serve`, on a listener of their
//! own (a background thread with a small runtime) while the CLI mines; the CLI feeds each slot's
//! report after the slot.

use crate::config::{Access, ServerConfig};
use crate::error::ServeError;
use crate::http::{Server, Shutdown};
use crate::metrics::Metrics;
use pora_mine::session::{MinedSlot, Session};
use std::net::SocketAddr;
use std::sync::Arc;

/// A running metrics-only listener; dropping it stops the listener.
pub struct MetricsExporter {
    metrics: Arc<Metrics>,
    addr: SocketAddr,
    shutdown: Shutdown,
}

impl MetricsExporter {
    /// Serves `GET /metrics` and `GET /healthz` for `session`'s shards on `listen`. The metrics
    /// are read-only, so any address is accepted (a Prometheus server elsewhere may scrape).
    pub fn start(listen: SocketAddr, session: &Session) -> Result<MetricsExporter, ServeError> {
        let metrics = Arc::new(Metrics::new(&session.choices())?);
        let mut config = ServerConfig::new(listen);
        config.access = Access::Open;
        let server = Server::metrics_only(config, metrics.clone())?;
        let addr = server.local_addr()?;
        let shutdown = Shutdown::new();
        let stop = shutdown.clone();
        std::thread::Builder::new()
            .name("pora-metrics".into())
            .spawn(move || {
                // Failing to serve metrics must not stop mining; the address was bound above.
                let _ = server.run(&stop);
            })
            .map_err(ServeError::Runtime)?;
        Ok(MetricsExporter {
            metrics,
            addr,
            shutdown,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Marks a slot as running.
    pub fn slot_started(&self) {
        self.metrics.slot_started();
    }

    /// Adds one finished slot.
    pub fn record_slot(&self, mined: &MinedSlot) {
        self.metrics.record_slot(&mined.report, &mined.choices);
    }
}

impl Drop for MetricsExporter {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}
