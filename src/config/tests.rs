use super::*;

mod documented;
mod upstream;

pub(super) fn no_env(_: &str) -> Option<String> {
    None
}

pub(super) fn file(yaml: &str) -> FileConfig {
    let options = serde_saphyr::options! { strict_booleans: true };
    match serde_saphyr::from_str_with_options(yaml, options) {
        Ok(file) => file,
        Err(e) => panic!("bad test yaml: {e}"),
    }
}

#[test]
fn defaults_match_the_protocol() {
    let config = Config::resolve(&CliSettings::default(), FileConfig::default(), no_env).unwrap();
    assert_eq!(config.addr, "127.0.0.1:8080");
    assert_eq!(config.skills_dir, PathBuf::from("./skills"));
    assert_eq!(config.agent.model, "gpt-4o-mini");
    assert_eq!(config.llm.idle_timeout, Duration::from_secs(60));
    assert_eq!(config.llm.connect_timeout, Duration::from_secs(10));
    assert_eq!(config.agent.marker, "[NEED_TOOL]");
    assert_eq!(config.agent.max_steps, 8);
    assert!(config.agent.summary_on_limit);
    assert_eq!(config.agent.max_total_tokens, None);
    assert!(config.llm.is_demo());
    assert_eq!(config.limits, Limits::default());
    assert_eq!(config.allowed_origins, None);
    assert_eq!(config.allowed_hosts, None);
    assert_eq!(config.auth_token, None);
    assert!(!config.trust_workspace_hooks);
    assert_eq!(config.state_dir, None, "no HOME, no XDG_STATE_HOME");
    assert_eq!(config.session_hooks, SessionHookSettings::default());
    assert!(config.http_hook_urls.is_empty());
}

#[test]
fn trust_settings_come_from_env_then_file() {
    let env = |name: &str| {
        let value = match name {
            "HOOKWIRE_ALLOWED_ORIGINS" => "https://a.example, https://b.example,",
            "HOOKWIRE_ALLOWED_HOSTS" => "chat.example",
            "HOOKWIRE_AUTH_TOKEN" => "tok",
            "HOOKWIRE_TRUST_WORKSPACE_HOOKS" => "true",
            "XDG_STATE_HOME" => "/state",
            "HOME" => "/home/me",
            _ => return None,
        };
        Some(value.to_string())
    };
    let yaml = "allowed_origins: [https://file.example]\nauth_token: file-token\n\
                session_hooks: {enabled: false, ttl_seconds: 60, max_per_chat: 2}\n\
                http_hooks: {allowed_urls: ['http://127.0.0.1:9/']}\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), env).unwrap();
    assert_eq!(
        config.allowed_origins,
        Some(vec!["https://a.example".into(), "https://b.example".into()])
    );
    assert_eq!(config.allowed_hosts, Some(vec!["chat.example".into()]));
    assert_eq!(config.auth_token.as_deref(), Some("tok"));
    assert!(config.trust_workspace_hooks);
    assert_eq!(config.state_dir, Some(PathBuf::from("/state/hookwire")));
    assert!(!config.session_hooks.enabled);
    assert_eq!(config.session_hooks.ttl, Duration::from_secs(60));
    assert_eq!(config.session_hooks.max_per_chat, 2);
    assert_eq!(
        config.http_hook_urls,
        vec!["http://127.0.0.1:9/".to_string()]
    );
    let home_only = |name: &str| (name == "HOME").then(|| "/home/me".to_string());
    let config = Config::resolve(&CliSettings::default(), file(yaml), home_only).unwrap();
    assert_eq!(
        config.state_dir,
        Some(PathBuf::from("/home/me/.local/state/hookwire"))
    );
    assert_eq!(config.auth_token.as_deref(), Some("file-token"));
    let error = Config::resolve(
        &CliSettings::default(),
        file("http_hooks: {allowed_urls: ['127.0.0.1:9/hook']}\n"),
        no_env,
    );
    assert_eq!(
        error.unwrap_err().setting(),
        Some("http_hooks.allowed_urls")
    );
    let bad = |name: &str| (name == "HOOKWIRE_TRUST_WORKSPACE_HOOKS").then(|| "maybe".into());
    let error = Config::resolve(&CliSettings::default(), FileConfig::default(), bad);
    assert!(error.unwrap_err().to_string().contains("true or false"));
}

