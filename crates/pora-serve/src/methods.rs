//! The RPC methods: `pora_hash`, `pora_mineSlot`, `pora_cancel`, `pora_status`. Each reads its
//! named params (every error names the field), then calls the [`Service`].

use crate::params::Params;
use crate::rpc::{RpcError, METHOD_NOT_FOUND};
use crate::service::Service;
use pora_mine::{Find, SlotRequest};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Longest slot a call may ask for (a day, as `pora mine --slot`).
const MAX_SLOT_MS: u64 = 86_400_000;
/// es-node's slot, when `slotMs` is left out.
const DEFAULT_SLOT_MS: u64 = 12_000;
/// The methods, in the order the docs list them.
pub const METHODS: [&str; 4] = ["pora_hash", "pora_mineSlot", "pora_cancel", "pora_status"];

/// Calls `method` with `params`.
pub async fn call(
    service: &Arc<Service>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    if !METHODS.contains(&method) {
        // Echo at most a short prefix of what the client sent.
        let shown: String = method.chars().take(64).collect();
        return Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!(
                "method not found: `{shown}` (methods: {})",
                METHODS.join(", ")
            ),
        ));
    }
    let params = Params::new(params)?;
    match method {
        "pora_hash" => hash(service, params).await,
        "pora_mineSlot" => mine_slot(service, params).await,
        "pora_cancel" => {
            params.finish()?;
            Ok(json!({ "cancelled": service.cancel() }))
        }
        _ => {
            params.finish()?;
            Ok(service.status())
        }
    }
}

/// `{randao, nonce, shard?, randomChecks?, requiredDiff? | difficulty + interval ...}`.
async fn hash(service: &Arc<Service>, mut params: Params) -> Result<Value, RpcError> {
    let randao = params.h256("randao")?;
    let nonce = params.quantity("nonce")?;
    let shard = params.opt_quantity("shard")?;
    check_random_checks(service, &mut params)?;
    let required = params.required_diff()?;
    params.finish()?;
    service.hash(shard, randao, nonce, required).await
}

/// `{randao, nonceStart, nonceEnd, requiredDiff? | difficulty + interval ..., find?, slotMs?,
/// randomChecks?}`.
async fn mine_slot(service: &Arc<Service>, mut params: Params) -> Result<Value, RpcError> {
    let randao = params.h256("randao")?;
    let start = params.quantity("nonceStart")?;
    let end = params.quantity("nonceEnd")?;
    if end <= start {
        return Err(RpcError::invalid_param(
            "nonceEnd",
            format!("{end} must be greater than nonceStart {start} (the range is nonceStart..nonceEnd, end exclusive)"),
        ));
    }
    let find = match params.opt_str("find")?.as_deref() {
        None | Some("first") => Find::First,
        Some("best") => Find::Best,
        Some("all") => Find::All,
        Some(other) => {
            return Err(RpcError::invalid_param(
                "find",
                format!("\"{other}\": one of first, best, all"),
            ))
        }
    };
    let slot_ms = params.opt_quantity("slotMs")?.unwrap_or(DEFAULT_SLOT_MS);
    if !(1..=MAX_SLOT_MS).contains(&slot_ms) {
        return Err(RpcError::invalid_param(
            "slotMs",
            format!("{slot_ms}: must be between 1 and {MAX_SLOT_MS} milliseconds"),
        ));
    }
    check_random_checks(service, &mut params)?;
    let required = params.required_diff()?;
    params.finish()?;
    let request = SlotRequest::new(randao)
        .with_nonces(start..end)
        .with_slot_length(Duration::from_millis(slot_ms))
        .with_find(find)
        .with_required_diff(required);
    service.mine_slot(request).await
}

/// `randomChecks` is fixed when the shards are opened (`pora serve --random-checks`): a call may
/// repeat it, not change it.
fn check_random_checks(service: &Service, params: &mut Params) -> Result<(), RpcError> {
    let served = service.session().miner().config().random_checks;
    match params.opt_quantity("randomChecks")? {
        Some(asked) if asked != u64::from(served) => Err(RpcError::invalid_param(
            "randomChecks",
            format!(
                "{asked}: this service mines with {served} samples per nonce (pora serve --random-checks {served})"
            ),
        )),
        _ => Ok(()),
    }
}
