//! Named parameters of a call, read field by field: quantities as JSON numbers or strings
//! (`0x`-hex as in EIP-1474, or decimal), 32-byte values as `0x`-hex, 256-bit values as numbers,
//! `0x`-hex or decimal strings. Every error names the offending field; a field the method does
//! not know is an error too (a typo must not silently fall back to a default).

use crate::codes::RpcError;
// es-node's defaults for the difficulty inputs a call may leave out, shared with every door.
use pora_core::difficulty::{
    expected_diff, parse_u256, required_diff, DiffParams, DEFAULT_CUTOFF, DEFAULT_DIFF_ADJ_DIVISOR,
    DEFAULT_MINIMUM_DIFF,
};
use pora_core::{H256, U256};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The named params of one call.
pub struct Params {
    fields: Map<String, Value>,
    read: BTreeSet<&'static str>,
}

impl Params {
    /// `params` as sent: absent, `null`, `{...}`, `[]` or `[{...}]` (one object by position).
    pub fn new(params: Option<Value>) -> Result<Params, RpcError> {
        let fields = match params {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(Value::Array(items)) => match <[Value; 1]>::try_from(items) {
                Ok([Value::Object(map)]) => map,
                Err(items) if items.is_empty() => Map::new(),
                _ => {
                    return Err(RpcError::invalid_param(
                        "params",
                        "expected an object of named params (or an array holding one object)",
                    ))
                }
            },
            Some(_) => {
                return Err(RpcError::invalid_param(
                    "params",
                    "expected an object of named params",
                ))
            }
        };
        Ok(Params {
            fields,
            read: BTreeSet::new(),
        })
    }

    fn take(&mut self, name: &'static str) -> Option<&Value> {
        self.read.insert(name);
        self.fields.get(name).filter(|v| !v.is_null())
    }

    pub fn h256(&mut self, name: &'static str) -> Result<H256, RpcError> {
        match self.take(name) {
            None => Err(missing(name)),
            Some(Value::String(s)) => {
                H256::parse(name, s).map_err(|e| RpcError::invalid_param(name, e))
            }
            Some(_) => Err(RpcError::invalid_param(
                name,
                "expected a 0x-hex string of 32 bytes",
            )),
        }
    }

    pub fn quantity(&mut self, name: &'static str) -> Result<u64, RpcError> {
        self.opt_quantity(name)?.ok_or_else(|| missing(name))
    }

    pub fn opt_quantity(&mut self, name: &'static str) -> Result<Option<u64>, RpcError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        let parsed = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
                Some(_) => None,
                None => s.parse::<u64>().ok(),
            },
            _ => None,
        };
        parsed.map(Some).ok_or_else(|| {
            RpcError::invalid_param(
                name,
                format!(
                    "{value} is not a quantity: expected an integer 0..=2^64-1 as a JSON number or a 0x-hex / decimal string"
                ),
            )
        })
    }

    pub fn opt_u256(&mut self, name: &'static str) -> Result<Option<U256>, RpcError> {
        let Some(value) = self.take(name) else {
            return Ok(None);
        };
        match value {
            Value::Number(n) => n.as_u64().map(U256::from).map(Some).ok_or_else(|| {
                RpcError::invalid_param(
                    name,
                    format!("{n} is not a non-negative integer; give large values as strings"),
                )
            }),
            Value::String(s) => parse_u256(name, s)
                .map(Some)
                .map_err(|e| RpcError::invalid_param(name, e)),
            _ => Err(RpcError::invalid_param(
                name,
                "expected a 256-bit integer as a number or a 0x-hex / decimal string",
            )),
        }
    }

    pub fn opt_str(&mut self, name: &'static str) -> Result<Option<String>, RpcError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(RpcError::invalid_param(name, "expected a string")),
        }
    }

    /// `requiredDiff`, or the one computed from `difficulty` + `interval` (+ `cutoff`,
    /// `diffAdjDivisor`, `minimumDiff`) as es-node does; `None` when neither was given.
    pub fn required_diff(&mut self) -> Result<Option<U256>, RpcError> {
        let required = self.opt_u256("requiredDiff")?;
        let difficulty = self.opt_u256("difficulty")?;
        let interval = self.opt_quantity("interval")?;
        let cutoff = self.opt_quantity("cutoff")?;
        let divisor = self.opt_quantity("diffAdjDivisor")?;
        let minimum = self.opt_u256("minimumDiff")?;
        let contract_inputs = difficulty.is_some()
            || interval.is_some()
            || cutoff.is_some()
            || divisor.is_some()
            || minimum.is_some();
        if required.is_some() {
            if contract_inputs {
                return Err(RpcError::invalid_param(
                    "requiredDiff",
                    "give either requiredDiff or difficulty + interval, not both",
                ));
            }
            return Ok(required);
        }
        if !contract_inputs {
            return Ok(None);
        }
        let difficulty = difficulty.ok_or_else(|| missing_with("difficulty", "interval"))?;
        let interval = interval.ok_or_else(|| missing_with("interval", "difficulty"))?;
        let params = DiffParams {
            difficulty,
            interval,
            cutoff: positive("cutoff", cutoff.unwrap_or(DEFAULT_CUTOFF))?,
            diff_adj_divisor: positive(
                "diffAdjDivisor",
                divisor.unwrap_or(DEFAULT_DIFF_ADJ_DIVISOR),
            )?,
            minimum_diff: minimum.unwrap_or(U256::from(DEFAULT_MINIMUM_DIFF)),
        };
        let expected =
            expected_diff(&params).map_err(|e| RpcError::invalid_param("difficulty", e))?;
        required_diff(expected)
            .map(Some)
            .map_err(|e| RpcError::invalid_param("minimumDiff", e))
    }

    /// Refuses fields the method did not read.
    pub fn finish(self) -> Result<(), RpcError> {
        match self.fields.keys().find(|k| !self.read.contains(k.as_str())) {
            None => Ok(()),
            Some(unknown) => {
                let known: Vec<&str> = self.read.iter().copied().collect();
                let expected = if known.is_empty() {
                    "this method takes no params".to_string()
                } else {
                    format!("expected one of {}", known.join(", "))
                };
                Err(RpcError::invalid_param(
                    unknown,
                    format!("unknown param ({expected})"),
                ))
            }
        }
    }
}

