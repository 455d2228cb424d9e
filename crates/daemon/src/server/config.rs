//! The daemon's TOML configuration: parsed and validated in one place, unknown keys
//! rejected. Every key and its default is documented in docs/config.md.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use filprove_filecoin::ProofKind;
use serde::Deserialize;

use super::address::GrpcAddress;

/// Default unix socket path.
pub const DEFAULT_UNIX_SOCKET: &str = "/run/filprove/filprove.sock";

/// The whole configuration file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Listeners and limits.
    pub server: ServerConfig,
    /// Workers and backend.
    pub engine: EngineSection,
    /// Host memory budget.
    pub memory: MemorySection,
    /// Parameters (SRS).
    pub srs: SrsSection,
    /// GPU backend knobs.
    pub cuda: super::cuda_config::CudaSection,
    /// Limits on accepted work.
    pub intake: super::intake::IntakeSection,
    /// The journal of accepted jobs.
    pub journal: super::journal::JournalSection,
    /// Which devices, and what each is for.
    pub devices: super::devices_config::DevicesSection,
}

/// `[server]`: where the daemon listens.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Unix socket for gRPC: a path or `unix:///path`; empty disables it.
    pub unix_socket: String,
    /// Permission bits of the socket: "0600" (owner only) or "0660" (owner and group).
    pub socket_mode: String,
    /// TCP address for gRPC: `host:port` or `http://host:port` (cuzk's is
    /// "127.0.0.1:9820"); empty (the default) disables TCP.
    pub tcp_listen: String,
    /// HTTP address for /metrics, /status, /healthz and /readyz; empty disables it.
    pub http_listen: String,
    /// Largest gRPC message accepted, bytes; larger ones are refused before decoding.
    pub max_message_bytes: usize,
    /// Seconds in-flight jobs get to finish on SIGTERM/SIGINT before they are cancelled.
    pub shutdown_grace_secs: u64,
    /// Proof kinds ("porep", "snap", "window-post", "winning-post") whose job, created by a
    /// `Prove` call, is cancelled when every caller waiting on it went away unanswered
    /// (cancelled RPC, deadline passed); the other kinds' jobs run on for a retry.
    pub cancel_abandoned: Vec<String>,
    /// Lets `tcp_listen` and `http_listen` be addresses other machines reach (anything but
    /// loopback); without it such an address is refused.
    pub allow_remote: bool,
    /// A file holding a bearer token; when set, gRPC on TCP and the HTTP admin (but
    /// `/healthz` and `/readyz`) require `authorization: Bearer <token>`. The unix socket
    /// is guarded by its permissions instead.
    pub auth_token_file: String,
    /// PEM certificate chain: with `tls_key_file`, gRPC on TCP and the HTTP admin speak TLS.
    pub tls_cert_file: String,
    /// PEM private key of `tls_cert_file`.
    pub tls_key_file: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            unix_socket: DEFAULT_UNIX_SOCKET.into(),
            socket_mode: "0600".into(),
            tcp_listen: String::new(),
            http_listen: "127.0.0.1:9821".into(),
            max_message_bytes: 256 << 20,
            shutdown_grace_secs: 60,
            cancel_abandoned: vec!["window-post".into(), "winning-post".into()],
            allow_remote: false,
            auth_token_file: String::new(),
            tls_cert_file: String::new(),
            tls_key_file: String::new(),
        }
    }
}

/// `[engine]`: backend and workers.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// "cpu", "cuda" (fail if no GPU) or "auto" (CUDA when available, else CPU).
    pub backend: String,
    /// CPU synthesis workers.
    pub partition_workers: usize,
    /// Prover workers per device.
    pub gpu_workers_per_device: usize,
    /// An extra synthesis worker reserved for HIGH/CRITICAL work.
    pub express_worker: bool,
    /// Finished jobs remembered (for AwaitProof and request-id idempotency).
    pub max_retained_jobs: usize,
    /// Milliseconds between NVML samples of each GPU (`gpu_sample` log events and the
    /// `filprove_gpu_*` gauges); 0 disables sampling.
    pub nvml_sample_ms: u64,
    /// Proved partitions' assignments kept for the next syntheses to refill, page-locked;
    /// absent: one per synthesis and prover worker, 0: none.
    pub reused_partition_buffers: Option<usize>,
    /// Seconds a kept buffer may wait for a synthesis before it is freed; 0: kept until a
    /// partition needs the memory.
    pub reused_partition_buffers_idle_secs: u64,
    /// Release the host copy of a circuit's parameter sections once every GPU holds them
    /// (a 32 GiB PoRep set frees 44 GiB of host memory); a GPU that loses them makes the
    /// next proof read the file again.
    pub release_host_parameters: bool,
}