#[test]
fn unsafe_secrets_and_tokens_are_refused() {
    let empty_env = |name: &str| (name == "HOOKWIRE_SECRET").then(String::new);
    let error = Config::resolve(&CliSettings::default(), FileConfig::default(), empty_env);
    assert_eq!(error.unwrap_err().setting(), Some("secret"));
    let error = Config::resolve(&CliSettings::default(), file("secret: ''\n"), no_env);
    assert_eq!(error.unwrap_err().setting(), Some("secret"));
    let error = Config::resolve(&CliSettings::default(), file("auth_token: ' '\n"), no_env);
    assert_eq!(error.unwrap_err().setting(), Some("auth_token"));
    let empty_token = |name: &str| (name == "HOOKWIRE_AUTH_TOKEN").then(String::new);
    let error = Config::resolve(&CliSettings::default(), FileConfig::default(), empty_token);
    assert_eq!(error.unwrap_err().setting(), Some("auth_token"));
    let commands = "allow_session_command_hooks: true\n";
    let error = Config::resolve(&CliSettings::default(), file(commands), no_env)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("allow_session_command_hooks needs a secret"),
        "{error}"
    );
    let with_secret = format!("{commands}secret: k\n");
    assert!(Config::resolve(&CliSettings::default(), file(&with_secret), no_env).is_ok());
}

#[test]
fn flag_beats_file_beats_default() {
    let cli = CliSettings {
        model: Some("from-flag".into()),
        ..Default::default()
    };
    let config =
        Config::resolve(&cli, file("model: from-file\naddr: 127.0.0.1:9\n"), no_env).unwrap();
    assert_eq!(config.agent.model, "from-flag");
    assert_eq!(config.addr, "127.0.0.1:9");
}

#[test]
fn the_limit_summary_settings_are_read() {
    let config = Config::resolve(
        &CliSettings::default(),
        file("limits:\n  summary_on_limit: false\n  max_total_tokens: 5000\nprompts:\n  summary: SUM\n"),
        no_env,
    )
    .unwrap();
    assert!(!config.agent.summary_on_limit);
    assert_eq!(config.agent.max_total_tokens, Some(5000));
    assert_eq!(config.agent.summary_prompt, "SUM");
}

