//! What running hookwire in production relies on: the drain on SIGTERM, the instance id that
//! says which replica served a chat, `/metrics` complete from the first scrape, and the
//! `hookwire health` probe that the container image runs.

use std::time::Duration;

use serde_json::{json, Value};
use tokio_tungstenite::tungstenite;

use crate::binary::Hookwire;
use crate::common::*;

/// A reply that streams "almost " and then waits for `gate` before "done".
fn gated_reply(gate: &Gate) -> Reply {
    Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":"almost "}))),
        Piece::Until(gate.clone()),
        Piece::Raw(chunk(json!({"content":"done"}))),
        Piece::Raw("data: [DONE]\n\n".into()),
    ])
}

/// The next frame of `kind`, skipping (and returning) the frames before it.
async fn frame_of(client: &mut Client, kind: &str) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let frame = client.frame().await;
        if frame["type"] == kind {
            return (frame, before);
        }
        before.push(frame);
    }
}

/// The HTTP status a WebSocket upgrade gets when the server refuses it.
async fn upgrade_status(addr: std::net::SocketAddr) -> Option<u16> {
    match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
        Err(tungstenite::Error::Http(response)) => Some(response.status().as_u16()),
        Ok(_) => Some(101),
        Err(_) => None,
    }
}

/// Sends SIGTERM, as `docker stop`, Kubernetes and systemd do.
fn terminate(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
}

async fn hookwire_health(env: &[(&str, &str)]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("health")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_draining_server_finishes_running_chats_and_takes_no_new_ones() {
    let upstream = FakeUpstream::start().await;
    let gate = Gate::new();
    upstream.push(gated_reply(&gate));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.limits.shutdown_grace = Duration::from_secs(10))
        .start()
        .await;
    let addr = server.addr;
    let mut busy = server.connect().await;
    let mut idle = server.connect().await;
    busy.send(json!({"type":"chat","id":"s","input":"go","enable_tools":false}))
        .await;
    assert_eq!(busy.frame().await["type"], "start");
    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".to_string()));

    let shutdown = tokio::spawn(server.shutdown());
    // An idle connection closes at once.
    assert_eq!(idle.close_code(Duration::from_secs(2)).await, Some(1001));
    // The server still answers, so a load balancer or a readiness probe learns it is draining,
    // and new connections are refused before the upgrade (nginx passes them to another replica).
    assert_eq!(
        http_get(addr, "/healthz").await,
        (503, "draining".to_string())
    );
    assert_eq!(upgrade_status(addr).await, Some(503));
    // Alive all the same: a liveness probe must not kill a server that finishes its chats.
    assert_eq!(http_get(addr, "/livez").await, (200, "ok".to_string()));

    // The busy connection is still served: a ping is answered, a new chat is refused clearly.
    busy.send(json!({"type":"ping","id":"p"})).await;
    let (pong, _) = frame_of(&mut busy, "pong").await;
    assert_eq!(pong["id"], "p");
    busy.send(json!({"type":"chat","id":"next","input":"more","enable_tools":false}))
        .await;
    let (refused, _) = frame_of(&mut busy, "error").await;
    assert_eq!(
        (refused["id"].as_str(), refused["code"].as_str()),
        (Some("next"), Some("draining")),
        "{refused}"
    );
    assert_eq!(
        refused.get("fatal"),
        None,
        "the running chat goes on: {refused}"
    );

    // The running chat finishes, then its connection closes with 1001.
    gate.open();
    let (done, _) = frame_of(&mut busy, "done").await;
    assert_eq!(done["id"], "s");
    assert_eq!(done["message"]["content"], "almost done");
    assert_eq!(busy.close_code(Duration::from_secs(2)).await, Some(1001));
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(upstream.requests().len(), 1, "the refused chat never ran");
}

#[tokio::test]
async fn sigterm_drains_the_server_process() {
    let upstream = FakeUpstream::start().await;
    let gate = Gate::new();
    upstream.push(gated_reply(&gate));
    let mut server = Hookwire::start(
        "",
        &[
            ("HOOKWIRE_LLM_BASE_URL", upstream.base_url.as_str()),
            ("HOOKWIRE_LLM_API_KEY", "test-key"),
        ],
    );
    let addr = server.addr.to_string();
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"s","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    let healthy = hookwire_health(&[("HOOKWIRE_ADDR", &addr)]).await;
    assert!(healthy.status.success(), "{healthy:?}");

    terminate(&server.child);
    let draining = eventually(Duration::from_secs(5), || async {
        http_get(server.addr, "/healthz").await == (503, "draining".to_string())
    })
    .await;
    assert!(draining, "the log: {:?}", server.log());
    let probe = hookwire_health(&[("HOOKWIRE_ADDR", &addr)]).await;
    assert_eq!(probe.status.code(), Some(1), "{probe:?}");
    assert!(
        String::from_utf8_lossy(&probe.stderr).contains("503"),
        "{probe:?}"
    );

    gate.open();
    let frames = client.until_end().await;
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "almost done",
        "{frames:?}"
    );
    assert_eq!(client.close_code(Duration::from_secs(2)).await, Some(1001));
    let mut status = None;
    let exited = eventually(Duration::from_secs(5), || {
        status = server.child.try_wait().unwrap();
        std::future::ready(status.is_some())
    })
    .await;
    assert!(
        exited,
        "still running after the drain; the log: {:?}",
        server.log()
    );
    assert!(status.unwrap().success(), "{status:?}");
}

