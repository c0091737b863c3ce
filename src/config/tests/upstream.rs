//! The model's settings: provider, base URL and key, layout, retries.

use super::*;
use crate::llm::MessageStyle;

#[test]
fn openai_env_is_the_fallback_for_base_url_and_key() {
    let env = |name: &str| match name {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:1/v1".to_string()),
        "OPENAI_API_KEY" => Some("sk-env".to_string()),
        _ => None,
    };
    let config = Config::resolve(
        &CliSettings::default(),
        file("llm_base_url: http://file/v1\n"),
        env,
    )
    .unwrap();
    assert_eq!(
        config.llm.base_url.as_deref(),
        Some("http://127.0.0.1:1/v1")
    );
    assert_eq!(config.llm.api_key.as_deref(), Some("sk-env"));
    let cli = CliSettings {
        llm_base_url: Some("http://flag/v1".into()),
        ..Default::default()
    };
    let config = Config::resolve(&cli, FileConfig::default(), env).unwrap();
    assert_eq!(config.llm.base_url.as_deref(), Some("http://flag/v1"));
}

#[test]
fn key_without_url_means_openai() {
    let cli = CliSettings {
        llm_api_key: Some("sk".into()),
        ..Default::default()
    };
    let config = Config::resolve(&cli, FileConfig::default(), no_env).unwrap();
    assert!(!config.llm.is_demo());
    assert_eq!(
        config.llm.effective_base_url().as_deref(),
        Some("https://api.openai.com/v1")
    );
}

#[test]
fn upstream_defaults_are_openai_with_the_auto_layout() {
    let config = Config::resolve(&CliSettings::default(), FileConfig::default(), no_env).unwrap();
    assert_eq!(config.llm.provider, Provider::Openai);
    assert_eq!(config.llm.message_style, MessageStyleSetting::Auto);
    assert_eq!(config.llm.message_style(), MessageStyle::OpenAi);
    assert!(config.llm.system_role);
    assert_eq!(config.llm.max_tokens, DEFAULT_MAX_TOKENS);
}

#[test]
fn message_style_auto_follows_the_base_url() {
    let resolve = |url: Option<&str>, yaml: &str| {
        let cli = CliSettings {
            llm_base_url: url.map(String::from),
            llm_api_key: Some("k".into()),
            ..Default::default()
        };
        Config::resolve(&cli, file(yaml), no_env).unwrap().llm
    };
    let auto = "upstream: {message_style: auto}\n";
    assert_eq!(resolve(None, auto).message_style(), MessageStyle::OpenAi);
    assert_eq!(
        resolve(Some("http://127.0.0.1:8000/v1"), auto).message_style(),
        MessageStyle::Strict { system_role: true }
    );
    let gemma = "upstream: {message_style: auto, system_role: false}\n";
    assert_eq!(
        resolve(Some("http://127.0.0.1:11434/v1"), gemma).message_style(),
        MessageStyle::Strict { system_role: false }
    );
    assert_eq!(
        resolve(None, "upstream: {message_style: strict}\n").message_style(),
        MessageStyle::Strict { system_role: true },
        "strict is strict even for OpenAI's API"
    );
}

#[test]
fn upstream_settings_are_checked() {
    let error = |yaml: &str| {
        Config::resolve(&CliSettings::default(), file(yaml), no_env)
            .map(|_| ())
            .unwrap_err()
    };
    let wrong = error("upstream: {message_style: openai, system_role: false}\n");
    assert_eq!(wrong.setting(), Some("upstream.system_role"));
    assert!(wrong.to_string().contains("strict"), "{wrong}");
    assert_eq!(
        error("upstream: {message_style: strict, max_tokens: 0}\n").setting(),
        Some("upstream.max_tokens")
    );
    let options = serde_saphyr::options! { strict_booleans: true };
    let unknown: Result<FileConfig, _> =
        serde_saphyr::from_str_with_options("upstream: {message_style: loose}\n", options);
    assert!(unknown.is_err());
    // Anthropic named with neither key nor URL: an error, not the demo model, that says what
    // to set.
    let missing = error("upstream: {provider: anthropic}\n");
    assert_eq!(missing.setting(), Some("provider"));
    assert!(
        missing
            .to_string()
            .starts_with("provider anthropic needs an API key: set ANTHROPIC_API_KEY"),
        "{missing}"
    );
}

