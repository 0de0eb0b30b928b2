//! The dispatch: the RPC methods ([`Method`], listed once), their named params (every error
//! names the field, in the JSON spelling), the call of the [`Service`], and the one mapping of
//! the service's typed errors to JSON-RPC codes.

use crate::codes::{
    RpcError, INVALID_PARAMS, IO_ERROR, METHOD_NOT_FOUND, MINING_FAILED, SHUTTING_DOWN,
    SLOT_RUNNING,
};
use crate::params::Params;
use crate::service::{list, Service, ServiceError};
use pora_core::{H256, U256};
use pora_mine::{ErrorKind, Find, MineError, SlotRequest};
use pora_mine::{MAX_SLOT_LENGTH_MS, NONCES_PER_SLOT, SLOT_LENGTH_MS};
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The methods the service answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Hash,
    MineSlot,
    Cancel,
    Status,
}

impl Method {
    /// Every method, in the order the docs list them.
    pub const ALL: [Method; 4] = [
        Method::Hash,
        Method::MineSlot,
        Method::Cancel,
        Method::Status,
    ];

    /// The name a request calls it by; also its label in `pora_rpc_requests_total`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Hash => "pora_hash",
            Method::MineSlot => "pora_mineSlot",
            Method::Cancel => "pora_cancel",
            Method::Status => "pora_status",
        }
    }

    /// The method called `name`, if the service has it.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Reads and checks this method's params: everything a call does before it reaches the
    /// session. `random_checks` is the samples per nonce the shards were opened with. A slot's
    /// time counts from now: [`Method::parse_params_received`] for a request received earlier.
    pub fn parse_params(self, params: Option<Value>, random_checks: u32) -> Result<Call, RpcError> {
        self.parse_params_received(params, random_checks, Instant::now())
    }

    /// [`Method::parse_params`] for a request the service received at `received`: a slot's
    /// `slotMs` counts from then.
    pub fn parse_params_received(
        self,
        params: Option<Value>,
        random_checks: u32,
        received: Instant,
    ) -> Result<Call, RpcError> {
        let mut params = Params::new(params)?;
        let call = match self {
            Method::Hash => hash_params(&mut params, random_checks)?,
            Method::MineSlot => mine_slot_params(&mut params, random_checks, received)?,
            Method::Cancel => Call::Cancel,
            Method::Status => Call::Status,
        };
        params.finish()?;
        Ok(call)
    }

    async fn call(
        self,
        service: &Arc<Service>,
        params: Option<Value>,
        received: Instant,
    ) -> Result<Value, RpcError> {
        let served = service.session().miner().config().random_checks;
        match self.parse_params_received(params, served, received)? {
            Call::Hash {
                shard,
                randao,
                nonce,
                required,
            } => {
                let record = service.hash(shard, randao, nonce, required).await;
                answer(record.map_err(|e| service_error(service, e))?)
            }
            Call::MineSlot(request) => {
                let slot = service.mine_slot(*request).await;
                answer(slot.map_err(|e| service_error(service, e))?)
            }
            Call::Cancel => Ok(json!({ "cancelled": service.cancel() })),
            Call::Status => answer(service.status()),
        }
    }
}

/// A call whose params were read and checked, ready for the service.
#[derive(Debug)]
pub enum Call {
    Hash {
        shard: Option<u64>,
        randao: H256,
        nonce: u64,
        required: Option<U256>,
    },
    MineSlot(Box<SlotRequest>),
    Cancel,
    Status,
}

/// Calls the method named `name` with `params`, received at `received`, and counts the call.
pub async fn call(
    service: &Arc<Service>,
    name: &str,
    params: Option<Value>,
    received: Instant,
) -> Result<Value, RpcError> {
    let method = Method::parse(name);
    let result = match method {
        Some(method) => method.call(service, params, received).await,
        None => Err(not_found(name)),
    };
    service
        .metrics()
        .record_rpc(method.map(Method::name), result.is_ok());
    result
}

