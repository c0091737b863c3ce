//! A real `redis-server` for the tests and benches that count quotas in Redis (docs/protocol.md
//! §20).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` on a free loopback port, without persistence; killed on drop.
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RedisServer {
    /// `None` after saying the test was skipped (outside CI); under `CI=true` a missing
    /// `redis-server` fails the test.
    pub async fn start(test: &str) -> Option<RedisServer> {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok();
        if !found {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("redis-server is not installed, and CI=true requires {test}");
            }
            eprintln!("SKIPPED: {test} needs redis-server (apt-get install redis-server)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = RedisServer { child, port };
        let up = crate::common::eventually(Duration::from_secs(10), || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        })
        .await;
        assert!(up, "redis-server did not come up on port {port}");
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}