#[test]
fn an_anthropic_key_alone_selects_anthropic() {
    let only_anthropic = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant".to_string());
    let config = Config::resolve(&CliSettings::default(), file(""), only_anthropic).unwrap();
    assert_eq!(config.llm.provider, Provider::Anthropic);
    assert_eq!(config.llm.api_key.as_deref(), Some("sk-ant"));
    assert_eq!(config.agent.model, DEFAULT_ANTHROPIC_MODEL);
    // Any OpenAI setting keeps OpenAI (the default provider) in charge.
    let both = |name: &str| match name {
        "ANTHROPIC_API_KEY" => Some("sk-ant".to_string()),
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
        _ => None,
    };
    let config = Config::resolve(&CliSettings::default(), file(""), both).unwrap();
    assert_eq!(config.llm.provider, Provider::Openai);
    let flag = CliSettings {
        llm_base_url: Some("http://127.0.0.1:9/v1".into()),
        ..Default::default()
    };
    let config = Config::resolve(&flag, file(""), only_anthropic).unwrap();
    assert_eq!(config.llm.provider, Provider::Openai);
    // An empty key is no key.
    let empty = |name: &str| (name == "ANTHROPIC_API_KEY").then(String::new);
    let config = Config::resolve(&CliSettings::default(), file(""), empty).unwrap();
    assert!(config.llm.is_demo());
}

#[test]
fn the_message_style_flag_wins_over_the_file() {
    let cli = CliSettings {
        llm_base_url: Some("http://127.0.0.1:9/v1".into()),
        message_style: Some(MessageStyleSetting::Openai),
        ..Default::default()
    };
    let config =
        Config::resolve(&cli, file("upstream: {message_style: strict}\n"), no_env).unwrap();
    assert_eq!(config.llm.message_style(), MessageStyle::OpenAi);
    let cli = CliSettings {
        llm_base_url: Some("http://127.0.0.1:9/v1".into()),
        ..Default::default()
    };
    let config = Config::resolve(&cli, file(""), no_env).unwrap();
    assert_eq!(
        config.llm.message_style(),
        MessageStyle::Strict { system_role: true },
        "a local server gets the strict layout by default"
    );
}

#[test]
fn anthropic_reads_its_own_variables() {
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some("sk-openai".to_string()),
        "OPENAI_BASE_URL" => Some("http://openai.local/v1".to_string()),
        "ANTHROPIC_API_KEY" => Some("sk-ant".to_string()),
        _ => None,
    };
    let cli = CliSettings {
        provider: Some(Provider::Anthropic),
        ..Default::default()
    };
    let config = Config::resolve(&cli, FileConfig::default(), env).unwrap();
    assert_eq!(config.llm.provider, Provider::Anthropic);
    assert_eq!(config.llm.api_key.as_deref(), Some("sk-ant"));
    assert_eq!(
        config.llm.base_url, None,
        "OPENAI_BASE_URL is not Anthropic's"
    );
    assert_eq!(
        config.llm.effective_base_url().as_deref(),
        Some(ANTHROPIC_BASE_URL)
    );
    assert_eq!(config.agent.model, DEFAULT_ANTHROPIC_MODEL);
    let with_url = |name: &str| match name {
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9/".to_string()),
        _ => None,
    };
    let yaml = "model: claude-haiku-4-5\nupstream: {provider: anthropic, max_tokens: 1000}\n";
    let config = Config::resolve(&CliSettings::default(), file(yaml), with_url).unwrap();
    assert_eq!(config.llm.provider, Provider::Anthropic);
    assert_eq!(config.llm.base_url.as_deref(), Some("http://127.0.0.1:9/"));
    assert_eq!(config.llm.max_tokens, 1000);
    assert_eq!(config.agent.model, "claude-haiku-4-5");
    // The flag wins over the file.
    let cli = CliSettings {
        provider: Some(Provider::Openai),
        llm_api_key: Some("k".into()),
        ..Default::default()
    };
    let config = Config::resolve(&cli, file(yaml), no_env).unwrap();
    assert_eq!(config.llm.provider, Provider::Openai);
}

#[test]
fn retries_and_fallbacks_are_read() {
    let defaults = Config::resolve(&CliSettings::default(), file(""), no_env).unwrap();
    assert_eq!(defaults.agent.retry, crate::agent::RetryPolicy::default());
    assert_eq!(defaults.agent.retry.retries, 2);
    assert_eq!(defaults.agent.retry.max_wait, Duration::from_secs(20));
    let config = Config::resolve(
        &CliSettings::default(),
        file("upstream:\n  retries: 5\n  max_retry_wait_seconds: 3\n  fallback_models: [a, b]\n"),
        no_env,
    )
    .unwrap();
    assert_eq!(config.agent.retry.retries, 5);
    assert_eq!(config.agent.retry.max_wait, Duration::from_secs(3));
    assert_eq!(config.agent.retry.fallback_models, ["a", "b"]);
    let error = Config::resolve(
        &CliSettings::default(),
        file("upstream: {fallback_models: [\"\"]}\n"),
        no_env,
    )
    .unwrap_err();
    assert_eq!(error.setting(), Some("upstream.fallback_models"));
}
