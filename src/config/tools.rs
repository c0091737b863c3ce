//! What the tools may do: which wait for approval (`tools.require_approval`, `approval:`) and the
//! MCP servers that add tools (`mcp_servers:`).

use std::collections::BTreeMap;

use super::values::seconds;
use super::{file, ConfigError, McpServerFile};
use crate::agent::ApprovalSettings;
use crate::mcp::{McpOrigin, McpServerSettings, McpServerSpec};

/// `tools.require_approval` and `approval:`.
pub(super) fn approval_settings(
    tools: file::ToolsFile,
    approval: file::ApprovalFile,
) -> Result<ApprovalSettings, ConfigError> {
    let defaults = ApprovalSettings::default();
    let mut settings = ApprovalSettings {
        require_approval: tools
            .require_approval
            .map(file::OneOrMany::into_vec)
            .unwrap_or(defaults.require_approval),
        ..ApprovalSettings::default()
    };
    if let Some(empty) = settings
        .require_approval
        .iter()
        .find(|n| n.trim().is_empty())
    {
        return Err(ConfigError::Invalid {
            setting: "tools.require_approval",
            expected: "tool names, or \"*\" for every tool",
            value: format!("{empty:?}"),
        });
    }
    settings.ttl = match approval.ttl_seconds {
        Some(v) => seconds("approval.ttl_seconds", v)?,
        None => defaults.ttl,
    };
    Ok(settings)
}

/// `mcp_servers:`: each entry checked as a server (one transport and its keys, a name that fits
/// in tool names, a positive timeout).
pub(super) fn mcp_servers(
    entries: BTreeMap<String, McpServerFile>,
) -> Result<Vec<McpServerSettings>, ConfigError> {
    let mut servers = Vec::new();
    for (name, entry) in entries {
        let fail = |reason: String| ConfigError::McpServer {
            name: name.clone(),
            reason,
        };
        let timeout = match entry.timeout_seconds {
            Some(value) => Some(
                seconds("mcp_servers.timeout_seconds", value).map_err(|e| fail(e.to_string()))?,
            ),
            None => None,
        };
        let spec = McpServerSpec {
            kind: entry.kind,
            command: entry.command,
            args: entry.args,
            env: entry.env,
            cwd: entry.cwd,
            url: entry.url,
            headers: entry.headers,
            enabled: entry.enabled,
            timeout,
            auto_approve: entry.auto_approve,
        };
        servers.push(
            McpServerSettings::new(&name, spec, McpOrigin::Config)
                .map_err(|error| fail(error.to_string()))?,
        );
    }
    Ok(servers)
}
