//! `quotas:`, `shared_state:` and `tenants:` (docs/protocol.md §20): what one person and one
//! tenant may spend, where the counters live, and what each tenant's people get. Only the
//! settings live here; `crate::quota` counts, the agent and the skills apply the tenants.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::values::boolean;
use super::ConfigError;
use crate::quota::Limits;

/// `quotas:` as written (also a tenant's overrides).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotasFile {
    pub per_user: Option<Limits>,
    pub per_tenant: Option<Limits>,
}

/// One of `tenants:` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantFile {
    /// The skills its people get (and the only ones a chat may name); unset = the defaults.
    pub skills: Option<Vec<String>>,
    /// Hook files that apply to its people's chats besides the server's.
    #[serde(default)]
    pub hooks: Vec<PathBuf>,
    /// The tools its people's model is offered (an allowlist); unset = every tool.
    pub tools: Option<Vec<String>>,
    /// Replaces `quotas.per_user` / `quotas.per_tenant` for it (each block whole; `{}` = none).
    #[serde(default)]
    pub quotas: QuotasFile,
}

/// `quotas:` and `shared_state:`, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaSettings {
    /// What each person may spend (without sign-in, the static token's holder is one person).
    pub per_user: Limits,
    /// What the people of one tenant may spend together.
    pub per_tenant: Limits,
    /// `redis://host:port/db` (or `valkey://`, `redis+unix://`): counters every replica shares;
    /// `None` = in this process.
    pub shared_state: Option<String>,
    /// When the shared state cannot be reached: refuse chats (`unavailable`) instead of counting
    /// in memory.
    pub fail_closed: bool,
}

/// One tenant's policy, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tenant {
    pub skills: Option<Vec<String>>,
    pub hooks: Vec<PathBuf>,
    pub tools: Option<Vec<String>>,
    pub per_user: Option<Limits>,
    pub per_tenant: Option<Limits>,
}

impl QuotaSettings {
    /// From the file and `HOOKWIRE_SHARED_STATE` / `HOOKWIRE_SHARED_STATE_FAIL_CLOSED`.
    pub(super) fn resolve(
        quotas: QuotasFile,
        shared_state: Option<String>,
        fail_closed: Option<bool>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let shared_state = env("HOOKWIRE_SHARED_STATE").or(shared_state);
        if let Some(url) = &shared_state {
            check_shared_state(url)?;
        }
        let fail_closed = match env("HOOKWIRE_SHARED_STATE_FAIL_CLOSED") {
            Some(value) => boolean("HOOKWIRE_SHARED_STATE_FAIL_CLOSED", &value)?,
            None => fail_closed.unwrap_or(false),
        };
        if fail_closed && shared_state.is_none() {
            return Err(ConfigError::Missing {
                setting: "shared_state_fail_closed",
                what: "shared_state_fail_closed needs shared_state (the counters are in memory \
                       without it, which cannot fail)",
            });
        }
        Ok(QuotaSettings {
            per_user: quotas.per_user.unwrap_or_default(),
            per_tenant: quotas.per_tenant.unwrap_or_default(),
            shared_state,
            fail_closed,
        })
    }
}

/// The schemes the Redis client speaks here; the URL itself is never quoted back (it may hold
/// a password).
fn check_shared_state(url: &str) -> Result<(), ConfigError> {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    match scheme {
        "redis" | "valkey" | "redis+unix" | "valkey+unix" | "unix" => Ok(()),
        "rediss" | "valkeys" => Err(ConfigError::Invalid {
            setting: "shared_state",
            expected: "redis:// or valkey:// (TLS to Redis is not built in: reach it over a \
                       private network or a local TLS tunnel)",
            value: format!("{scheme}://…"),
        }),
        _ => Err(ConfigError::Invalid {
            setting: "shared_state",
            expected: "a redis://host:port/db or valkey://host:port/db URL",
            value: format!("{scheme}://…"),
        }),
    }
}

/// `tenants:`, resolved: names are the tenant claim's values, compared as written; they need
/// `auth.jwt.tenant_claim`.
pub(super) fn tenants(
    file: BTreeMap<String, TenantFile>,
    jwt: Option<&super::JwtSettings>,
) -> Result<BTreeMap<String, Tenant>, ConfigError> {
    if !file.is_empty() && jwt.and_then(|jwt| jwt.tenant_claim.as_ref()).is_none() {
        return Err(ConfigError::Missing {
            setting: "tenants",
            what: "tenants needs auth.jwt.tenant_claim: the token's claim that names a \
                   person's tenant",
        });
    }
    let mut tenants = BTreeMap::new();
    for (name, tenant) in file {
        if name.trim().is_empty() {
            return Err(ConfigError::Empty {
                setting: "tenants.<name>",
            });
        }
        tenants.insert(
            name,
            Tenant {
                skills: tenant.skills,
                hooks: tenant.hooks,
                tools: tenant.tools,
                per_user: tenant.quotas.per_user,
                per_tenant: tenant.quotas.per_tenant,
            },
        );
    }
    Ok(tenants)
}
