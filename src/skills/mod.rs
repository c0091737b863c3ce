//! Skills: folders in the skills dir, each with an optional `SKILL.md` (front matter `name`,
//! `description`) and optional prompt hooks in `hooks/hooks.json` + `hooks/*.md`.
//!
//! [`scan_skills`] reads everything once; chats never touch the disk. A skill whose `hooks.json`
//! has an error loads none of its hooks and carries the errors instead; other skills are
//! unaffected. [`SkillRegistry`] holds the current set and swaps it on reload (see [`watch`]).

mod load;
pub(crate) mod watch;

pub(crate) use load::scan_skills;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) use crate::hooks::prompt::{HookSpec, Timing};
use crate::hooks::signing::SigningKey;
use crate::reload::Swappable;
use crate::types::Problem;

/// A loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skill {
    /// The folder name; what chats name in `skills`.
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) dir: PathBuf,
    /// Empty when `errors` is not. Shared by every chat that enables the skill.
    pub(crate) hooks: Vec<std::sync::Arc<HookSpec>>,
    /// Problems that kept the hooks from loading (all [`Severity::Error`](crate::types::Severity)).
    pub(crate) errors: Vec<Problem>,
    /// Problems that did not, e.g. `tool_filter` on a timing that ignores it (all warnings).
    pub(crate) warnings: Vec<Problem>,
}

/// Every skill of the skills dir, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SkillSet {
    pub(crate) skills: BTreeMap<String, Arc<Skill>>,
    /// Problems with the skills dir itself.
    pub(crate) errors: Vec<Problem>,
}

impl SkillSet {
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.get(name)
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.skills.keys().cloned().collect()
    }

    /// Every problem, errors and warnings: the dir's, then each skill's.
    pub(crate) fn problems(&self) -> Vec<Problem> {
        let mut problems = self.errors.clone();
        for skill in self.skills.values() {
            problems.extend(skill.errors.iter().cloned());
            problems.extend(skill.warnings.iter().cloned());
        }
        problems
    }

    /// `next`, except that a skill that broke keeps its last good hooks (and shows the errors).
    /// A broken skill's hooks in `self` are already its last good ones (or none, if it never
    /// loaded), so they carry over however many broken reloads follow.
    pub(crate) fn merge_reload(&self, mut next: SkillSet) -> SkillSet {
        for (name, skill) in next.skills.iter_mut() {
            if skill.errors.is_empty() {
                continue;
            }
            if let Some(previous) = self.skills.get(name) {
                let mut kept = (**skill).clone();
                kept.hooks = previous.hooks.clone();
                *skill = Arc::new(kept);
            }
        }
        next
    }
}

/// The current skills, shared by the server and every chat; swapped whole on reload.
#[derive(Debug)]
pub(crate) struct SkillRegistry {
    dir: PathBuf,
    current: Swappable<SkillSet>,
}

impl SkillRegistry {
    /// Scans `dir` once.
    pub(crate) fn load(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let set = scan_skills(&dir);
        Self {
            dir,
            current: Swappable::new(set),
        }
    }

    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The skills as they are now.
    pub(crate) fn current(&self) -> Arc<SkillSet> {
        self.current.current()
    }

    /// How many reloads swapped the set since the start (0 for a server nobody edited).
    pub(crate) fn generation(&self) -> u64 {
        self.current.generation()
    }

    /// Scans the dir again; broken skills keep their last good hooks. Returns the new set.
    pub(crate) fn reload(&self) -> Arc<SkillSet> {
        let next = scan_skills(&self.dir);
        self.current
            .update(|current| (Some(current.merge_reload(next)), ()));
        self.current.current()
    }
}

