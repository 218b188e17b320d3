//! The `#[distributed_lock]` attribute; use it through `redlease`.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

/// Placeholder until the attribute lands: returns the item unchanged.
#[proc_macro_attribute]
pub fn distributed_lock(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
