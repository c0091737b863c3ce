use super::*;

fn line(n: usize) -> RecordLine {
    RecordLine {
        at: "2026-01-01T00:00:00.000Z".into(),
        chat_id: Some(format!("c{n}")),
        event: "pre_tool_execution".into(),
        input: serde_json::json!({"tool_name": "read_file", "n": n}),
        decision: RecordedDecision {
            outcome: "continue".into(),
            reason: None,
            decided_by: None,
            changed: BTreeMap::new(),
        },
        hooks: Vec::new(),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_recording(p))
        .collect();
    found.sort();
    found
}

/// Waits (a bounded number of short polls) until `dir` holds `lines` lines in all.
fn await_lines(dir: &Path, lines: usize) -> usize {
    let count = || -> usize {
        files(dir)
            .iter()
            .map(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .lines()
                    .count()
            })
            .sum()
    };
    for _ in 0..400 {
        if count() >= lines {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    count()
}

#[test]
fn lines_go_to_private_files_that_roll_over_past_max_bytes_and_old_ones_go() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("records");
    let one = serde_json::to_string(&line(0)).unwrap().len() as u64 + 1;
    let settings = RecordSettings {
        max_bytes: one * 3,
        keep_files: 2,
        ..RecordSettings::new(&root)
    };
    let recorder = Recorder::start(settings).unwrap();
    for n in 0..9 {
        let text = serde_json::to_string(&line(n)).unwrap();
        recorder.record(move || text);
    }
    drop(recorder);
    // Nine lines, three a file, the two newest files kept.
    assert_eq!(await_lines(&root, 6), 6);
    let kept = files(&root);
    assert_eq!(kept.len(), 2, "{kept:?}");
    use std::os::unix::fs::PermissionsExt;
    for file in &kept {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
        let text = std::fs::read_to_string(file).unwrap();
        for text in text.lines() {
            let read: RecordLine = serde_json::from_str(text).unwrap();
            assert_eq!(read.event, "pre_tool_execution");
        }
    }
    let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn sampling_keeps_a_share_of_chats_and_a_chat_whole() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::start(RecordSettings {
        sample: 0.25,
        ..RecordSettings::new(dir.path())
    })
    .unwrap();
    let sampled = (0..4000)
        .filter(|n| recorder.samples(&format!("chat-{n}")))
        .count();
    assert!((800..1200).contains(&sampled), "{sampled} of 4000");
    for n in 0..50 {
        let id = format!("chat-{n}");
        assert_eq!(recorder.samples(&id), recorder.samples(&id));
    }
    let none = Recorder::start(RecordSettings {
        sample: 0.0,
        ..RecordSettings::new(dir.path())
    })
    .unwrap();
    assert!(!(0..100).any(|n| none.samples(&format!("c{n}"))));
}