impl Default for EngineSection {
    fn default() -> Self {
        Self {
            backend: "auto".into(),
            partition_workers: 2,
            gpu_workers_per_device: 2,
            express_worker: true,
            max_retained_jobs: 10_000,
            nvml_sample_ms: 100,
            reused_partition_buffers: None,
            reused_partition_buffers_idle_secs: 300,
            release_host_parameters: true,
        }
    }
}

/// A byte size: an integer, "auto", or a string with a unit ("64GiB", "512MiB", "2G").
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ByteSize {
    /// Decided from the host at start.
    #[default]
    Auto,
    /// Bytes.
    Bytes(u64),
    /// "auto" or a number with a unit.
    Text(String),
}

impl ByteSize {
    /// The bytes, or `None` for auto.
    pub fn resolve(&self) -> Result<Option<u64>, String> {
        match self {
            Self::Auto => Ok(None),
            Self::Bytes(b) => Ok(Some(*b)),
            Self::Text(t) => parse_size(t),
        }
    }
}

/// Parses "auto", "123", "64GiB", "64G", "512MiB", "1.5TiB".
pub fn parse_size(t: &str) -> Result<Option<u64>, String> {
    let t = t.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.parse().map_err(|_| format!("bad size {t:?}"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => {
            return Err(format!(
                "bad size unit {u:?} in {t:?} (use KiB, MiB, GiB, TiB)"
            ))
        }
    };
    Ok(Some((num * mult as f64) as u64))
}

/// `[memory]`: the host memory budget.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySection {
    /// Bytes partitions may reserve; "auto": 80 % of the machine's or cgroup's limit less
    /// the parameter budget.
    pub budget: ByteSize,
}

/// `[srs]`: parameter files.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SrsSection {
    /// Parameter directory; empty: `FIL_PROOFS_PARAMETER_CACHE`, else
    /// /var/tmp/filecoin-proof-parameters.
    pub param_cache: String,
    /// Circuits loaded at start ("porep-32g", "winning-32g", "wpost-32g", "snap-32g", ...).
    pub preload: Vec<String>,
    /// Bytes of parameters kept resident; "auto": half the host's limit.
    pub budget: ByteSize,
    /// Check every point of a parameter file when loading (slow for 32 GiB files).
    pub validate: bool,
}

impl Default for SrsSection {
    fn default() -> Self {
        Self {
            param_cache: String::new(),
            preload: Vec::new(),
            budget: ByteSize::Auto,
            validate: false,
        }
    }
}