#[tokio::test]
async fn each_server_names_itself_in_api_info_and_in_start() {
    let first = TestServer::builder().start().await;
    let second = TestServer::builder().start().await;
    let instance = |body: String| {
        let info: Value = serde_json::from_str(&body).unwrap();
        info["instance"].as_str().unwrap_or_default().to_string()
    };
    let a = instance(http_get(first.addr, "/api/info").await.1);
    let b = instance(http_get(second.addr, "/api/info").await.1);
    assert!(a.len() >= 8, "{a:?}");
    assert_ne!(a, b, "each server makes its own");
    let frames = first
        .connect()
        .await
        .chat(json!({"type":"chat","id":"c","input":"hello","enable_tools":false}))
        .await;
    assert_eq!(frames[0]["type"], "start");
    assert_eq!(frames[0]["instance"], a.as_str());
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test]
async fn a_fresh_server_lists_its_metrics_before_the_first_chat() {
    // Its own process: in this one, other tests have recorded metrics already.
    let server = Hookwire::start("", &[]);
    let (status, body) = http_get(server.addr, "/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "# TYPE hookwire_chats_total counter",
        "hookwire_chats_total{outcome=\"completed\"} 0",
        "# HELP hookwire_connections_open ",
        "hookwire_connections_open 0",
        "hookwire_llm_calls_total 0",
        "hookwire_llm_tokens_total{kind=\"prompt\"} 0",
        "hookwire_text_deltas_total 0",
        "# TYPE hookwire_llm_first_token_seconds histogram",
        "hookwire_chat_duration_seconds_count 0",
        "hookwire_rejected_connections_total{reason=\"capacity\"} 0",
    ] {
        assert!(
            body.contains(line),
            "{line:?} missing from /metrics:\n{body}"
        );
    }
}

