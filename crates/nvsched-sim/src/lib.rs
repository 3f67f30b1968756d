//! nvsched's simulation engine: a deterministic discrete-event simulation of a host block
//! layer (job drivers, submission and completion paths, scheduler tags, plugging) in
//! front of a device model, with one scheduling policy in between.

mod engine;
pub mod events;
pub mod layout;
pub mod nodata;
pub mod pagecache;

pub use engine::{
    simulate, CloneResult, EngineCounters, NoObserver, Observer, SimError, SimInput, SimOutcome, Simulation,
};
