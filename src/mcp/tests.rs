use std::collections::BTreeMap;
use std::ffi::OsString;

use super::*;

fn lookup(name: &str) -> Option<OsString> {
    match name {
        "PATH" => Some("/usr/bin:/bin".into()),
        "TOKEN" => Some("t".into()),
        _ => None,
    }
}

fn stdio(name: &str, env: &[(&str, &str)]) -> McpServerSettings {
    let spec = McpServerSpec {
        command: Some("sh".into()),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..McpServerSpec::default()
    };
    McpServerSettings::new(name, spec, McpOrigin::Config).unwrap()
}

#[test]
fn claude_codes_project_file_is_read_server_by_server() {
    let file = std::path::Path::new("/ws/.mcp.json");
    let (servers, problems) = parse_project_file(
        br#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1"}},
            "remote": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"X-Key": "k"}},
            "old": {"type": "sse", "url": "https://mcp.example/sse"},
            "odd": {"command": "x", "alwaysAllow": ["y"]}
        }}"#,
        file,
    );
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["files", "odd", "remote"]);
    assert!(servers.iter().all(|s| s.origin == McpOrigin::Workspace));
    assert!(servers.iter().all(|s| s.auto_approve.is_empty()));
    let shown: Vec<String> = problems.iter().map(|p| p.labelled().to_string()).collect();
    assert_eq!(
        shown,
        [
            "warning: /ws/.mcp.json: mcpServers.odd: alwaysAllow is not used by hookwire",
            "error: /ws/.mcp.json: mcpServers.old: the legacy SSE transport is not supported: \
             give the server's streamable HTTP endpoint as `url`",
        ]
    );
    let (servers, problems) = parse_project_file(b"{not json", file);
    assert!(servers.is_empty());
    assert!(
        problems[0].message.starts_with("not a valid .mcp.json"),
        "{problems:?}"
    );
}

#[test]
fn server_variables_must_be_set_and_the_workspace_gets_none() {
    assert!(stdio("a", &[("T", "${TOKEN}")])
        .environment_problems(&lookup)
        .is_empty());
    assert_eq!(
        stdio("a", &[("T", "${MISSING}")]).environment_problems(&lookup),
        ["env T names ${MISSING}, which is not set in the server's environment"]
    );
    let mut workspace = stdio("a", &[("T", "${TOKEN}")]);
    workspace.origin = McpOrigin::Workspace;
    let problems = workspace.environment_problems(&lookup);
    assert!(
        problems[0].contains("only the config file's mcp_servers may"),
        "{problems:?}"
    );
    assert_eq!(
        stdio("a", &[("HOOKWIRE_HOOK_RUN", "x")]).environment_problems(&lookup),
        ["env name HOOKWIRE_HOOK_RUN is reserved by hookwire"]
    );
}

#[test]
fn the_workspace_file_is_read_only_when_trusted_and_the_config_wins_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join(PROJECT_FILE),
        r#"{"mcpServers": {"a": {"command": "sh"}, "b": {"command": "no-such-program-here"},
            "c": {"command": "sh", "env": {"K": "${TOKEN}"}}}}"#,
    )
    .unwrap();
    let config = [stdio("a", &[])];
    let state = dir.path().join("state");
    let untrusted = TrustPolicy::new(&workspace, false, Some(&state));
    let found = configured(&config, None, &workspace, &untrusted, &lookup);
    assert_eq!(found.servers.len(), 1);
    assert_eq!(found.servers[0].origin, McpOrigin::Config);
    assert_eq!(
        found.untrusted.as_ref().map(|u| u.shown.as_str()),
        Some(PROJECT_FILE)
    );

    let found = configured(
        &config,
        None,
        &workspace,
        &TrustPolicy::all(&workspace),
        &lookup,
    );
    assert!(found.untrusted.is_none());
    let servers: Vec<(&str, McpOrigin)> = found
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.origin))
        .collect();
    assert_eq!(
        servers,
        [("a", McpOrigin::Config), ("b", McpOrigin::Workspace)],
        "{:?}",
        found.problems
    );
    let shown: Vec<String> = found
        .problems
        .iter()
        .map(|p| p.labelled().to_string())
        .collect();
    let file = workspace.join(PROJECT_FILE).display().to_string();
    assert_eq!(
        shown,
        [
            format!(
                "warning: {file}: mcpServers.a: the config file's mcp_servers already has a \
                 server a; this one is left out"
            ),
            format!(
                "warning: {file}: mcpServers.b: no-such-program-here is not found on the PATH \
                 the server gets; it will fail to start"
            ),
            format!(
                "error: {file}: mcpServers.c: env K names a server variable (${{TOKEN}}); only \
                 the config file's mcp_servers may (move this server there); the server is left \
                 out"
            ),
        ]
    );
}