impl Config {
    /// Parses and validates TOML text. cuzk's keys are understood or refused with the
    /// filprove equivalent named (see [`super::cuzk_config`]).
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        let c = if super::cuzk_config::has_cuzk_keys(&table) {
            let listen = super::cuzk_config::translate(&mut table)?;
            let mut c: Config = toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| e.to_string())?;
            if let Some(address) = listen {
                c.set_listeners(&[address])?;
            }
            c
        } else {
            // From the text, so that errors point at their line.
            toml::from_str(text).map_err(|e| e.to_string())?
        };
        c.validate()?;
        Ok(c)
    }

    /// Reads and validates a file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), String> {
        self.socket_mode()?;
        self.cancel_abandoned()?;
        self.unix_socket()?;
        self.tcp_addr()?;
        self.http_addr()?;
        if let Some((key, a)) = self.remote_listeners().first() {
            if !self.server.allow_remote {
                return Err(format!(
                    "{key} = {a} accepts connections from other machines; set \
                     server.allow_remote = true to allow it (and see server.auth_token_file \
                     and server.tls_cert_file), or listen on 127.0.0.1"
                ));
            }
        }
        if self.server.tls_cert_file.is_empty() != self.server.tls_key_file.is_empty() {
            return Err(
                "server.tls_cert_file and server.tls_key_file go together: set both or neither"
                    .into(),
            );
        }
        if !["cpu", "cuda", "auto"].contains(&self.engine.backend.as_str()) {
            return Err(format!(
                "engine.backend must be \"cpu\", \"cuda\" or \"auto\", not {:?}",
                self.engine.backend
            ));
        }
        if self.engine.partition_workers == 0 || self.engine.gpu_workers_per_device == 0 {
            return Err(
                "engine.partition_workers and engine.gpu_workers_per_device must be at least 1"
                    .into(),
            );
        }
        if self.server.max_message_bytes < 1024 {
            return Err("server.max_message_bytes must be at least 1024".into());
        }
        self.intake.limits(self.server.max_message_bytes)?;
        self.journal.max_bytes(self.server.max_message_bytes)?;
        if self.server.unix_socket.is_empty() && self.server.tcp_listen.is_empty() {
            return Err("no gRPC listener: set server.unix_socket or server.tcp_listen".into());
        }
        self.memory
            .budget
            .resolve()
            .map_err(|e| format!("memory.budget: {e}"))?;
        self.srs
            .budget
            .resolve()
            .map_err(|e| format!("srs.budget: {e}"))?;
        self.cuda.options(self.engine.gpu_workers_per_device)?;
        self.devices.check()?;
        Ok(())
    }

    /// The listeners other machines can reach (non-loopback TCP and HTTP addresses), by key.
    pub fn remote_listeners(&self) -> Vec<(&'static str, SocketAddr)> {
        [
            ("server.tcp_listen", self.tcp_addr()),
            ("server.http_listen", self.http_addr()),
        ]
        .into_iter()
        .filter_map(|(k, a)| Some((k, a.ok()??)))
        .filter(|(_, a)| !a.ip().is_loopback())
        .collect()
    }

    /// The socket's permission bits.
    pub fn socket_mode(&self) -> Result<u32, String> {
        match self.server.socket_mode.as_str() {
            "0600" | "600" => Ok(0o600),
            "0660" | "660" => Ok(0o660),
            m => Err(format!(
                "server.socket_mode must be \"0600\" or \"0660\", not {m:?}"
            )),
        }
    }

    /// The kinds of `server.cancel_abandoned`.
    pub fn cancel_abandoned(&self) -> Result<Vec<ProofKind>, String> {
        self.server
            .cancel_abandoned
            .iter()
            .map(|k| {
                k.parse()
                    .map_err(|e| format!("server.cancel_abandoned: {e}"))
            })
            .collect()
    }

    /// The TCP listener, if configured.
    pub fn tcp_addr(&self) -> Result<Option<SocketAddr>, String> {
        let v = &self.server.tcp_listen;
        if v.is_empty() {
            return Ok(None);
        }
        match GrpcAddress::parse(v).map_err(|e| format!("server.tcp_listen: {e}"))? {
            GrpcAddress::Tcp(host_port) => GrpcAddress::resolve(&host_port)
                .map(Some)
                .map_err(|e| format!("server.tcp_listen: {e}")),
            GrpcAddress::Unix(_) => Err(format!(
                "server.tcp_listen: {v:?} is a unix socket; set server.unix_socket instead"
            )),
        }
    }

    /// The HTTP listener, if configured.
    pub fn http_addr(&self) -> Result<Option<SocketAddr>, String> {
        let v = &self.server.http_listen;
        if v.is_empty() {
            return Ok(None);
        }
        GrpcAddress::resolve(v.trim_start_matches("http://").trim_end_matches('/'))
            .map(Some)
            .map_err(|e| format!("server.http_listen: {e}"))
    }

    /// The unix socket, if configured.
    pub fn unix_socket(&self) -> Result<Option<PathBuf>, String> {
        let v = &self.server.unix_socket;
        if v.is_empty() {
            return Ok(None);
        }
        match GrpcAddress::parse(v).map_err(|e| format!("server.unix_socket: {e}"))? {
            GrpcAddress::Unix(path) => Ok(Some(path)),
            GrpcAddress::Tcp(_) => Err(format!(
                "server.unix_socket: {v:?} is a TCP address; set server.tcp_listen instead"
            )),
        }
    }

    /// Sets the gRPC listeners to exactly `addresses` (`--listen`): at most one unix
    /// socket and one TCP address, in any of [`GrpcAddress`]'s forms; the kind not named
    /// is turned off.
    pub fn set_listeners(&mut self, addresses: &[String]) -> Result<(), String> {
        let (mut unix, mut tcp) = (None, None);
        for a in addresses {
            let slot = match GrpcAddress::parse(a)? {
                GrpcAddress::Unix(_) => &mut unix,
                GrpcAddress::Tcp(_) => &mut tcp,
            };
            if slot.replace(a.clone()).is_some() {
                return Err(format!(
                    "--listen: at most one unix socket and one TCP address ({a:?} is a second)"
                ));
            }
        }
        self.server.unix_socket = unix.unwrap_or_default();
        self.server.tcp_listen = tcp.unwrap_or_default();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = Config::from_toml("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.socket_mode().unwrap(), 0o600);
        assert_eq!(c.tcp_addr().unwrap(), None);
    }

    #[test]
    fn listeners_take_curio_s_address_forms() {
        let c = Config::from_toml(
            "[server]\nunix_socket = \"unix:///run/curio/cuzk.sock\"\ntcp_listen = \"http://127.0.0.1:9820\"\n",
        )
        .unwrap();
        assert_eq!(
            c.unix_socket().unwrap(),
            Some(PathBuf::from("/run/curio/cuzk.sock"))
        );
        assert_eq!(
            c.tcp_addr().unwrap(),
            Some("127.0.0.1:9820".parse().unwrap())
        );
        let c = Config::from_toml("[server]\ntcp_listen = \"localhost:9820\"\n").unwrap();
        assert!(c.tcp_addr().unwrap().unwrap().ip().is_loopback());
        let e = Config::from_toml("[server]\ntcp_listen = \"unix:///x.sock\"\n").unwrap_err();
        assert!(e.contains("server.unix_socket"), "{e}");
        let e = Config::from_toml("[server]\nunix_socket = \"127.0.0.1:9820\"\n").unwrap_err();
        assert!(e.contains("server.tcp_listen"), "{e}");
        assert!(Config::from_toml("[server]\ntcp_listen = \"nowhere\"\n").is_err());

        let mut c = Config::default();
        c.set_listeners(&["127.0.0.1:9820".into()]).unwrap();
        assert_eq!(
            (c.unix_socket().unwrap(), c.server.tcp_listen.as_str()),
            (None, "127.0.0.1:9820")
        );
        c.set_listeners(&["unix:///a.sock".into(), "http://[::1]:1".into()])
            .unwrap();
        assert_eq!(c.unix_socket().unwrap(), Some(PathBuf::from("/a.sock")));
        assert!(c.tcp_addr().unwrap().unwrap().is_ipv6());
        assert!(c
            .set_listeners(&["/a.sock".into(), "/b.sock".into()])
            .is_err());
        assert!(c.set_listeners(&["https://x:1".into()]).is_err());
    }

    #[test]
    fn remote_addresses_need_allow_remote() {
        for text in [
            "[server]\ntcp_listen = \"0.0.0.0:9820\"\n",
            "[server]\nhttp_listen = \"[::]:9821\"\n",
            "[server]\ntcp_listen = \"192.0.2.1:9820\"\n",
        ] {
            let e = Config::from_toml(text).unwrap_err();
            assert!(e.contains("server.allow_remote = true"), "{e}");
            let c = Config::from_toml(&format!("{text}allow_remote = true\n")).unwrap();
            assert_eq!(c.remote_listeners().len(), 1, "{text}");
        }
        let c = Config::from_toml("[server]\ntcp_listen = \"localhost:9820\"\n").unwrap();
        assert!(c.remote_listeners().is_empty());
        let e = Config::from_toml("[server]\ntls_cert_file = \"/c.pem\"\n").unwrap_err();
        assert!(e.contains("tls_key_file"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let e = Config::from_toml("[server]\nunix_sockett = \"/x\"\n").unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
        assert!(Config::from_toml("[nope]\n").is_err());
    }

    #[test]
    fn sizes_and_values() {
        let c = Config::from_toml(
            "[memory]\nbudget = \"16GiB\"\n[srs]\nbudget = 1024\npreload = [\"winning-2k\"]\n[server]\nsocket_mode = \"0660\"\ntcp_listen = \"127.0.0.1:1\"\n",
        )
        .unwrap();
        assert_eq!(c.memory.budget.resolve().unwrap(), Some(16 << 30));
        assert_eq!(c.srs.budget.resolve().unwrap(), Some(1024));
        assert_eq!(c.socket_mode().unwrap(), 0o660);
        assert!(Config::from_toml("[server]\nsocket_mode = \"0666\"\n").is_err());
        assert!(Config::from_toml("[engine]\nbackend = \"opencl\"\n").is_err());
        assert!(Config::from_toml("[memory]\nbudget = \"12 parsecs\"\n").is_err());
        assert_eq!(parse_size("auto").unwrap(), None);
        assert_eq!(parse_size("1.5KiB").unwrap(), Some(1536));
        assert_eq!(Config::default().engine.nvml_sample_ms, 100);
        let c = Config::from_toml("[engine]\nnvml_sample_ms = 0\n").unwrap();
        assert_eq!(c.engine.nvml_sample_ms, 0);
        assert!(Config::from_toml("[engine]\nnvml_sample_ms = -1\n").is_err());
        assert_eq!(
            Config::default().cancel_abandoned().unwrap(),
            [ProofKind::WindowPoSt, ProofKind::WinningPoSt]
        );
        let c = Config::from_toml("[server]\ncancel_abandoned = [\"porep\", \"snap\"]\n").unwrap();
        assert_eq!(
            c.cancel_abandoned().unwrap(),
            [ProofKind::PoRep, ProofKind::SnapDeals]
        );
        let e = Config::from_toml("[server]\ncancel_abandoned = [\"winning\", \"nope\"]\n")
            .unwrap_err();
        assert!(e.contains("server.cancel_abandoned"), "{e}");
        assert_eq!(Config::default().engine.reused_partition_buffers, None);
        let c = Config::from_toml("[engine]\nreused_partition_buffers = 0\n").unwrap();
        assert_eq!(
            super::super::engine_config(&c)
                .unwrap()
                .reused_partition_buffers,
            Some(0)
        );
    }

    #[test]
    fn intake_limits_are_configured_and_checked() {
        let c = Config::from_toml(
            "[intake]\nqueued_jobs_porep = 4\nmax_queued_bytes = \"8GiB\"\npost_reserved_percent = 40\n",
        )
        .unwrap();
        let l = c.intake.limits(c.server.max_message_bytes).unwrap();
        assert_eq!(l.jobs[0], 4);
        assert_eq!(l.queued_bytes, 8 << 30);
        assert_eq!(l.post_reserved_percent, 40);
        // The effective configuration (`--check-config`) shows the section.
        assert!(format!("{c:#?}").contains("queued_jobs_window_post: 256"));
        assert!(Config::from_toml("[intake]\nqueued_jobs = 1\n").is_err());
        let e = Config::from_toml("[intake]\nmax_inflight_bytes = \"1MiB\"\n").unwrap_err();
        assert!(e.contains("server.max_message_bytes"), "{e}");
    }

    #[test]
    fn the_journal_is_on_by_default_and_its_bound_is_checked() {
        let c = Config::from_toml("").unwrap();
        assert!(c.journal.enabled);
        assert_eq!(c.journal.dir, "/var/lib/filprove/journal");
        assert_eq!(c.journal.max_bytes(c.server.max_message_bytes), Ok(8 << 30));
        let e = Config::from_toml("[journal]\nmax_bytes = \"1MiB\"\n").unwrap_err();
        assert!(e.contains("journal.max_bytes"), "{e}");
        assert!(Config::from_toml("[journal]\ndir = \"\"\n").is_err());
        let c = Config::from_toml("[journal]\nenabled = false\ndir = \"\"\n").unwrap();
        assert!(!c.journal.enabled);
        assert!(Config::from_toml("[journal]\npath = \"/x\"\n").is_err());
    }

    #[test]
    fn example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/filprove.example.toml");
        Config::read(&path).unwrap();
    }
}
