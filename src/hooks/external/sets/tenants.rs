//! [`TenantHooks`]: the hook files of each listed tenant (`tenants.<name>.hooks`,
//! docs/protocol.md §20), which apply to the chats of that tenant's people besides the server's.
//! They are loaded under the same trust rules as the server's: a file inside the workspace is a
//! workspace file, which runs only once trusted.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::HookFiles;
use crate::hooks::{AgentHook, HookFactory};
use crate::types::{ChatError, ChatRequest};

/// Each tenant's hook files, by tenant name.
pub(crate) struct TenantHooks {
    tenants: BTreeMap<String, Arc<HookFiles>>,
}

impl TenantHooks {
    pub(crate) fn new(tenants: BTreeMap<String, Arc<HookFiles>>) -> Self {
        Self { tenants }
    }
}

impl HookFactory for TenantHooks {
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError> {
        let tenant = request.person.as_ref().and_then(|p| p.tenant.as_ref());
        match tenant.and_then(|tenant| self.tenants.get(tenant)) {
            Some(files) => files.hooks_for(request),
            None => Ok(Vec::new()),
        }
    }
}