pub(crate) fn not_found(name: &str) -> RpcError {
    // Echo at most a short prefix of what the client sent.
    let shown: String = name.chars().take(64).collect();
    let names: Vec<&str> = Method::ALL.into_iter().map(Method::name).collect();
    RpcError::new(
        METHOD_NOT_FOUND,
        format!(
            "method not found: `{shown}` (methods: {})",
            names.join(", ")
        ),
    )
}

/// `{randao, nonce, shard?, randomChecks?, requiredDiff? | difficulty + interval ...}`.
fn hash_params(params: &mut Params, random_checks: u32) -> Result<Call, RpcError> {
    let randao = params.h256("randao")?;
    let nonce = params.quantity("nonce")?;
    let shard = params.opt_quantity("shard")?;
    check_random_checks(random_checks, params)?;
    let required = params.required_diff()?;
    Ok(Call::Hash {
        shard,
        randao,
        nonce,
        required,
    })
}

/// `{randao, nonceStart?, nonceEnd?, requiredDiff? | difficulty + interval ..., find?,
/// slotMs? | deadlineUnixMs?, randomChecks?}`; left out, the nonces and the slot length are
/// es-node's. The slot's deadline is fixed here, from the request's receipt: `slotMs` after it,
/// or the wall-clock `deadlineUnixMs` as the service's clock read it then.
fn mine_slot_params(
    params: &mut Params,
    random_checks: u32,
    received: Instant,
) -> Result<Call, RpcError> {
    let randao = params.h256("randao")?;
    let start = params.opt_quantity("nonceStart")?.unwrap_or(0);
    let end = params.opt_quantity("nonceEnd")?.unwrap_or(NONCES_PER_SLOT);
    if end <= start {
        return Err(RpcError::invalid_param(
            "nonceEnd",
            format!("{end} must be greater than nonceStart {start} (the range is nonceStart..nonceEnd, end exclusive)"),
        ));
    }
    let find = find(params.opt_str("find")?.as_deref())?;
    let deadline = slot_deadline(
        params.opt_quantity("slotMs")?,
        params.opt_quantity("deadlineUnixMs")?,
        received,
    )?;
    check_random_checks(random_checks, params)?;
    let required = params.required_diff()?;
    let request = SlotRequest::new(randao)
        .with_entered(received)
        .with_deadline(deadline)
        .with_nonces(start..end)
        .with_find(find)
        .with_required_diff(required);
    Ok(Call::MineSlot(Box::new(request)))
}

/// The slot's deadline from `slotMs` (counted from `received`) or `deadlineUnixMs` (the wall
/// clock's, converted with the clock as it read at `received`); es-node's slot length when
/// neither is given.
fn slot_deadline(
    slot_ms: Option<u64>,
    deadline_unix_ms: Option<u64>,
    received: Instant,
) -> Result<Instant, RpcError> {
    let slot_ms = match (slot_ms, deadline_unix_ms) {
        (Some(_), Some(_)) => {
            return Err(RpcError::invalid_param(
                "deadlineUnixMs",
                "give slotMs or deadlineUnixMs, not both",
            ))
        }
        (Some(ms), None) => {
            if !(1..=MAX_SLOT_LENGTH_MS).contains(&ms) {
                return Err(RpcError::invalid_param(
                    "slotMs",
                    format!("{ms}: must be between 1 and {MAX_SLOT_LENGTH_MS} milliseconds"),
                ));
            }
            ms
        }
        (None, Some(unix_ms)) => {
            let wall_at_receipt = SystemTime::now()
                .checked_sub(received.elapsed())
                .unwrap_or_else(SystemTime::now);
            let now_ms = wall_at_receipt
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            if unix_ms <= now_ms || unix_ms - now_ms > MAX_SLOT_LENGTH_MS {
                return Err(RpcError::invalid_param(
                    "deadlineUnixMs",
                    format!(
                        "{unix_ms}: must be after the service's clock at receipt ({now_ms} ms since the Unix epoch) and at most {MAX_SLOT_LENGTH_MS} ms later"
                    ),
                ));
            }
            unix_ms - now_ms
        }
        (None, None) => SLOT_LENGTH_MS,
    };
    Ok(received + Duration::from_millis(slot_ms))
}

