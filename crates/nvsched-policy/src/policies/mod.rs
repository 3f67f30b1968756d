//! One file per policy. Each exports `INFO` (id, parameters, defaults, host cost) and one
//! `impl Scheduler`.

pub mod k2;
pub mod none;

#[cfg(test)]
pub(crate) mod testkit;
