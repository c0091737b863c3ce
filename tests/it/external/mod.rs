//! External hooks from hook files: real subprocesses, a real HTTP hook server, the fake
//! upstream. By topic: what each event's hooks get and do (`events`), an event's chain
//! (`chains`), the handlers besides commands (`handlers`), the OpenHarness format
//! (`openharness`), where hooks come from (`files`).

mod chains;
mod events;
mod files;
mod handlers;
mod openharness;

use crate::agent::workspace;
use crate::common::*;

/// A server whose server-level hook file is `server_yaml` and workspace-level one is
/// `workspace_yaml`; `scripts` are written into the workspace, executable.
fn server_with_hooks<'a>(
    upstream: &'a FakeUpstream,
    server_yaml: &str,
    workspace_yaml: Option<&str>,
    scripts: &[(&str, &str)],
) -> TestServerBuilder<'a> {
    let mut builder = TestServer::builder()
        .workspace(workspace())
        .upstream(upstream)
        .hooks(server_yaml)
        // The workspace is the test's own (docs/protocol.md §8).
        .trust_workspace_hooks();
    for (name, body) in scripts {
        builder = builder.script(name, *body);
    }
    if let Some(yaml) = workspace_yaml {
        builder = builder.file(".hookwire/hooks.yaml", yaml);
    }
    builder
}

/// Whether the process `pid` (as written to a file) runs: it exists and is not a zombie.
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
        .is_ok_and(|stat| !stat.contains(") Z "))
}