/// `find`: which valid nonces a slot reports; es-node's (the first) when left out.
fn find(asked: Option<&str>) -> Result<Find, RpcError> {
    match asked {
        None | Some("first") => Ok(Find::First),
        Some("best") => Ok(Find::Best),
        Some("all") => Ok(Find::All),
        Some(other) => Err(RpcError::invalid_param(
            "find",
            format!("\"{other}\": one of first, best, all"),
        )),
    }
}

/// `randomChecks` is fixed when the shards are opened: a call may repeat it, not change it.
fn check_random_checks(served: u32, params: &mut Params) -> Result<(), RpcError> {
    match params.opt_quantity("randomChecks")? {
        Some(asked) if asked != u64::from(served) => Err(RpcError::invalid_param(
            "randomChecks",
            format!(
                "{asked}: this service was opened with randomChecks {served} (samples per nonce)"
            ),
        )),
        _ => Ok(()),
    }
}

/// A record as the call's `result`.
fn answer(record: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(record).map_err(RpcError::internal)
}

/// The JSON-RPC error of a failed call of the service.
fn service_error(service: &Service, e: ServiceError) -> RpcError {
    match e {
        ServiceError::SlotRunning => RpcError::new(SLOT_RUNNING, e.to_string()),
        ServiceError::ShuttingDown => RpcError::new(SHUTTING_DOWN, e.to_string()),
        ServiceError::MissingShard { .. } => RpcError::invalid_param("shard", e),
        ServiceError::Mine(e) => mine_error(service, e),
        ServiceError::Internal(why) => RpcError::internal(why),
    }
}

/// A library error by its kind: every kind has its code, so a new kind cannot fall through.
fn mine_error(service: &Service, e: MineError) -> RpcError {
    match e.kind() {
        ErrorKind::Busy => RpcError::new(SLOT_RUNNING, e.to_string()),
        ErrorKind::Io => match service.failed_read(&e) {
            Some(read) => RpcError::new(IO_ERROR, read.to_string()).with_data(json!(read)),
            None => RpcError::new(IO_ERROR, e.to_string()),
        },
        ErrorKind::UnknownShard => {
            let served = list(&service.served_shards());
            RpcError::invalid_param("shard", format!("{e} (served: {served})"))
        }
        ErrorKind::InvalidInput => RpcError::new(INVALID_PARAMS, format!("invalid params: {e}")),
        ErrorKind::Shard => RpcError::new(MINING_FAILED, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_found_by_its_name_only() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.name()), Some(method));
        }
        assert_eq!(Method::parse("pora_nope"), None);
        assert_eq!(Method::parse("PORA_STATUS"), None);
        assert_eq!(not_found("pora_nope").code, METHOD_NOT_FOUND);
    }

    #[test]
    fn a_slot_deadline_counts_from_receipt_and_names_its_field() {
        let received = Instant::now() - Duration::from_millis(300);
        let deadline = slot_deadline(Some(1000), None, received).unwrap();
        assert_eq!(deadline, received + Duration::from_millis(1000));
        assert_eq!(
            slot_deadline(None, None, received).unwrap(),
            received + Duration::from_millis(SLOT_LENGTH_MS)
        );
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        // A wall-clock deadline 2 s after now is 2.3 s after the receipt 300 ms ago.
        let from_wall = slot_deadline(None, Some(now_ms + 2000), received).unwrap();
        let after_receipt = from_wall - received;
        assert!(
            (2290..=2310).contains(&after_receipt.as_millis()),
            "{after_receipt:?}"
        );
        let both = slot_deadline(Some(1000), Some(now_ms + 2000), received).unwrap_err();
        assert_eq!(both.code, INVALID_PARAMS);
        assert!(both.message.contains("deadlineUnixMs"), "{}", both.message);
        let past = slot_deadline(None, Some(now_ms - 1000), received).unwrap_err();
        assert!(past.message.contains("deadlineUnixMs"), "{}", past.message);
        let zero = slot_deadline(Some(0), None, received).unwrap_err();
        assert!(zero.message.contains("slotMs"), "{}", zero.message);
    }
}
