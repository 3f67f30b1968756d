//! One file per policy. Each exports `INFO` (id, parameters, defaults, host cost) and one
//! `impl Scheduler`.

pub mod cfq;
pub mod k2;
pub mod kyber;
pub mod mq_deadline;
pub mod mts;
pub mod none;

#[cfg(test)]
pub(crate) mod testkit;
