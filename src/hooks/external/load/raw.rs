//! The YAML shape of a hook file as it is read, before anything is checked: unknown keys are
//! refused here, everything else in [`super::build`].

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHook {
    pub(super) name: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) command: Option<String>,
    pub(super) url: Option<String>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) prompt: Option<String>,
    /// OpenHarness format: the prompt read from a file beside the hook file.
    pub(super) prompt_file: Option<String>,
    pub(super) model: Option<String>,
    pub(super) timeout: Option<f64>,
    pub(super) on_error: Option<String>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) filter: Option<RawFilter>,
    pub(super) matcher: Option<String>,
    pub(super) capabilities: Option<Vec<String>>,
    /// `type: agent`: the configured hook agent to ask.
    pub(super) agent: Option<String>,
    /// Run off the chat's path (docs/protocol.md §11).
    #[serde(rename = "async")]
    pub(super) run_async: Option<bool>,
    /// `drop` (the default) or `wait`: an async run that finds the queue full.
    pub(super) on_full: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFilter {
    pub(super) tool_name: Option<String>,
    pub(super) tool_matcher: Option<String>,
    pub(super) model_prefix: Option<String>,
}

pub(super) type RawFile = HashMap<Spanned<String>, Option<RawEvent>>;

/// An event's hooks: a list, or `{parallel: true, hooks: [...]}` to run them side by side.
#[derive(Debug, Default)]
pub(super) struct RawEvent {
    pub(super) parallel: bool,
    pub(super) hooks: Vec<Spanned<RawHook>>,
}

impl<'de> Deserialize<'de> for RawEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawEvent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of hooks, or a mapping with `hooks` (and `parallel`)")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawEvent, A::Error> {
                let mut hooks = Vec::new();
                while let Some(hook) = seq.next_element()? {
                    hooks.push(hook);
                }
                Ok(RawEvent {
                    parallel: false,
                    hooks,
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEvent, A::Error> {
                let mut event = RawEvent::default();
                let mut seen_hooks = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "parallel" => event.parallel = map.next_value()?,
                        "hooks" => {
                            event.hooks = map.next_value::<Option<Vec<_>>>()?.unwrap_or_default();
                            seen_hooks = true;
                        }
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &["parallel", "hooks"],
                            ))
                        }
                    }
                }
                if !seen_hooks {
                    return Err(serde::de::Error::missing_field("hooks"));
                }
                Ok(event)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

pub(crate) use crate::types::one_line;
