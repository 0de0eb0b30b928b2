//! The JSON-RPC 2.0 envelope: a body is one request or a batch (an array of at most
//! [`MAX_BATCH`] requests, answered in order, run concurrently); notifications (no `id`) get no
//! answer; malformed bodies and requests get the standard error objects. The methods themselves
//! are the dispatch's (`methods.rs`), below this layer; the transport above asks this layer for
//! every JSON-RPC body it sends, so it knows no codes.

use crate::codes::{RpcError, INVALID_REQUEST, PARSE_ERROR};
use crate::methods::Method;
use crate::service::Service;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// Most requests in one batch; a larger batch is answered with one error.
pub const MAX_BATCH: usize = 100;

/// The response object for request `id`.
pub fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(e) => json!({ "jsonrpc": "2.0", "id": id, "error": e.to_value() }),
    }
}

/// An error response that belongs to no request (`id` null): parse errors, bad batches.
pub fn error_response(error: RpcError) -> Value {
    response(Value::Null, Err(error))
}

/// The answer to a body the transport refused before reading it all (too large, too slow):
/// an invalid request, for clients that read only the body.
pub fn refused(why: impl std::fmt::Display) -> Value {
    error_response(RpcError::new(
        INVALID_REQUEST,
        format!("invalid request: {why}"),
    ))
}

/// What a body holds once parsed: one request, or a batch within [`MAX_BATCH`].
enum Body {
    One(Value),
    Batch(Vec<Value>),
}

/// Parses a body; a refusal is the error response (parse error, empty or oversized batch).
fn parse_body(body: &[u8]) -> Result<Body, Value> {
    let parsed: Value = serde_json::from_slice(body)
        .map_err(|e| error_response(RpcError::new(PARSE_ERROR, format!("parse error: {e}"))))?;
    let batch = match parsed {
        Value::Array(batch) => batch,
        single => return Ok(Body::One(single)),
    };
    if batch.is_empty() {
        return Err(error_response(RpcError::new(
            INVALID_REQUEST,
            "invalid request: empty batch",
        )));
    }
    if batch.len() > MAX_BATCH {
        return Err(error_response(RpcError::new(
            INVALID_REQUEST,
            format!(
                "invalid request: batch of {} requests; at most {MAX_BATCH}",
                batch.len()
            ),
        )));
    }
    Ok(Body::Batch(batch))
}

/// Answers one HTTP body, received at `received` (a slot's time counts from then); `None` when
/// every request was a notification (nothing to send).
pub async fn handle_body(service: &Arc<Service>, body: &[u8], received: Instant) -> Option<Value> {
    match parse_body(body) {
        Err(refusal) => Some(refusal),
        Ok(Body::One(single)) => handle_one(service.clone(), single, received).await,
        Ok(Body::Batch(batch)) => handle_batch(service, batch, received).await,
    }
}

/// [`handle_body`] up to the session, for fuzzing and tests without open shards: the same body
/// parsing, batch limits, request envelope, method lookup and params checks, with every call
/// that passed them answered `{"checked": "<method>"}` instead of being run (`random_checks`
/// stands for the samples per nonce the shards were opened with). Batches are answered in
/// order, one request after another. What it answers for a refused body or request is exactly
/// what the service answers.
pub fn check_body(body: &[u8], random_checks: u32) -> Option<Value> {
    let check_one = |request: Value| {
        let (id, method, params) = match envelope(request) {
            Ok(parts) => parts,
            Err(refusal) => return Some(*refusal),
        };
        let result = match Method::parse(&method) {
            Some(m) => m
                .parse_params(params, random_checks)
                .map(|_| json!({ "checked": m.name() })),
            None => Err(crate::methods::not_found(&method)),
        };
        id.map(|id| response(id, result))
    };
    match parse_body(body) {
        Err(refusal) => Some(refusal),
        Ok(Body::One(single)) => check_one(single),
        Ok(Body::Batch(batch)) => {
            let answers: Vec<Value> = batch.into_iter().filter_map(check_one).collect();
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
    }
}

async fn handle_batch(
    service: &Arc<Service>,
    batch: Vec<Value>,
    received: Instant,
) -> Option<Value> {
    // Run the batch's requests concurrently (a `pora_cancel` next to a `pora_mineSlot` must not
    // wait for the slot), answer in request order.
    let mut tasks = tokio::task::JoinSet::new();
    for (index, request) in batch.into_iter().enumerate() {
        let service = service.clone();
        tasks.spawn(async move { (index, handle_one(service, request, received).await) });
    }
    let mut answers: Vec<(usize, Value)> = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, Some(answer))) => answers.push((index, answer)),
            Ok((_, None)) => {}
            Err(e) => answers.push((usize::MAX, error_response(RpcError::internal(e)))),
        }
    }
    answers.sort_by_key(|(index, _)| *index);
    let answers: Vec<Value> = answers.into_iter().map(|(_, a)| a).collect();
    (!answers.is_empty()).then_some(Value::Array(answers))
}

