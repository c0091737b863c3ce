use serde_json::json;

use super::*;

fn state(tail_text: &str) -> LoopState {
    let mut call = Message::assistant_with_tools(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        }],
    );
    call.content = "reading".into();
    LoopState {
        expires: 2_000,
        history: HistoryBinding::of(&[Message::user("hi")]),
        model: "m".into(),
        system: "be helpful".into(),
        tail: vec![
            StateMessage::from(&Message::user(tail_text)),
            StateMessage::from(&call),
        ],
        round: 1,
        retries: 0,
        pending: vec![PendingCall {
            call_id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a.rs"}),
            reason: "this server asks you before it runs read_file".into(),
        }],
    }
}

#[test]
fn a_state_round_trips_small_and_large_and_large_ones_are_deflated() {
    let key = StateKey::from_secret("k");
    let small = state("read a.rs");
    let text = encode(&small, &key);
    assert!(text.starts_with("v2.j."), "{text}");
    assert!(!text.contains("read a.rs") && !text.contains("be helpful"));
    let replica = StateKey::from_secret("k");
    assert_eq!(
        decode(&text, &replica, 1_000),
        Ok(small.clone()),
        "replicas with one secret agree"
    );
    assert_eq!(decode(&text, &key, 1_000), Ok(small.clone()));
    let messages: Vec<Message> = small
        .tail
        .iter()
        .cloned()
        .map(|m| m.into_message().unwrap())
        .collect();
    assert_eq!(messages[1].tool_calls[0].name, "read_file");

    let large = state(&"read every file ".repeat(500));
    let text = encode(&large, &key);
    assert!(text.starts_with("v2.z."), "deflated");
    let json_len = serde_json::to_vec(&large).unwrap().len();
    assert!(text.len() < json_len / 4, "{} vs {json_len}", text.len());
    assert_eq!(decode(&text, &key, 1_000), Ok(large));
}

#[test]
fn a_changed_foreign_expired_or_malformed_state_is_refused_with_its_reason() {
    let key = StateKey::from_secret("k");
    let text = encode(&state("x"), &key);
    // One character of the payload changed.
    let mut changed: Vec<char> = text.chars().collect();
    let at = changed.len() - 3;
    changed[at] = if changed[at] == 'A' { 'B' } else { 'A' };
    let changed: String = changed.into_iter().collect();
    assert_eq!(decode(&changed, &key, 1_000), Err(StateError::Tampered));
    // The kind swapped: the associated data no longer matches.
    let swapped = text.replacen("v2.j.", "v2.z.", 1);
    assert_eq!(decode(&swapped, &key, 1_000), Err(StateError::Tampered));
    assert_eq!(
        decode(&text, &StateKey::from_secret("another"), 1_000),
        Err(StateError::Tampered)
    );
    assert_eq!(
        decode(&text, &StateKey::random(), 1_000),
        Err(StateError::Tampered)
    );
    assert_eq!(decode(&text, &key, 2_500), Err(StateError::Expired(500)));
    assert_eq!(decode("nonsense", &key, 0), Err(StateError::Malformed));
    assert_eq!(decode("v2.j.AAAA", &key, 0), Err(StateError::Malformed));
    // Sealed but not a state.
    assert_eq!(
        decode(&seal(&key, "j", b"not json"), &key, 0),
        Err(StateError::Malformed)
    );
}

/// `bytes` sealed as a state of `kind` would be.
fn seal(key: &StateKey, kind: &str, bytes: &[u8]) -> String {
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let aad = associated_data(kind);
    let sealed = key
        .cipher
        .encrypt(
            &nonce,
            Payload {
                msg: bytes,
                aad: aad.as_bytes(),
            },
        )
        .unwrap();
    let mut all = nonce.to_vec();
    all.extend(sealed);
    format!(
        "v2.{kind}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(all)
    )
}

#[test]
fn a_state_that_inflates_without_bound_is_refused() {
    let key = StateKey::from_secret("k");
    let bomb = deflate(&vec![b' '; MAX_STATE_BYTES + 10]).unwrap();
    assert_eq!(
        decode(&seal(&key, "z", &bomb), &key, 0),
        Err(StateError::Malformed)
    );
}

#[test]
fn a_binding_matches_a_history_that_starts_with_the_same_messages_only() {
    let history = vec![Message::user("hi"), Message::assistant("hello")];
    let binding = HistoryBinding::of(&history);
    let mut longer = history.clone();
    longer.push(Message::user("more"));
    assert!(binding.matches(&history));
    assert!(binding.matches(&longer));
    assert!(!binding.matches(&history[..1]));
    let mut changed = history.clone();
    changed[1].content = "HELLO".into();
    assert!(!binding.matches(&changed));
    // The fields cannot be shifted into one another.
    let a = HistoryBinding::of(&[Message::user("ab"), Message::user("c")]);
    let b = HistoryBinding::of(&[Message::user("a"), Message::user("bc")]);
    assert_ne!(a.sha256, b.sha256);
}

#[test]
fn settings_name_tools_or_every_tool() {
    let mut settings = ApprovalSettings::default();
    assert!(!settings.requires("read_file"));
    settings.require_approval = vec!["read_file".into()];
    assert!(settings.requires("read_file") && !settings.requires("list_dir"));
    settings.require_approval = vec!["*".into()];
    assert!(settings.requires("list_dir"));
}
