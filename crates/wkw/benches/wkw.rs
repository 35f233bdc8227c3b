//! Placeholder replaced below.
#![allow(missing_docs)]
fn main() {}
