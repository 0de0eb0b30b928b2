//! How the library's messages name the inputs a caller gave: by default the C structs' fields
//! (`threads`, `deadline_remaining_ns`), or, for the Go package, its fields (`Threads`, `SlotLength`).
//! The Go package asks for its names once, at init, with [`pora_name_inputs`].

use crate::buf::PoraBuf;
use crate::failure::Failure;
use crate::guard;
use pora_core::input::{name_inputs, Input};
use std::borrow::Cow;

/// Values of `pora_name_inputs`'s `names`.
#[repr(C)]
pub enum PoraInputNames {
    /// The C structs' field names (the default).
    C = 0,
    /// The Go package's field names.
    Go = 1,
}

fn c_name(input: Input) -> Cow<'static, str> {
    input.key().into()
}

/// The Go package's name for an input: its `Options`, `SlotRequest` or `Difficulty` field.
fn go_name(input: Input) -> Cow<'static, str> {
    let name = match input {
        Input::Nonces => "NonceStart..NonceEnd",
        Input::SlotLength => "SlotLength",
        Input::OnIoError => "OnIOError",
        Input::KvEntriesBits => "KVEntriesBits",
        Input::KvSizeBits => "KVSizeBits",
        Input::KvIdx => "KVIdx",
        Input::KvRange => "KVRange",
        _ => return pascal_case(input.key()).into(),
    };
    name.into()
}

fn pascal_case(key: &str) -> String {
    key.split('_')
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or(String::new(), |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// Sets how this process's messages name inputs: a `PoraInputNames` value. Call it once, before
/// anything else (the Go package does, at init).
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_name_inputs(names: u32, out: *mut PoraBuf) -> crate::PoraStatus {
    guard::call(out, || {
        match names {
            0 => name_inputs(c_name),
            1 => name_inputs(go_name),
            v => return Err(Failure::invalid(format!("names {v}: one of 0 (C), 1 (Go)"))),
        }
        Ok(Vec::new())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_names_are_the_go_fields() {
        assert_eq!(go_name(Input::RandomChecks), "RandomChecks");
        assert_eq!(go_name(Input::Threads), "Threads");
        assert_eq!(go_name(Input::DiffAdjDivisor), "DiffAdjDivisor");
        assert_eq!(go_name(Input::OnIoError), "OnIOError");
        assert_eq!(c_name(Input::SlotLength), "deadline_remaining_ns");
    }
}