/// One request object; `None` for a valid notification.
async fn handle_one(service: Arc<Service>, request: Value, received: Instant) -> Option<Value> {
    let (id, method, params) = match envelope(request) {
        Ok(parts) => parts,
        Err(refusal) => return Some(*refusal),
    };
    let result = crate::methods::call(&service, &method, params, received).await;
    id.map(|id| response(id, result))
}

type Envelope = (Option<Value>, String, Option<Value>);

/// Checks the request object: `jsonrpc` "2.0", a string `method`, `params` an array or object,
/// `id` a string, number or null (absent: a notification). A refusal is the error response.
fn envelope(request: Value) -> Result<Envelope, Box<Value>> {
    let invalid = |id: Value, why: &str| {
        let error = RpcError::new(INVALID_REQUEST, format!("invalid request: {why}"));
        Err(Box::new(response(id, Err(error))))
    };
    let Value::Object(mut obj) = request else {
        return invalid(Value::Null, "expected a request object");
    };
    let id = obj.remove("id");
    let reply_id = match &id {
        None => Value::Null,
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Null)) => v.clone(),
        Some(_) => return invalid(Value::Null, "`id` must be a string, a number or null"),
    };
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid(reply_id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return invalid(reply_id, "`method` must be a string"),
    };
    let params = match obj.remove("params") {
        // `null` is not a structured value, but clients send it for "no params": accept it.
        None | Some(Value::Null) => None,
        Some(p @ (Value::Array(_) | Value::Object(_))) => Some(p),
        Some(_) => return invalid(reply_id, "`params` must be an array or an object"),
    };
    Ok((id, method, params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::INVALID_PARAMS;

    fn check(request: Value) -> Result<(), i64> {
        envelope(request)
            .map(|_| ())
            .map_err(|refusal| refusal["error"]["code"].as_i64().unwrap())
    }

    #[test]
    fn envelope_rejects_what_is_not_a_request() {
        assert_eq!(check(json!([1])), Err(INVALID_REQUEST));
        assert_eq!(check(json!({"method": "x", "id": 1})), Err(INVALID_REQUEST));
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "method": 7, "id": 1})),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "method": "m", "id": [1]})),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "method": "m", "params": 3})),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "method": "m", "id": "a"})),
            Ok(())
        );
        let (id, _, _) = envelope(json!({"jsonrpc": "2.0", "method": "m"})).unwrap();
        assert_eq!(id, None, "no id: a notification");
    }

    fn code(answer: &Value) -> i64 {
        answer["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn check_body_answers_like_the_service_without_a_session() {
        use crate::codes::METHOD_NOT_FOUND;
        assert_eq!(code(&check_body(b"{", 2).unwrap()), PARSE_ERROR);
        assert_eq!(code(&check_body(b"[]", 2).unwrap()), INVALID_REQUEST);
        let big = format!("[{}1]", "1,".repeat(MAX_BATCH));
        assert_eq!(
            code(&check_body(big.as_bytes(), 2).unwrap()),
            INVALID_REQUEST
        );
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"pora_hash","params":{"randao":"0x1111111111111111111111111111111111111111111111111111111111111111","nonce":"0x5"}}"#;
        assert_eq!(check_body(ok, 2).unwrap()["result"]["checked"], "pora_hash");
        // The service's randomChecks is fixed: asking another is refused.
        let other =
            br#"{"jsonrpc":"2.0","id":1,"method":"pora_status","params":{"randomChecks":3}}"#;
        assert_eq!(code(&check_body(other, 2).unwrap()), INVALID_PARAMS);
        let slot = br#"{"jsonrpc":"2.0","id":"a","method":"pora_mineSlot","params":[{"randao":"0x1111111111111111111111111111111111111111111111111111111111111111","nonceStart":5,"nonceEnd":5}]}"#;
        let answer = check_body(slot, 2).unwrap();
        assert_eq!(
            (code(&answer), &answer["id"]),
            (INVALID_PARAMS, &json!("a"))
        );
        assert_eq!(answer["error"]["data"]["field"], "nonceEnd");
        // A batch: answered in order, notifications left out, unknown methods named.
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"pora_nope"},{"jsonrpc":"2.0","method":"pora_cancel"},{"jsonrpc":"2.0","id":2,"method":"pora_cancel"}]"#;
        let answers = check_body(batch, 2).unwrap();
        assert_eq!(code(&answers[0]), METHOD_NOT_FOUND);
        assert_eq!(answers[1]["result"]["checked"], "pora_cancel");
        assert_eq!(answers.as_array().unwrap().len(), 2);
        assert_eq!(
            check_body(br#"{"jsonrpc":"2.0","method":"pora_status"}"#, 2),
            None
        );
    }

    #[test]
    fn error_objects_carry_code_message_and_data() {
        let v = response(json!(5), Err(RpcError::invalid_param("nonce", "bad")));
        assert_eq!(v["id"], 5);
        assert_eq!(v["error"]["code"], INVALID_PARAMS);
        assert_eq!(v["error"]["data"]["field"], "nonce");
        assert!(v["error"]["message"].as_str().unwrap().contains("`nonce`"));
        assert!(v.get("result").is_none());
    }
}
