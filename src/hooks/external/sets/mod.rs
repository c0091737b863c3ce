//! The hook sets a chat runs: the server's hook files ([`files`]: as last loaded, reloaded when
//! they really change, a snapshot per chat, and per WebSocket session what its `session_start`
//! hooks left), and the hooks the model registers ([`registered`]: governed, signed, expiring;
//! [`register_hook`] is the tool it registers them with). Each is a `HookFactory`; the hooks of
//! a set run through `run`'s adapter.

pub(crate) mod files;
pub(crate) mod register_hook;
pub(crate) mod registered;
pub(crate) mod tenants;

pub(crate) use files::HookFiles;
pub(crate) use register_hook::RegisterHook;
pub(crate) use registered::{RegisteredHookRules, RegisteredHooks};
pub(crate) use tenants::TenantHooks;
