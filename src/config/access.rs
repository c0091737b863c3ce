//! Who may do what: the secret, the tokens, trust in workspace files and where it is kept, session
//! hooks (`register_hook`), the URLs http hooks may call.

use std::path::PathBuf;
use std::time::Duration;

use super::values::{boolean, seconds};
use super::{ConfigError, FileConfig, SessionHooksFile};

/// What the model may do with `register_hook` (README "Security model").
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHookSettings {
    /// `false` removes the `register_hook` tool.
    pub enabled: bool,
    /// How long a registered hook stays valid (its `expires_at`, covered by the signature).
    pub ttl: Duration,
    /// Session hooks one chat runs at most; more are ignored with a notice.
    pub max_per_chat: usize,
}

impl Default for SessionHookSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            ttl: Duration::from_secs(24 * 60 * 60),
            max_per_chat: 16,
        }
    }
}

impl SessionHookSettings {
    fn resolve(file: &SessionHooksFile) -> Result<Self, ConfigError> {
        let defaults = SessionHookSettings::default();
        Ok(SessionHookSettings {
            enabled: file.enabled.unwrap_or(defaults.enabled),
            ttl: file
                .ttl_seconds
                .map(|v| seconds("session_hooks.ttl_seconds", v))
                .transpose()?
                .unwrap_or(defaults.ttl),
            max_per_chat: file.max_per_chat.unwrap_or(defaults.max_per_chat),
        })
    }
}

/// The secrets and the trust settings, resolved together: some are unsafe only together.
pub(super) struct Access {
    pub(super) secret: Option<String>,
    pub(super) allow_session_command_hooks: bool,
    pub(super) trust_workspace_hooks: bool,
    pub(super) state_dir: Option<PathBuf>,
    pub(super) session_hooks: SessionHookSettings,
    pub(super) auth_token: Option<String>,
    pub(super) admin_token: Option<String>,
}

impl Access {
    /// `raw_env` gives variables as set (an empty secret or token must be seen to be refused);
    /// `env` counts an empty one as unset.
    pub(super) fn resolve(
        file: &FileConfig,
        raw_env: &impl Fn(&str) -> Option<String>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let secret = raw_env("HOOKWIRE_SECRET").or(file.secret.clone());
        // Only whitespace is as good as none (a quoted blank in a unit file): refused too.
        if secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(ConfigError::Empty { setting: "secret" });
        }
        let allow_session_command_hooks = file.allow_session_command_hooks.unwrap_or(false);
        if allow_session_command_hooks && secret.is_none() {
            return Err(ConfigError::Unsafe(
                "allow_session_command_hooks needs a secret (HOOKWIRE_SECRET): without one any \
                 client could send a command hook of its own and run it",
            ));
        }
        let trust_workspace_hooks = match env("HOOKWIRE_TRUST_WORKSPACE_HOOKS") {
            Some(value) => boolean("HOOKWIRE_TRUST_WORKSPACE_HOOKS", &value)?,
            None => file.trust_workspace_hooks.unwrap_or(false),
        };
        let state_dir = env("HOOKWIRE_STATE_DIR")
            .map(PathBuf::from)
            .or(file.state_dir.clone())
            .or_else(|| env("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("hookwire")))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/state/hookwire")));
        let session_hooks = SessionHookSettings::resolve(&file.session_hooks)?;
        // Raw, like the secret: `HOOKWIRE_AUTH_TOKEN=""` (an unset shell variable) must not
        // quietly turn authentication off.
        let auth_token = token(
            raw_env,
            "HOOKWIRE_AUTH_TOKEN",
            &file.auth_token,
            "auth_token",
        )?;
        let admin_token = token(
            raw_env,
            "HOOKWIRE_ADMIN_TOKEN",
            &file.admin_token,
            "admin_token",
        )?;
        Ok(Access {
            secret,
            allow_session_command_hooks,
            trust_workspace_hooks,
            state_dir,
            session_hooks,
            auth_token,
            admin_token,
        })
    }
}

/// A bearer token from its variable, else the file; a blank one is refused.
fn token(
    raw_env: &impl Fn(&str) -> Option<String>,
    variable: &str,
    from_file: &Option<String>,
    setting: &'static str,
) -> Result<Option<String>, ConfigError> {
    let token = raw_env(variable).or(from_file.clone());
    if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ConfigError::Empty { setting });
    }
    Ok(token)
}

/// `http_hooks.allowed_urls`: each entry an absolute http(s) URL, so a typo is an error at start
/// rather than an entry that silently allows nothing.
pub(super) fn allowed_urls(entries: Vec<String>) -> Result<Vec<String>, ConfigError> {
    for entry in &entries {
        let parsed = reqwest::Url::parse(entry);
        if !matches!(&parsed, Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host())
        {
            return Err(ConfigError::Invalid {
                setting: "http_hooks.allowed_urls",
                expected: "absolute http:// or https:// URLs",
                value: entry.clone(),
            });
        }
    }
    Ok(entries)
}
