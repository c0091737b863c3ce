use super::*;

fn store(state: &Path, workspace: &Path) -> TrustStore {
    TrustStore::for_workspace(Some(state), workspace).unwrap()
}

#[test]
fn pins_round_trip_through_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let state = dir.path().join("state/hookwire");
    let store = store(&state, &workspace);
    assert_eq!(store.load().unwrap(), TrustFile::default(), "none yet");
    let mut file = TrustFile::default();
    let pins = Pins::from([(".hookwire/hooks.yaml".into(), sha256_hex(b"x"))]);
    file.set(&workspace, pins.clone()).unwrap();
    store.save(&file).unwrap();
    assert_eq!(store.load().unwrap(), file);
    assert_eq!(store.load().unwrap().pins(&workspace), Some(&pins));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path()), 0o600);
        assert_eq!(mode(&state), 0o700);
    }
    // Saved again over the old one; no temp file left behind.
    file.revoke(&workspace).unwrap();
    store.save(&file).unwrap();
    assert_eq!(store.load().unwrap().pins(&workspace), None);
    let names: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [FILE_NAME]);
}

#[test]
fn the_format_is_pinned() {
    let mut file = TrustFile::default();
    let pins = Pins::from([("a/b.yaml".into(), "00".repeat(32))]);
    file.set(Path::new("/ws"), pins).unwrap();
    let json = serde_json::to_value(&file).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"version": 1, "workspaces": {"/ws": {"a/b.yaml": "00".repeat(32)}}})
    );
    assert_eq!(
        sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn a_corrupt_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let store = store(&dir.path().join("state"), &workspace);
    std::fs::create_dir(dir.path().join("state")).unwrap();
    for bad in [
        "{not json",
        "[]",
        r#"{"version": 2, "workspaces": {}}"#,
        r#"{"version": 1, "workspaces": {"/ws": {"a": 1}}}"#,
    ] {
        std::fs::write(store.path(), bad).unwrap();
        let error = store.load().unwrap_err();
        assert!(
            matches!(error, TrustError::Corrupt { .. }),
            "{bad}: {error}"
        );
        assert!(error.to_string().contains("trust.json"), "{error}");
    }
}

#[test]
fn a_state_dir_inside_the_workspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let inside = [
        workspace.clone(),
        workspace.join(".state"),
        workspace.join("a/b/../c"),
    ];
    for state in inside {
        let error = TrustStore::for_workspace(Some(&state), &workspace).unwrap_err();
        assert!(
            matches!(error, TrustError::InsideWorkspace { .. }),
            "{state:?}"
        );
    }
    // A symlink from outside into the workspace is inside too.
    #[cfg(unix)]
    {
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&workspace, &link).unwrap();
        let error = TrustStore::for_workspace(Some(&link.join("state")), &workspace);
        assert!(matches!(error, Err(TrustError::InsideWorkspace { .. })));
    }
    let error = TrustStore::for_workspace(None, &workspace).unwrap_err();
    assert!(matches!(error, TrustError::NoStateDir));
    assert!(TrustStore::for_workspace(Some(&dir.path().join("wss")), &workspace).is_ok());
}

#[test]
fn what_a_person_reads_cannot_hide_itself() {
    assert_eq!(printable("a\u{1b}[2Kb\rc\nd"), "a\\u{1b}[2Kb\\rc\\nd");
    assert_eq!(printable_with("a\nb\u{202e}", true), "a\nb\\u{202e}");
    // Format characters (Cf) hide text as well as control characters do: zero-width space,
    // word joiner, byte order mark, soft hyphen, a tag character.
    assert_eq!(
        printable("rm\u{200b} -rf\u{2060}\u{feff}\u{ad}\u{e0041}"),
        "rm\\u{200b} -rf\\u{2060}\\u{feff}\\u{ad}\\u{e0041}"
    );
    assert_eq!(shell_word(Path::new("/a b/it's")), "'/a b/it'\\''s'");
    assert_eq!(shell_word(Path::new("/plain/ws-1")), "/plain/ws-1");
}

#[test]
fn a_file_is_trusted_only_with_the_bytes_that_were_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let state = dir.path().join("state");
    let file = workspace.join(".hookwire/hooks.yaml");
    let policy = TrustPolicy::new(&workspace, false, Some(&state));
    let reason = |policy: &TrustPolicy, bytes: &[u8]| {
        policy
            .current()
            .check(&file, Some(bytes))
            .err()
            .map(|u| u.reason)
    };
    assert_eq!(reason(&policy, b"a"), Some(Reason::NotTrusted));
    let store = TrustStore::for_workspace(Some(&state), &workspace).unwrap();
    let mut trusted = TrustFile::default();
    let pins = Pins::from([(".hookwire/hooks.yaml".into(), sha256_hex(b"a"))]);
    trusted.set(&workspace, pins).unwrap();
    store.save(&trusted).unwrap();
    assert_eq!(reason(&policy, b"a"), None);
    assert_eq!(reason(&policy, b"b"), Some(Reason::Changed));
    let shown = policy
        .current()
        .check(&file, Some(b"b"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        policy.current().check(&file, None).unwrap_err().reason,
        Reason::Changed,
        "unreadable: not the pinned contents"
    );
    assert!(
        shown.contains(".hookwire/hooks.yaml was not loaded: changed since"),
        "{shown}"
    );
    assert!(shown.contains("hookwire trust --workspace "), "{shown}");
    // Every file, without a store.
    assert_eq!(reason(&TrustPolicy::all(&workspace), b"b"), None);
    // An unreadable store trusts nothing, and says why.
    std::fs::write(store.path(), "garbage").unwrap();
    let Some(Reason::NoStore(why)) = reason(&policy, b"a") else {
        panic!("a corrupt store trusted something")
    };
    assert!(why.contains("not a valid trust file"), "{why}");
    let inside = TrustPolicy::new(&workspace, false, Some(&workspace.join(".state")));
    assert!(matches!(reason(&inside, b"a"), Some(Reason::NoStore(_))));
    assert_eq!(inside.store_file(), None);
}

#[test]
fn keys_are_workspace_relative() {
    let ws = Path::new("/ws");
    let key = |p: &str| relative_key(ws, Path::new(p));
    assert_eq!(
        key("/ws/.hookwire/hooks/a.yaml").as_deref(),
        Some(".hookwire/hooks/a.yaml")
    );
    assert_eq!(key("/other/hooks.yaml"), None);
    assert_eq!(key("/ws"), None);
    assert_eq!(key("/ws/../ws/x"), None);
}

#[test]
fn in_a_container_the_hint_says_where_to_run_the_command_and_to_keep_the_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let state = dir.path().canonicalize().unwrap().join("state");
    let file = workspace.join(".hookwire/hooks.yaml");
    let why = |policy: TrustPolicy| policy.current().check(&file, Some(b"a")).unwrap_err().why();
    let command = format!("hookwire trust --workspace {}", workspace.display());

    let outside = why(TrustPolicy::new(&workspace, false, Some(&state)).in_container(false));
    assert_eq!(
        outside,
        format!("not trusted; review and trust it with: {command}")
    );
    let inside = why(TrustPolicy::new(&workspace, false, Some(&state)).in_container(true));
    assert_eq!(
        inside,
        format!(
            "not trusted; review and trust it with: {command}; in a container, run it there \
             (docker exec -it CONTAINER {command}) and keep its state dir {} on a volume, or the \
             trust is gone with the container (docs/deployment.md#workspace-trust-in-a-container)",
            state.display()
        )
    );
}