/// `hookwire_allocator_bytes{kind}` of a `/metrics` body, in bytes.
fn allocator_figure(metrics: &str, kind: &str) -> Option<f64> {
    let series = format!("hookwire_allocator_bytes{{kind=\"{kind}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test]
async fn the_binary_shows_its_allocators_figures_on_metrics() {
    let server = Hookwire::start("", &[]);
    // The figures are published every second, from the first one after the server started.
    let mut body = String::new();
    for _ in 0..100 {
        body = http_get(server.addr, "/metrics").await.1;
        if allocator_figure(&body, "allocated").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        body.contains("# TYPE hookwire_allocator_bytes gauge"),
        "no allocator figures on /metrics:\n{body}"
    );
    let figure = |kind| allocator_figure(&body, kind).unwrap_or(0.0);
    let (allocated, active, resident, mapped) = (
        figure("allocated"),
        figure("active"),
        figure("resident"),
        figure("mapped"),
    );
    // A started server holds its skills, configuration and runtime: hundreds of KB at least.
    assert!(allocated > 100_000.0, "allocated {allocated}:\n{body}");
    // What the program holds fits in the pages in use, which fit in what is resident and mapped.
    assert!(allocated <= active, "{body}");
    assert!(active <= resident && active <= mapped, "{body}");
    for kind in ["metadata", "retained"] {
        assert!(
            allocator_figure(&body, kind).is_some(),
            "{kind} missing:\n{body}"
        );
    }
}

#[tokio::test]
async fn hookwire_health_probes_the_configured_address_with_an_allowed_host() {
    // A server that answers only its public name: the probe must send a Host it accepts.
    let server = Hookwire::start("", &[("HOOKWIRE_ALLOWED_HOSTS", "chat.example.com")]);
    let addr = server.addr.to_string();
    let (status, _) = http_get(server.addr, "/healthz").await;
    assert_eq!(status, 403, "the server refuses other names");
    let healthy = hookwire_health(&[
        ("HOOKWIRE_ADDR", &addr),
        ("HOOKWIRE_ALLOWED_HOSTS", "chat.example.com"),
    ])
    .await;
    assert!(healthy.status.success(), "{healthy:?}");
    assert_eq!(String::from_utf8_lossy(&healthy.stdout).trim(), "ok");

    drop(server);
    let down = hookwire_health(&[("HOOKWIRE_ADDR", &addr)]).await;
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    assert!(
        String::from_utf8_lossy(&down.stderr).contains(&addr),
        "{down:?}"
    );
}

/// A file of the repository, parsed from YAML.
fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(repo(path)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Seconds in a compose duration such as `40s` or `1m30s`.
fn compose_seconds(text: &str) -> u64 {
    let (minutes, rest) = text.split_once('m').unwrap_or(("0", text));
    minutes.parse::<u64>().unwrap() * 60 + rest.trim_end_matches('s').parse::<u64>().unwrap_or(0)
}

#[test]
fn the_shipped_deploy_files_agree_with_the_code() {
    let grace = hookwire::config::Limits::default().shutdown_grace.as_secs();

    // Kubernetes: the pod outlives the preStop wait and the whole drain.
    let deployment = yaml("deploy/k8s/deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let pre_stop: u64 = container["lifecycle"]["preStop"]["exec"]["command"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let termination = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        termination > pre_stop + grace,
        "terminationGracePeriodSeconds {termination} ≤ preStop {pre_stop} + drain {grace}"
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/livez");
    assert_eq!(
        container["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "hookwire"
    );

    // The skills ConfigMap holds the repository's skill, each key placed at its path.
    let skills = yaml("deploy/k8s/skills.yaml");
    let data = skills["data"].as_object().unwrap();
    let items = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "skills")
        .unwrap()["configMap"]["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), data.len(), "one item per key: {items:?}");
    for item in &items {
        let key = item["key"].as_str().unwrap();
        let path = item["path"].as_str().unwrap();
        let shipped = std::fs::read_to_string(repo(&format!("skills/{path}")))
            .unwrap_or_else(|e| panic!("skills/{path}: {e}"));
        assert_eq!(
            data[key].as_str().unwrap().trim_end(),
            shipped.trim_end(),
            "{key} differs from skills/{path}"
        );
    }

    // Compose: each replica shares the secret and outlives its drain.
    let compose = yaml("deploy/compose.yaml");
    for name in ["hookwire-1", "hookwire-2", "hookwire-3"] {
        let service = &compose["services"][name];
        let stop = compose_seconds(service["stop_grace_period"].as_str().unwrap());
        assert!(stop > grace, "{name}: stop_grace_period {stop}s ≤ {grace}s");
        assert!(
            service["environment"]["HOOKWIRE_SECRET"]
                .as_str()
                .unwrap()
                .starts_with("${HOOKWIRE_SECRET:?"),
            "{name}: the secret is required from the environment"
        );
        // The quotas are counted where every replica sees them.
        let shared = service["environment"]["HOOKWIRE_SHARED_STATE"]
            .as_str()
            .unwrap();
        assert!(shared.starts_with("redis://valkey:"), "{name}: {shared}");
        assert_eq!(
            service["depends_on"]["valkey"]["condition"], "service_healthy",
            "{name}"
        );
    }
    assert!(compose["services"]["valkey"]["image"]
        .as_str()
        .unwrap()
        .starts_with("valkey/valkey:"));
    let nginx_conf = compose["services"]["nginx"]["volumes"][0].as_str().unwrap();
    assert!(nginx_conf.starts_with("./nginx.conf:"), "{nginx_conf}");
    // nginx's access log names the path, never the query (`/ws?token=…`).
    let conf = std::fs::read_to_string(repo("deploy/nginx.conf")).unwrap();
    let formats: Vec<&str> = conf
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter(|line| line.contains('$'))
        .collect();
    assert!(
        formats.iter().any(|line| line.contains("$uri")),
        "the log format names $uri: {formats:#?}"
    );
    for forbidden in [
        "$request ",
        "$request\"",
        "$request_uri",
        "$args",
        "$query_string",
        "$arg_",
    ] {
        assert!(
            !formats.iter().any(|line| line.contains(forbidden)),
            "{forbidden} would log the token: {formats:#?}"
        );
    }

    // Dockerfile: a placeholder for every bench target (cargo refuses a manifest whose targets
    // are missing), and the health check needs no curl.
    let dockerfile = std::fs::read_to_string(repo("Dockerfile")).unwrap();
    let manifest = std::fs::read_to_string(repo("Cargo.toml")).unwrap();
    let placeholders = dockerfile
        .lines()
        .find(|line| line.contains("for bench in"))
        .unwrap();
    let mut lines = manifest.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "[[bench]]" {
            let name = lines.next().unwrap().trim();
            let name = name.strip_prefix("name = ").unwrap().trim_matches('"');
            assert!(
                placeholders
                    .split_whitespace()
                    .any(|word| word.trim_end_matches(';') == name),
                "the Dockerfile has no placeholder for bench {name:?}: {placeholders}"
            );
        }
    }
    assert!(dockerfile.contains(r#"CMD ["/usr/local/bin/hookwire", "health"]"#));
    assert!(!dockerfile.contains("curl"));
}
