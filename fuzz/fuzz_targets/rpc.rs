//! Fuzz target: the JSON-RPC 2.0 body of `pora serve` and each method's params. Any body must be
//! answered by the service's own framing and checks (`pora_serve::rpc::check_body`: body
//! parsing, batch limits, the request envelope, the method lookup, every params check of
//! `pora_hash`, `pora_mineSlot`, `pora_cancel`, `pora_status`, stopping where the open session
//! would take over) with JSON-RPC answers only, never a panic; and any JSON value must be taken
//! or refused as the params of every method. Overflow checks are on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pora_serve::codes::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use pora_serve::rpc::{check_body, MAX_BATCH};
use pora_serve::Method;
use serde_json::Value;

/// The samples per nonce the imagined session was opened with (es-node's).
const RANDOM_CHECKS: u32 = 2;

/// One answer object: `jsonrpc` "2.0", an `id`, exactly one of `result` and `error`, and an
/// error with one of the codes the checks may give and a message.
fn check_answer(answer: &Value) {
    let obj = answer.as_object().expect("an answer is an object");
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{answer}");
    assert!(obj.contains_key("id"), "{answer}");
    match (obj.get("result"), obj.get("error")) {
        (Some(result), None) => {
            let name = result["checked"].as_str().expect("a checked call");
            assert!(Method::parse(name).is_some(), "{answer}");
        }
        (None, Some(error)) => {
            let code = error["code"].as_i64().expect("an integer code");
            assert!(
                [
                    PARSE_ERROR,
                    INVALID_REQUEST,
                    METHOD_NOT_FOUND,
                    INVALID_PARAMS
                ]
                .contains(&code),
                "{answer}"
            );
            assert!(error["message"].is_string(), "{answer}");
        }
        _ => panic!("neither or both of result and error: {answer}"),
    }
}

fuzz_target!(|data: &[u8]| {
    match check_body(data, RANDOM_CHECKS) {
        None => {}
        Some(Value::Array(answers)) => {
            assert!(!answers.is_empty() && answers.len() <= MAX_BATCH);
            answers.iter().for_each(check_answer);
        }
        Some(answer) => check_answer(&answer),
    }
    // The same bytes as the params of every method, when they are JSON at all (a body's
    // envelope would refuse most of these before the params were read).
    if let Ok(params) = serde_json::from_slice::<Value>(data) {
        for method in Method::ALL {
            if let Err(e) = method.parse_params(Some(params.clone()), RANDOM_CHECKS) {
                assert_eq!(e.code, INVALID_PARAMS, "{}", e.message);
            }
        }
    }
});
