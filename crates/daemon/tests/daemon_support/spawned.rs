//! The real `filprove daemon` binary in a child process (CPU backend, 2 KiB parameters,
//! a journal directory that outlives the process), for tests that signal or kill it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use filprove::client;
use filprove::server::pb;

use super::{ensure_params, env};

/// A daemon process and where it keeps its socket, journal and log.
pub struct Spawned {
    pub child: Child,
    pub socket: PathBuf,
    pub journal: PathBuf,
    pub log: PathBuf,
}

/// Writes a configuration into `dir` (socket, journal under it) with `grace_secs` of
/// shutdown grace and one synthesis worker (jobs run one after the other).
pub fn write_config(dir: &Path, grace_secs: u64) -> PathBuf {
    let e = env();
    ensure_params("wpost-2k");
    let config = dir.join("filprove.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"\"\nshutdown_grace_secs = {grace_secs}\n\
             [engine]\nbackend = \"cpu\"\npartition_workers = 1\nexpress_worker = false\n\
             gpu_workers_per_device = 1\n\
             [memory]\nbudget = \"4GiB\"\n\
             [srs]\nbudget = \"4GiB\"\npreload = [\"wpost-2k\"]\nparam_cache = {:?}\n\
             [journal]\ndir = {:?}\n",
            dir.join("filprove.sock").display().to_string(),
            e.params.display().to_string(),
            dir.join("journal").display().to_string(),
        ),
    )
    .unwrap();
    config
}

impl Spawned {
    /// Starts `filprove daemon -c <dir>/filprove.toml` (written by [`write_config`]) and
    /// waits until it answers; its log goes to `<dir>/daemon-<n>.log`.
    pub async fn start(dir: &Path, n: usize) -> (Self, client::Client) {
        let log = dir.join(format!("daemon-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_filprove"))
            .args(["daemon", "-c"])
            .arg(dir.join("filprove.toml"))
            .env("RUST_LOG", "info")
            .env_remove("FILPROVE_LOG_FORMAT")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let socket = dir.join("filprove.sock");
        let addr = socket.display().to_string();
        let c = client::wait_ready(&addr, Duration::from_secs(120))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "daemon did not come up: {e}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        let s = Self {
            child,
            socket,
            journal: dir.join("journal"),
            log,
        };
        (s, c)
    }

    /// Sends `signal` ("TERM", "INT", "KILL") to the process.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{signal}");
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("daemon still running after {limit:?}\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The daemon's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The ids of the journal's entries (from their headers), sorted.
pub fn journaled_ids(journal: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(journal)
        .unwrap_or_else(|e| panic!("{}: {e}", journal.display()))
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".job"))
        .filter_map(|e| {
            let data = std::fs::read(e.path()).ok()?;
            let text = String::from_utf8_lossy(&data[..data.len().min(1024)]).into_owned();
            text.lines()
                .find_map(|l| l.strip_prefix("id ").map(str::to_string))
        })
        .collect();
    ids.sort();
    ids
}

/// Waits until some job is being proved (GetStatus reports one in progress).
pub async fn until_in_progress(c: &mut client::Client) {
    let start = Instant::now();
    loop {
        let s = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.queues.iter().any(|q| q.in_progress > 0) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no job started: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A caller's AwaitProof on a job, running.
pub type Awaiting = tokio::task::JoinHandle<Result<pb::AwaitProofResponse, tonic::Status>>;

/// Submits `n` WindowPoSt jobs `<prefix>-<i>` (2 KiB, the same inputs) one after the
/// other, each with a caller awaiting it from then on.
pub async fn submit_awaited(c: &client::Client, prefix: &str, n: usize) -> Vec<(String, Awaiting)> {
    let window = super::request(filprove_filecoin::ProofKind::WindowPoSt);
    let mut out = Vec::new();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        let wire = filprove::server::convert::to_wire(&window, &id, pb::Priority::Normal);
        c.clone().submit_proof(wire).await.unwrap();
        let mut w = c.clone();
        let job_id = id.clone();
        out.push((
            id,
            tokio::spawn(async move {
                w.await_proof(pb::AwaitProofRequest {
                    job_id,
                    timeout_ms: 0,
                })
                .await
                .map(|r| r.into_inner())
            }),
        ));
    }
    out
}

/// The ids whose callers got a proof, and the others (cancelled, or no answer), each
/// sorted.
pub async fn outcomes(jobs: Vec<(String, Awaiting)>) -> (Vec<String>, Vec<String>) {
    let (mut proved, mut not) = (Vec::new(), Vec::new());
    for (id, h) in jobs {
        match h.await.unwrap() {
            Ok(r) if r.status == pb::await_proof_response::Status::Completed as i32 => {
                proved.push(id)
            }
            _ => not.push(id),
        }
    }
    proved.sort();
    not.sort();
    (proved, not)
}

/// Awaits `id` and checks that it completed with a WindowPoSt proof that verifies.
pub async fn expect_proved(c: &client::Client, id: &str) {
    let r = c
        .clone()
        .await_proof(pb::AwaitProofRequest {
            job_id: id.into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_or_else(|e| panic!("{id}: {e}"))
        .into_inner();
    assert_eq!(
        r.status,
        pb::await_proof_response::Status::Completed as i32,
        "{id}: {}",
        r.error_message
    );
    let window = super::request(filprove_filecoin::ProofKind::WindowPoSt);
    assert!(window.verify(&r.proof).unwrap(), "{id}: the proof verifies");
}

/// Waits until the daemon's log contains `text`.
pub fn until_logged(d: &Spawned, text: &str) {
    let start = Instant::now();
    while !d.log_text().contains(text) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{text:?} not logged:\n{}",
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
