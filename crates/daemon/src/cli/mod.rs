//! One module per command of the `filprove` binary.

pub mod backend;
pub mod compare;
pub mod demo;
pub mod device;
pub mod doctor;
pub mod fixtures;
pub mod health;
pub mod params;
pub mod profile;
pub mod progress;
pub mod prove;
pub mod prove_bench;
pub mod stage;
pub mod synthesize;
pub mod synthetic;
pub mod test_params;
pub mod timeline;
pub mod verify;
pub mod vram_plan;
