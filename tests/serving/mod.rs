//! The harness of the tests that run the real `cardex serve` binary: scratch folders,
//! API keys, a server process whose log is collected, waiting for log lines.

#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub mod postgres;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A scratch folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("cardex-server-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cardex` with `args`; returns its exit status, stdout and stderr.
pub fn cardex(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs `cardex` with `args` and `input` on its standard input; returns its exit status,
/// stdout and stderr.
pub fn cardex_with_input(args: &[&str], input: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Imports into the state `state` an accounts file (written in `dir`) with one team,
/// `team`, of 500 credits and one key; returns the key.
pub fn import_team(state: &str, dir: &Path, team: &str) -> String {
    let file = dir.join(format!("accounts-{team}.json"));
    let mut accounts = cardex::server::accounts::Accounts::default();
    let plan = cardex::server::accounts::Plan {
        total_credits: 500,
        overage_credit_rate: 0.002,
    };
    let key = accounts.add_key(team, plan, 1).unwrap();
    accounts.write(&file).unwrap();
    let (code, _, err) = cardex(&[
        "accounts",
        "import",
        file.to_str().unwrap(),
        "--state",
        state,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("imported 1 teams"), "{err}");
    key
}

/// Revokes `key` in the state `state` (a `--state` URL), reading it from standard input.
pub fn revoke_key(state: &str, key: &str) {
    let (code, _, err) = cardex_with_input(
        &["accounts", "revoke-key", "--state", state],
        &format!("{key}\n"),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("revoked a key of team"), "{err}");
}

/// The Python named by the environment variable `var`, one with `what` installed; `None`
/// when it is not set (the test prints a notice and passes), except under `CI=true`, where
/// its absence fails the test.
pub fn python(var: &str, what: &str) -> Option<std::ffi::OsString> {
    let python = std::env::var_os(var);
    if python.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{var} (a Python with {what}) is not set"
        );
        eprintln!("{var} is not set: skipped");
    }
    python
}

/// `--state` for the SQLite file `db`.
pub fn sqlite(db: &Path) -> String {
    format!("sqlite:{}", db.display())
}

/// Adds a key for `team` with `credits` to the state `state` (a `--state` URL); returns
/// the key.
pub fn add_key(state: &str, team: &str, credits: u64) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cardex"))
        .args(["accounts", "add-key", "--state", state])
        .args(["--team", team, "--total-credits", &credits.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(key.starts_with("cdx_"));
    key
}

/// A running server, killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts `cardex serve` with `args`; without `--state` it runs `--open`.
    pub fn start(args: &[&str]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cardex"));
        command.arg("serve");
        if !args.contains(&"--data") {
            command.args(["--data", concat!(env!("CARGO_MANIFEST_DIR"), "/data")]);
        }
        if !args.contains(&"--state") && !args.contains(&"--open") {
            command.arg("--open");
        }
        let mut child = command
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(at) = line.find("event=listening message=http://") {
                        let _ = tx.send(line[at + "event=listening message=".len()..].to_string());
                    }
                    // --log-format json
                    if line.starts_with('{') && line.contains(r#""event":"listening""#) {
                        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                        let _ = tx.send(v["message"].as_str().unwrap().to_string());
                    }
                    log.lock().unwrap().push(line);
                }
            })
        };
        let base = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server says where it listens");
        Server {
            child,
            base,
            log,
            reader: Some(reader),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// SIGTERM, wait for a clean exit, and return the whole log.
    pub fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status}");
                break;
            }
            assert!(Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        let log = self.log();
        assert!(
            log.contains("event=stopped") || log.contains(r#""event":"stopped""#),
            "{log}"
        );
        log
    }
}

impl Server {
    /// Starts `cardex serve` over the snapshot folder `data` instead of the bundled one.
    pub fn start_on(data: &Path, args: &[&str]) -> Server {
        let mut all = vec!["--data", data.to_str().unwrap()];
        all.extend_from_slice(args);
        Server::start(&all)
    }

    /// Waits until the log has `count` lines containing `needle`; returns the log.
    pub fn wait_for(&self, needle: &str, count: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = self.log();
            if log.matches(needle).count() >= count {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "waited 30 s for {count}× {needle:?}; the log:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a signal (`HUP`, `TERM`, `KILL`) to the server.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
