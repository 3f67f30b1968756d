//! One file per policy. Each exports `INFO` (id, parameters, defaults, host cost) and one
//! `impl Scheduler`.

pub mod bfq;
pub mod cfq;
pub mod iocost;
pub mod iolatency;
pub mod k2;
pub mod k2_adaptive;
pub mod kyber;
pub mod mq_deadline;
pub mod mts;
pub mod none;
pub mod prio_token;
pub mod tabs;
pub mod veloces;

#[cfg(test)]
pub(crate) mod testkit;
