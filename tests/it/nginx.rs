//! A real nginx (Debian's package) on loopback in front of hookwire servers, run on the shipped
//! `deploy/nginx.conf` with the servers' addresses, its own port and its own temp paths written
//! in: what the replica test and the replica benchmark drive is the file operators use.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The nginx binary: on the PATH, or where Debian puts it (`/usr/sbin` is not on every PATH).
pub fn binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("nginx"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/nginx");
        debian.is_file().then_some(debian)
    })
}

/// The nginx binary, or `None` after saying the test was skipped (outside CI) — under
/// `CI=true` a missing nginx fails the test instead.
pub fn required(test: &str) -> Option<PathBuf> {
    let found = binary();
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("nginx is not installed, and CI=true requires {test}");
        }
        eprintln!("SKIPPED: {test} needs nginx (apt-get install nginx); it is not installed");
    }
    found
}

/// `deploy/nginx.conf` with `upstreams` in place of the compose replicas, `listen` as its
/// address and every path nginx writes inside `dir`. Panics when the shipped file no longer
/// has the lines this relies on, so a change there cannot quietly leave the test behind.
pub fn config_for(
    shipped: &str,
    upstreams: &[SocketAddr],
    listen: SocketAddr,
    dir: &Path,
) -> String {
    let mut out = Vec::new();
    let (mut servers, mut listens, mut http) = (0, 0, 0);
    for line in shipped.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(rest) = trimmed.strip_prefix("server hookwire-") {
            // `server hookwire-1:8080 max_fails=1 fail_timeout=5s;`: keep the parameters.
            let parameters = rest.split_once(' ').map_or(";", |(_, p)| p);
            if servers == 0 {
                for upstream in upstreams {
                    out.push(format!("{indent}server {upstream} {parameters}"));
                }
            }
            servers += 1;
        } else if trimmed == "listen 8080;" {
            out.push(format!("{indent}listen {listen};"));
            listens += 1;
        } else if trimmed == "http {" {
            out.push(line.to_string());
            for (directive, name) in [
                ("client_body_temp_path", "body"),
                ("proxy_temp_path", "proxy"),
                ("fastcgi_temp_path", "fastcgi"),
                ("uwsgi_temp_path", "uwsgi"),
                ("scgi_temp_path", "scgi"),
            ] {
                out.push(format!("    {directive} {};", dir.join(name).display()));
            }
            http += 1;
        } else {
            out.push(line.to_string());
        }
    }
    assert!(
        servers >= 1 && listens == 1 && http == 1,
        "deploy/nginx.conf changed shape: {servers} `server hookwire-N` lines, {listens} `listen 8080;`, {http} `http {{`"
    );
    out.join("\n")
}

/// A running nginx, stopped (with its workers) when dropped.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    /// Its stderr (the error log) and stdout (the access log, with each request's upstream).
    log: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM lets the master stop its workers; should it not, the whole group goes.
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        for _ in 0..300 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// Starts `binary` on `deploy/nginx.conf` in front of `upstreams`, on a free loopback port,
    /// and waits until it answers.
    pub async fn start(binary: &Path, upstreams: &[SocketAddr]) -> Nginx {
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/nginx.conf"),
        )
        .unwrap();
        // The free port is found by binding and letting go; should another process take it in
        // between, nginx says so and the next port is tried.
        let mut last_log = Vec::new();
        for _ in 0..3 {
            let listen = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            match Self::try_start(binary, &shipped, upstreams, listen).await {
                Ok(nginx) => return nginx,
                Err(log) => last_log = log,
            }
        }
        panic!("nginx did not start; its log: {last_log:#?}");
    }

    async fn try_start(
        binary: &Path,
        shipped: &str,
        upstreams: &[SocketAddr],
        listen: SocketAddr,
    ) -> Result<Nginx, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        // Run as root, nginx's workers are `nobody`: they must reach the temp paths.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config_for(shipped, upstreams, listen, dir.path())).unwrap();
        let pid_file = dir.path().join("nginx.pid");
        let mut child = Command::new(binary)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            .args(["-e", "stderr", "-g"])
            .arg(format!("daemon off; pid {};", pid_file.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        for output in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let lines = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let mut nginx = Nginx {
            child,
            addr: listen,
            log,
            _dir: dir,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = nginx.child.try_wait() {
                // Exited: give the reader threads a moment to collect why.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(nginx.log());
            }
            if tokio::net::TcpStream::connect(listen).await.is_ok() {
                let answer = crate::common::http_get(listen, "/nginx-health").await;
                if answer.0 == 200 {
                    return Ok(nginx);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(nginx.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every line nginx logged so far (errors, and the access log).
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}