fn missing(name: &str) -> RpcError {
    RpcError::invalid_param(name, "missing")
}

fn missing_with(name: &str, with: &str) -> RpcError {
    RpcError::invalid_param(name, format!("missing (required with `{with}`)"))
}

fn positive(name: &str, value: u64) -> Result<u64, RpcError> {
    if value == 0 {
        return Err(RpcError::invalid_param(name, "must be positive"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        Params::new(Some(v)).unwrap()
    }

    fn field_of(e: RpcError) -> String {
        assert_eq!(e.code, crate::codes::INVALID_PARAMS);
        e.data.unwrap()["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn quantities_are_numbers_hex_or_decimal_strings() {
        let mut p =
            params(json!({"a": 255, "b": "0xff", "c": "255", "d": "0x", "e": -1, "f": 1.5}));
        assert_eq!(p.quantity("a").unwrap(), 255);
        assert_eq!(p.quantity("b").unwrap(), 255);
        assert_eq!(p.quantity("c").unwrap(), 255);
        for bad in ["d", "e", "f"] {
            assert_eq!(field_of(p.quantity(bad).unwrap_err()), bad);
        }
        assert_eq!(field_of(p.quantity("absent").unwrap_err()), "absent");
        let mut p = params(json!({"big": "0x10000000000000000"}));
        assert_eq!(field_of(p.quantity("big").unwrap_err()), "big");
    }

    #[test]
    fn positional_single_object_and_unknown_fields() {
        let mut p = params(json!([{"nonce": 1, "nonceTypo": 2}]));
        assert_eq!(p.quantity("nonce").unwrap(), 1);
        assert_eq!(field_of(p.finish().unwrap_err()), "nonceTypo");
        assert!(Params::new(Some(json!([1, 2]))).is_err());
        assert!(Params::new(Some(json!([]))).unwrap().finish().is_ok());
    }

    #[test]
    fn difficulty_inputs_match_the_cli_rules() {
        let mut p = params(json!({"requiredDiff": "0x10", "difficulty": 5}));
        assert_eq!(field_of(p.required_diff().unwrap_err()), "requiredDiff");
        let mut p = params(json!({"difficulty": 5}));
        assert_eq!(field_of(p.required_diff().unwrap_err()), "interval");
        let mut p = params(json!({"difficulty": 5, "interval": 1, "cutoff": 0}));
        assert_eq!(field_of(p.required_diff().unwrap_err()), "cutoff");
        let mut p = params(json!({"difficulty": "0", "interval": 96466}));
        let want = required_diff(U256::from(DEFAULT_MINIMUM_DIFF)).unwrap();
        assert_eq!(p.required_diff().unwrap(), Some(want));
        assert_eq!(params(json!({})).required_diff().unwrap(), None);
    }
}
