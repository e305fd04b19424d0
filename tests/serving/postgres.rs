//! A throw-away PostgreSQL server for the tests: `initdb` and `pg_ctl` in a scratch
//! folder, listening on a Unix socket in that folder only (no TCP port), stopped and
//! removed when dropped. `initdb` refuses to run as root, so as root every PostgreSQL
//! command runs as the `postgres` account (which Debian's package makes).
//!
//! Without PostgreSQL installed, [`Cluster::start`] says so and returns `None` so the
//! test can return; under `CI=true` it panics instead: CI installs PostgreSQL, and a
//! missing one is a failure there, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder of PostgreSQL's server programs: `$CARDEX_PG_BIN`, the folder the `pg_ctl`
/// on the PATH links to, or the newest `/usr/lib/postgresql/*/bin` (Debian's layout).
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CARDEX_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if let Ok(pg_ctl) = std::fs::canonicalize(dir.join("pg_ctl")) {
                let bin = pg_ctl.parent()?.to_path_buf();
                if bin.join("initdb").is_file() && bin.join("createdb").is_file() {
                    return Some(bin);
                }
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A running throw-away PostgreSQL server.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    /// Whether commits are synced to disk (`fsync`); the tests turn it off, since
    /// nothing in them survives a machine crash anyway.
    durable: bool,
}

impl Cluster {
    /// Makes and starts a cluster in a new scratch folder; `None` (said on stderr) when
    /// PostgreSQL is not installed, outside CI.
    pub fn start(name: &str) -> Option<Cluster> {
        Cluster::start_with(name, false)
    }

    /// [`Cluster::start`], with `fsync` on when `durable` (as a production server runs).
    pub fn start_with(name: &str, durable: bool) -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL's initdb and pg_ctl are not installed (CI=true: a failure, not a skip); .ci/run installs them"
            );
            eprintln!("skipped: PostgreSQL is not installed (initdb, pg_ctl)");
            return None;
        };
        let dir = super::scratch(&format!("pg-{name}"));
        let as_postgres = is_root();
        let cluster = Cluster {
            dir,
            bin,
            as_postgres,
            durable,
        };
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&cluster.dir)
                .status()
                .expect("chown");
            assert!(status.success(), "chown the scratch folder to postgres");
        }
        let out = cluster.run(
            "initdb",
            &[
                "-D",
                cluster.data().to_str().unwrap(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ],
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.start_again();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The folder of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let program = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        command
            .args(args)
            .output()
            .expect("a PostgreSQL program runs")
    }

    /// Starts the server (again, after [`Cluster::stop`]) and waits until it accepts
    /// connections.
    pub fn start_again(&self) {
        let options = format!(
            "-k {} -c listen_addresses='' -c fsync={} -c max_connections=200",
            self.dir.display(),
            if self.durable { "on" } else { "off" }
        );
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                self.dir.join("server.log").to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Stops the server the way an operator's restart does (`-m fast`: open
    /// transactions are rolled back, connections closed).
    pub fn stop(&self) {
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Sends `signal` (`STOP`, `CONT`) to the server and every process it started: stopped,
    /// it holds its connections open and answers nothing, as a database host that went
    /// away without closing them does.
    pub fn signal_all(&self, signal: &str) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .expect("the server's postmaster.pid");
        let postmaster = pid_file.lines().next().expect("a pid").trim().to_string();
        let mut pids = vec![postmaster.clone()];
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`: the fields after the last `)`.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            if after.split_whitespace().nth(1) == Some(postmaster.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        // The server itself must get it; a child may have ended since it was listed (a
        // backend whose client went away), which is no failure.
        for (i, pid) in pids.iter().enumerate() {
            let status = Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(pid)
                .stderr(std::process::Stdio::null())
                .status()
                .expect("kill");
            assert!(
                status.success() || i > 0,
                "kill -{signal} {pid} (the server)"
            );
        }
    }

    /// Creates database `name`; returns its `--state` URL.
    pub fn database(&self, name: &str) -> String {
        let out = self.run(
            "createdb",
            &["-h", self.dir.to_str().unwrap(), "-U", "postgres", name],
        );
        assert!(
            out.status.success(),
            "createdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.url(name)
    }

    /// The `--state` URL of database `name` (over the Unix socket).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@/{name}?host={}", self.dir.display())
    }

    /// Runs `sql` in database `name` with psql; returns its output (unaligned, no
    /// headers).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let out = self.run(
            "psql",
            &[
                "-h",
                self.dir.to_str().unwrap(),
                "-U",
                "postgres",
                "-d",
                name,
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        );
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