#[test]
fn the_async_hook_queue_is_read() {
    let defaults = Config::resolve(&CliSettings::default(), file(""), no_env).unwrap();
    assert_eq!(defaults.limits.async_hook_queue, 1024);
    let config = Config::resolve(
        &CliSettings::default(),
        file("limits:\n  async_hook_queue: 8\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(config.limits.async_hook_queue, 8);
}

#[test]
fn what_one_chat_may_cost_is_read() {
    let defaults = Config::resolve(&CliSettings::default(), file(""), no_env).unwrap();
    assert_eq!(defaults.limits.async_hook_queue_per_connection, 64);
    assert_eq!(defaults.agent.max_hook_model_calls, 32);
    let config = Config::resolve(
        &CliSettings::default(),
        file("limits:\n  async_hook_queue_per_connection: 4\n  max_hook_model_calls: 0\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(config.limits.async_hook_queue_per_connection, 4);
    assert_eq!(
        config.agent.max_hook_model_calls, 0,
        "0: hooks never call the model"
    );
}

#[test]
fn file_sections_are_read_and_unknown_keys_refused() {
    let config = Config::resolve(
        &CliSettings::default(),
        file("planning:\n  marker: '<<TOOLS>>'\nlimits:\n  max_steps: 3\n  hook_chain_timeout_seconds: 2.5\ndefault_skills: [a, b]\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(config.agent.marker, "<<TOOLS>>");
    assert_eq!(config.agent.max_steps, 3);
    assert_eq!(
        config.limits.hook_chain_timeout,
        Duration::from_millis(2500)
    );
    assert_eq!(
        config.default_skills,
        Some(vec!["a".to_string(), "b".to_string()])
    );
    let options = serde_saphyr::options! { strict_booleans: true };
    let bad: Result<FileConfig, _> = serde_saphyr::from_str_with_options("modle: x\n", options);
    assert!(bad.is_err());
}

#[test]
fn bad_timeouts_are_refused_with_the_setting_named() {
    let cli = CliSettings {
        llm_timeout: Some(-1.0),
        ..Default::default()
    };
    let error = Config::resolve(&cli, FileConfig::default(), no_env).unwrap_err();
    assert!(
        matches!(
            error,
            ConfigError::NotSeconds {
                setting: "llm_timeout",
                value: -1.0
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "llm_timeout must be a positive number of seconds, got -1"
    );
    let error = Config::resolve(
        &CliSettings::default(),
        file("limits:\n  hook_chain_timeout_seconds: 0\n"),
        no_env,
    )
    .unwrap_err();
    assert_eq!(error.setting(), Some("limits.hook_chain_timeout_seconds"));
    assert!(
        error
            .to_string()
            .contains("limits.hook_chain_timeout_seconds"),
        "{error}"
    );
}

#[test]
fn context_settings_default_and_come_from_the_file() {
    let config = Config::resolve(&CliSettings::default(), FileConfig::default(), no_env).unwrap();
    let context = &config.agent.context;
    assert_eq!(context.window_tokens, None);
    assert_eq!(context.compact_threshold, 0.8);
    assert_eq!(context.micro_keep_rounds, 2);
    assert_eq!(context.micro_threshold, 0.6);
    assert_eq!(context.keep_recent_groups, 4);
    assert!(context.summary_prompt.contains("what remains"));
    assert_eq!(context.window_for("gpt-4o-mini"), 128_000);
    let yaml = "context:\n  window_tokens: 32000\n  compact_threshold: 0.5\n  micro_threshold: 0.3\n  micro_keep_rounds: 1\n  keep_recent_groups: 0\n  summary_prompt: Be short.\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap();
    let context = &config.agent.context;
    assert_eq!(context.window_for("gpt-4o-mini"), 32_000);
    assert_eq!(context.compact_threshold, 0.5);
    assert_eq!(context.micro_keep_rounds, 1);
    assert_eq!(context.micro_threshold, 0.3);
    assert_eq!(context.keep_recent_groups, 0);
    assert_eq!(context.summary_prompt, "Be short.");
    let empty = "context:\n  summary_prompt: ' '\n";
    let error = Config::resolve(&CliSettings::default(), file(empty), no_env).unwrap_err();
    assert!(
        error.to_string().contains("context.summary_prompt"),
        "{error}"
    );
}

#[test]
fn limits_below_their_minimum_are_refused_with_the_same_text() {
    let cases = [
        (
            "limits:\n  max_message_bytes: 10\n",
            "limits.max_message_bytes must be at least 1024",
        ),
        (
            "limits:\n  max_frame_bytes: 10\n",
            "limits.max_frame_bytes must be at least 4096",
        ),
        (
            "limits:\n  max_pending_connections: 0\n",
            "limits.max_pending_connections must be at least 1",
        ),
        (
            "limits:\n  max_connections: 0\n",
            "limits.max_connections must be at least 1",
        ),
        (
            "limits:\n  max_tool_calls_per_round: 0\n",
            "limits.max_tool_calls_per_round must be at least 1",
        ),
        (
            "limits:\n  max_steps: 0\n",
            "limits.max_steps must be at least 1",
        ),
        (
            "limits:\n  max_total_tokens: 0\n",
            "limits.max_total_tokens must be at least 1",
        ),
        (
            "limits:\n  async_hook_queue: 0\n",
            "limits.async_hook_queue must be at least 1",
        ),
        (
            "limits:\n  async_hook_queue_per_connection: 0\n",
            "limits.async_hook_queue_per_connection must be at least 1",
        ),
        (
            "context:\n  window_tokens: 0\n",
            "context.window_tokens must be at least 1",
        ),
        (
            "context:\n  micro_keep_rounds: 0\n",
            "context.micro_keep_rounds must be at least 1",
        ),
        (
            "context:\n  micro_threshold: 0\n",
            "context.micro_threshold must be a fraction of the window above 0 and at most 1, got \"0\"",
        ),
        (
            "context:\n  compact_threshold: 1.5\n",
            "context.compact_threshold must be a fraction of the window above 0 and at most 1, got \"1.5\"",
        ),
        (
            "planning:\n  marker: '  '\n",
            "planning.marker must not be empty",
        ),
    ];
    for (yaml, shown) in cases {
        let error = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap_err();
        assert_eq!(error.to_string(), shown);
        assert!(error.setting().is_some_and(|s| shown.starts_with(s)));
    }
}

#[test]
fn file_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let error = Config::read_file(&missing).unwrap_err();
    assert!(matches!(error, ConfigError::Read { .. }), "{error:?}");
    assert!(error
        .to_string()
        .starts_with(&format!("cannot read config file {}: ", missing.display())));
    let typo = dir.path().join("typo.yaml");
    std::fs::write(&typo, "modle: x\n").unwrap();
    let error = Config::read_file(&typo).unwrap_err();
    assert!(matches!(error, ConfigError::Parse { .. }), "{error:?}");
    let shown = error.to_string();
    assert!(
        shown.starts_with(&format!(
            "config file {}:1: unknown field `modle`, expected one of",
            typo.display()
        )) && shown.ends_with("; did you mean `model`?")
            && !shown.contains('\n')
            && !shown.contains("<input>"),
        "{shown}"
    );
    // The mode written where the texts go: said where it belongs.
    std::fs::write(&typo, "planning: native\n").unwrap();
    let shown = Config::read_file(&typo).unwrap_err().to_string();
    assert!(
        shown.contains(":1: the top-level `planning:` holds the planning call's texts")
            && shown.contains("`agent: {planning: native}`"),
        "{shown}"
    );
    std::fs::write(&typo, "planning:\n  marker: '[GO]'\n").unwrap();
    assert_eq!(
        Config::read_file(&typo).unwrap().planning.marker.as_deref(),
        Some("[GO]")
    );
    std::fs::write(&typo, "model: x\nupstream:\n  retires: 3\n").unwrap();
    let shown = Config::read_file(&typo).unwrap_err().to_string();
    assert!(
        shown.starts_with(&format!(
            "config file {}:3: unknown field `retires`",
            typo.display()
        )) && shown.ends_with("; did you mean `retries`?"),
        "{shown}"
    );
    assert_eq!(error.setting(), None);
}

#[test]
fn mcp_servers_are_read_and_checked_by_name() {
    let yaml = "mcp_servers:\n\
                \x20 fs:\n    command: npx\n    args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv']\n\
                \x20   env: {TOKEN: '${FS_TOKEN}'}\n    timeout_seconds: 30\n    auto_approve: [read_text_file]\n\
                \x20 remote:\n    type: http\n    url: https://mcp.example/mcp\n    headers: {Authorization: 'Bearer x'}\n    enabled: false\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap();
    let [fs, remote] = config.mcp_servers.as_slice() else {
        panic!("{:?}", config.mcp_servers)
    };
    assert_eq!(fs.name, "fs");
    assert_eq!(fs.timeout, Some(Duration::from_secs(30)));
    assert!(fs.enabled);
    assert!(fs.auto_approves("read_text_file", "mcp__fs__read_text_file"));
    assert!(!fs.auto_approves("write_file", "mcp__fs__write_file"));
    assert!(matches!(
        &fs.transport,
        crate::mcp::McpTransport::Stdio { command, args, env, .. }
            if command == "npx" && args.len() == 3 && env["TOKEN"] == "${FS_TOKEN}"
    ));
    assert_eq!(remote.origin, crate::mcp::McpOrigin::Config);
    assert!(!remote.enabled);
    assert!(
        matches!(&remote.transport, crate::mcp::McpTransport::Http { url, .. } if url == "https://mcp.example/mcp")
    );

    for (yaml, message) in [
        (
            "mcp_servers: {a: {command: x, url: 'http://h/mcp'}}",
            "mcp_servers.a: give `command` or `url`, not both",
        ),
        (
            "mcp_servers: {a: {}}",
            "mcp_servers.a: give `command` (a stdio server) or `url` (streamable HTTP)",
        ),
        (
            "mcp_servers: {a: {url: 'ftp://h/x'}}",
            "mcp_servers.a: url \"ftp://h/x\" is not an absolute http:// or https:// URL",
        ),
        ("mcp_servers: {a__b: {command: x}}", "may not contain `__`"),
        (
            "mcp_servers: {a.b: {command: x}}",
            "must be letters, digits, `_` and `-`",
        ),
        (
            "mcp_servers: {a: {command: x, timeout_seconds: 0}}",
            "mcp_servers.a: mcp_servers.timeout_seconds must be a positive number of seconds",
        ),
        (
            "mcp_servers: {a: {type: sse, url: 'http://h/sse'}}",
            "the legacy SSE transport is not supported",
        ),
        (
            "mcp_servers: {a: {command: x, headers: {X: y}}}",
            "`headers` are for an HTTP server",
        ),
        (
            "mcp_servers: {a: {url: 'http://h/mcp', headers: {Accept: y}}}",
            "the header Accept is set by the MCP transport itself",
        ),
    ] {
        let error = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap_err();
        assert!(error.to_string().contains(message), "{yaml}: {error}");
        assert_eq!(error.setting(), Some("mcp_servers"));
    }
}

#[test]
fn planning_is_read_from_the_flag_or_the_file() {
    use crate::agent::Planning;
    let defaults = Config::resolve(&CliSettings::default(), file(""), no_env).unwrap();
    assert_eq!(defaults.agent.planning, Planning::Marker);
    let native = Config::resolve(
        &CliSettings::default(),
        file("agent: {planning: native}\nplanning: {native_prompt: P}\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(native.agent.planning, Planning::Native);
    assert_eq!(native.agent.native_planning_prompt, "P");
    let cli = CliSettings {
        planning: Some(PlanningSetting::Off),
        ..Default::default()
    };
    let off = Config::resolve(&cli, file("agent: {planning: native}\n"), no_env).unwrap();
    assert_eq!(off.agent.planning, Planning::Off);
}

#[test]
fn the_address_is_a_host_and_a_port_of_16_bits() {
    for good in [
        "127.0.0.1:8080",
        "0.0.0.0:0",
        "[::1]:8080",
        "localhost:65535",
    ] {
        assert!(super::check_addr(good).is_ok(), "{good}");
    }
    for bad in [
        "127.0.0.1:99999",
        "127.0.0.1",
        ":8080",
        "::1:8080",
        "127.0.0.1:http",
    ] {
        let error = super::check_addr(bad).unwrap_err().to_string();
        assert!(
            error.starts_with("addr must be host:port"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn quotas_shared_state_and_tenants_are_read_and_checked() {
    let defaults = Config::resolve(&CliSettings::default(), file(""), no_env).unwrap();
    assert!(defaults.quotas.per_user.is_unlimited() && defaults.quotas.shared_state.is_none());
    let yaml = "auth:\n  jwt:\n    issuer: https://login.example\n    audience: hw\n    tenant_claim: org\n\
                quotas:\n  per_user: {tokens_per_day: 100, concurrent_chats: 2}\n\
                shared_state: redis://127.0.0.1:6379/0\nshared_state_fail_closed: true\n\
                tenants:\n  acme:\n    skills: [a]\n    tools: [read_file]\n    quotas:\n      per_user: {}\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap();
    assert_eq!(config.quotas.per_user.tokens_per_day, Some(100));
    assert_eq!(config.quotas.per_user.concurrent_chats, Some(2));
    assert!(config.quotas.fail_closed);
    let acme = &config.tenants["acme"];
    assert_eq!(acme.tools.as_deref(), Some(&["read_file".to_string()][..]));
    assert_eq!(acme.per_user, Some(crate::quota::Limits::default()));
    let env =
        |name: &str| (name == "HOOKWIRE_SHARED_STATE").then(|| "valkey://cache:6379".to_string());
    let config = Config::resolve(&CliSettings::default(), file(yaml), env).unwrap();
    assert_eq!(
        config.quotas.shared_state.as_deref(),
        Some("valkey://cache:6379")
    );

    let refused =
        |yaml: &str| Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap_err();
    let tls = refused("shared_state: rediss://user:hunter2@cache:6380\n");
    assert_eq!(tls.setting(), Some("shared_state"));
    assert!(!tls.to_string().contains("hunter2"), "{tls}");
    assert_eq!(
        refused("shared_state_fail_closed: true\n").setting(),
        Some("shared_state_fail_closed")
    );
    assert_eq!(
        refused("tenants:\n  acme: {tools: []}\n").setting(),
        Some("tenants")
    );
    let misspelt = serde_saphyr::from_str::<FileConfig>("quotas:\n  per_user: {tokens_a_day: 1}\n");
    assert!(misspelt.unwrap_err().to_string().contains("tokens_per_day"));
}

#[test]
fn hooks_is_a_path_or_a_section_with_the_recording() {
    let config = Config::resolve(
        &CliSettings::default(),
        file("hooks: /etc/h.yaml\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(config.hooks_file, Some(PathBuf::from("/etc/h.yaml")));
    assert_eq!(config.hook_record, None);
    let yaml = "hooks:\n  file: /etc/h.yaml\n  record:\n    dir: /var/rec\n    sample: 0.5\n    keep_files: 3\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), no_env).unwrap();
    assert_eq!(config.hooks_file, Some(PathBuf::from("/etc/h.yaml")));
    let record = config.hook_record.unwrap();
    assert_eq!(record.dir, PathBuf::from("/var/rec"));
    assert_eq!((record.sample, record.keep_files), (0.5, 3));
    assert_eq!(
        record.max_bytes,
        crate::hooks::record::RecordSettings::DEFAULT_MAX_BYTES
    );
    let env = |name: &str| (name == "HOOKWIRE_HOOK_RECORD_DIR").then(|| "/tmp/rec".to_string());
    let config = Config::resolve(&CliSettings::default(), file(""), env).unwrap();
    assert_eq!(config.hook_record.unwrap().dir, PathBuf::from("/tmp/rec"));
    let refused = Config::resolve(
        &CliSettings::default(),
        file("hooks:\n  record: {dir: /r, sample: 2}\n"),
        no_env,
    )
    .unwrap_err();
    assert_eq!(refused.setting(), Some("hooks.record.sample"));
}
