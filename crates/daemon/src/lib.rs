//! The `filprove` binary's library: command-line commands, and (in `server` / `client`)
//! the daemon and its gRPC client; `timeline`, the run-log analyzer.

pub mod cli;
pub mod client;
pub mod server;
pub mod timeline;
