//! `hooks:` as a section: the server-level hook file, and `hooks.record`, the recording of hook
//! traffic (docs/protocol.md §21; env `HOOKWIRE_HOOK_RECORD_DIR`).

use std::path::PathBuf;

use super::{ConfigError, HooksFile, HooksSection};
use crate::hooks::record::RecordSettings;

/// The hook file `hooks:` names, and the recording, when a folder is given (in the file or
/// `HOOKWIRE_HOOK_RECORD_DIR`).
pub(super) fn hooks_section(
    hooks: Option<HooksFile>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<(Option<PathBuf>, Option<RecordSettings>), ConfigError> {
    let HooksSection { file, record } = match hooks {
        None => HooksSection::default(),
        Some(HooksFile::Path(path)) => HooksSection {
            file: Some(path),
            record: None,
        },
        Some(HooksFile::Section(section)) => section,
    };
    let record = record.unwrap_or_default();
    let dir = env("HOOKWIRE_HOOK_RECORD_DIR")
        .map(PathBuf::from)
        .or(record.dir);
    let Some(dir) = dir else {
        return Ok((file, None));
    };
    let defaults = RecordSettings::new(dir);
    let sample = record.sample.unwrap_or(defaults.sample);
    if !(0.0..=1.0).contains(&sample) {
        return Err(ConfigError::Invalid {
            setting: "hooks.record.sample",
            expected: "a share of chats from 0 to 1",
            value: sample.to_string(),
        });
    }
    let max_bytes = record.max_bytes.unwrap_or(defaults.max_bytes);
    if max_bytes < 4096 {
        return Err(ConfigError::TooSmall {
            setting: "hooks.record.max_bytes",
            min: 4096,
        });
    }
    let keep_files = record.keep_files.unwrap_or(defaults.keep_files);
    if keep_files == 0 {
        return Err(ConfigError::TooSmall {
            setting: "hooks.record.keep_files",
            min: 1,
        });
    }
    Ok((
        file,
        Some(RecordSettings {
            sample,
            max_bytes,
            keep_files,
            ..defaults
        }),
    ))
}