/// Makes each chat's [`PromptHookManager`](crate::hooks::prompt::PromptHookManager) from the
/// current skills: the chat's `skills`, else the configured defaults, else every skill.
pub(crate) struct SkillHookFactory {
    registry: Arc<SkillRegistry>,
    default_skills: Option<Vec<String>>,
    /// Signs the persistent hook messages of every chat.
    key: Option<SigningKey>,
    /// `tenants.<name>.skills`: the only skills a listed tenant's people get.
    tenants: std::collections::BTreeMap<String, Vec<String>>,
}

impl SkillHookFactory {
    pub(crate) fn new(
        registry: Arc<SkillRegistry>,
        default_skills: Option<Vec<String>>,
        key: Option<SigningKey>,
    ) -> Self {
        Self {
            registry,
            default_skills,
            key,
            tenants: std::collections::BTreeMap::new(),
        }
    }

    /// The tenants whose people get only the skills named here (docs/protocol.md §20).
    pub(crate) fn with_tenants(
        mut self,
        tenants: std::collections::BTreeMap<String, Vec<String>>,
    ) -> Self {
        self.tenants = tenants;
        self
    }

    /// The skills a chat that names none gets: the configured defaults that exist, else all.
    pub(crate) fn default_skills(&self, set: &SkillSet) -> Vec<String> {
        match &self.default_skills {
            Some(names) => names
                .iter()
                .filter(|n| set.get(n).is_some())
                .cloned()
                .collect(),
            None => set.names(),
        }
    }
}

/// The skills the people of `tenant` get when the operator lists them; `None` = every skill.
pub(crate) fn tenant_skills<'a>(
    tenants: &'a std::collections::BTreeMap<String, Vec<String>>,
    tenant: Option<&str>,
) -> Option<&'a [String]> {
    tenants.get(tenant?).map(Vec::as_slice)
}

impl crate::hooks::HookFactory for SkillHookFactory {
    fn hooks_for(
        &self,
        request: &crate::types::ChatRequest,
    ) -> Result<Vec<Arc<dyn crate::hooks::AgentHook>>, crate::types::ChatError> {
        use crate::hooks::prompt::{PromptHookManager, SkillHook};
        use crate::types::{ChatError, ErrorCode};

        let set = self.registry.current();
        let tenant = request.person.as_ref().and_then(|p| p.tenant.as_deref());
        let allowed = tenant_skills(&self.tenants, tenant);
        let open = |name: &str| allowed.is_none_or(|allowed| allowed.iter().any(|a| a == name));
        let names = match &request.skills {
            Some(names) => {
                // A skill the tenant does not get is as unknown to its people as a missing one.
                let unknown: Vec<&str> = names
                    .iter()
                    .filter(|n| set.get(n).is_none() || !open(n))
                    .map(String::as_str)
                    .collect();
                if !unknown.is_empty() {
                    let available: Vec<String> =
                        set.names().into_iter().filter(|n| open(n)).collect();
                    let available = available.join(", ");
                    return Err(ChatError::new(
                        ErrorCode::UnknownSkill,
                        format!(
                            "unknown skill(s): {} (available: {available})",
                            unknown.join(", ")
                        ),
                    ));
                }
                let mut unique: Vec<String> = Vec::new();
                for name in names {
                    if !unique.contains(name) {
                        unique.push(name.clone());
                    }
                }
                unique
            }
            None => match allowed {
                Some(allowed) => allowed
                    .iter()
                    .filter(|n| set.get(n).is_some())
                    .cloned()
                    .collect(),
                None => self.default_skills(&set),
            },
        };
        let mut hooks = Vec::new();
        let mut descriptions = Vec::new();
        for name in &names {
            let Some(skill) = set.get(name) else { continue };
            descriptions.push((skill.name.clone(), skill.description.clone()));
            hooks.extend(skill.hooks.iter().map(|spec| SkillHook {
                skill: skill.name.clone(),
                spec: spec.clone(),
            }));
        }
        let manager = PromptHookManager::new(names, hooks, descriptions, self.key.clone());
        Ok(vec![Arc::new(manager)])
    }
}
