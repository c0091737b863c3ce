use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

fn uri(text: &str) -> Uri {
    text.parse().unwrap()
}

fn loopback() -> AccessPolicy {
    AccessPolicy {
        bound: Bound::Loopback,
        ..AccessPolicy::default()
    }
}

#[test]
fn loopback_servers_answer_only_loopback_names() {
    let policy = loopback();
    for host in [
        "localhost:8080",
        "127.0.0.1:1",
        "[::1]:8080",
        "LOCALHOST",
        "127.0.0.1",
    ] {
        assert!(
            policy.check(&uri("/"), &headers(&[("host", host)])).is_ok(),
            "{host}"
        );
    }
    for host in [
        "evil.example:8080",
        "127.0.0.1.evil.example",
        "localhost.evil",
        "[::2]:80",
    ] {
        let refusal = policy
            .check(&uri("/"), &headers(&[("host", host)]))
            .unwrap_err();
        assert_eq!(
            (refusal.status, refusal.reason),
            (StatusCode::FORBIDDEN, "host"),
            "{host}"
        );
    }
    assert!(
        policy.check(&uri("/"), &HeaderMap::new()).is_err(),
        "no Host at all"
    );
    let anywhere = AccessPolicy::default();
    assert!(anywhere
        .check(&uri("/"), &headers(&[("host", "chat.example")]))
        .is_ok());
    let listed = AccessPolicy {
        allowed_hosts: Some(vec!["chat.example".into()]),
        bound: Bound::Loopback,
        ..AccessPolicy::default()
    };
    assert!(listed
        .check(&uri("/"), &headers(&[("host", "chat.example:443")]))
        .is_ok());
    assert!(listed
        .check(&uri("/"), &headers(&[("host", "localhost")]))
        .is_err());
}

#[test]
fn origins_must_be_the_same_origin_unless_listed() {
    let policy = loopback();
    let same = headers(&[
        ("host", "127.0.0.1:8080"),
        ("origin", "http://127.0.0.1:8080"),
    ]);
    assert!(policy.check(&uri("/ws"), &same).is_ok());
    assert!(policy
        .check(&uri("/ws"), &headers(&[("host", "127.0.0.1:8080")]))
        .is_ok());
    for origin in [
        "http://evil.example",
        "http://127.0.0.1:9999",
        "null",
        "garbage",
    ] {
        let h = headers(&[("host", "127.0.0.1:8080"), ("origin", origin)]);
        let refusal = policy.check(&uri("/ws"), &h).unwrap_err();
        assert_eq!(refusal.reason, "origin", "{origin}");
    }
    let listed = AccessPolicy {
        allowed_origins: Some(vec!["https://app.example".into()]),
        ..loopback()
    };
    let h = headers(&[
        ("host", "localhost:8080"),
        ("origin", "https://app.example"),
    ]);
    assert!(listed.check(&uri("/ws"), &h).is_ok());
    let h = headers(&[
        ("host", "localhost:8080"),
        ("origin", "http://localhost:8080"),
    ]);
    assert!(
        listed.check(&uri("/ws"), &h).is_err(),
        "a list replaces same-origin"
    );
}

#[test]
fn the_token_guards_the_chat_the_api_and_metrics_only() {
    let policy = AccessPolicy {
        auth_token: Some("s3cret/+ x".into()),
        ..loopback()
    };
    let host = headers(&[("host", "localhost:8080")]);
    for path in ["/ws", "/api/info", "/api/skills", "/metrics"] {
        let refusal = policy.check(&uri(path), &host).unwrap_err();
        assert_eq!(refusal.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    for path in ["/", "/healthz", "/app.js", "/apiary.html"] {
        assert!(policy.check(&uri(path), &host).is_ok(), "{path}");
    }
    let bearer = headers(&[
        ("host", "localhost"),
        ("authorization", "Bearer s3cret/+ x"),
    ]);
    assert!(policy.check(&uri("/api/info"), &bearer).is_ok());
    assert!(policy
        .check(&uri("/ws?token=s3cret%2F%2B%20x"), &host)
        .is_ok());
    assert!(policy
        .check(&uri("/ws?a=1&token=s3cret/%2B+x"), &host)
        .is_ok());
    let wrong = headers(&[("host", "localhost"), ("authorization", "Bearer nope")]);
    assert_eq!(
        policy.check(&uri("/ws"), &wrong).unwrap_err().message,
        "wrong token"
    );
    assert!(policy.check(&uri("/ws?token=s3cret"), &host).is_err());
}

#[test]
fn a_wildcard_bind_answers_ip_literals_and_loopback_names_only() {
    let policy = AccessPolicy {
        bound: Bound::Wildcard,
        ..AccessPolicy::default()
    };
    for host in [
        "192.0.2.7:8080",
        "[2001:db8::1]:80",
        "localhost",
        "127.0.0.1",
    ] {
        assert!(
            policy.check(&uri("/"), &headers(&[("host", host)])).is_ok(),
            "{host}"
        );
    }
    for host in [
        "evil.example",
        "rebind.evil.example:8080",
        "[::1].evil.example",
    ] {
        let refusal = policy
            .check(&uri("/"), &headers(&[("host", host)]))
            .unwrap_err();
        assert_eq!(refusal.reason, "host", "{host}");
    }
    assert_eq!(
        Bound::of("0.0.0.0".parse().unwrap()),
        Bound::Wildcard,
        "and [::]"
    );
    assert_eq!(Bound::of("::".parse().unwrap()), Bound::Wildcard);
    assert_eq!(
        Bound::of("::ffff:127.0.0.1".parse().unwrap()),
        Bound::Loopback
    );
}

#[test]
fn a_second_origin_header_is_refused() {
    let mut map = headers(&[("host", "127.0.0.1:8080")]);
    map.append("origin", "http://127.0.0.1:8080".parse().unwrap());
    map.append("origin", "http://evil.example".parse().unwrap());
    let refusal = loopback().check(&uri("/ws"), &map).unwrap_err();
    assert_eq!(
        (refusal.status, refusal.reason),
        (StatusCode::FORBIDDEN, "origin")
    );
}

#[test]
fn a_second_host_header_is_refused_whichever_comes_first() {
    for (first, second) in [
        ("127.0.0.1:8080", "evil.example"),
        ("evil.example", "127.0.0.1:8080"),
    ] {
        let mut map = HeaderMap::new();
        map.append("host", first.parse().unwrap());
        map.append("host", second.parse().unwrap());
        let refusal = loopback().check(&uri("/ws"), &map).unwrap_err();
        assert_eq!(
            (refusal.status, refusal.reason),
            (StatusCode::BAD_REQUEST, "host")
        );
    }
}

#[test]
fn the_token_may_come_as_a_subprotocol_and_the_admin_token_guards_its_routes() {
    let policy = AccessPolicy {
        auth_token: Some("chat+tok/1".into()),
        admin_token: Some("admin-tok".into()),
        ..loopback()
    };
    let offer = headers(&[
        ("host", "localhost"),
        (
            "sec-websocket-protocol",
            "hookwire, hookwire.token.chat+tok%2F1",
        ),
    ]);
    assert!(policy.check(&uri("/ws"), &offer).is_ok());
    let wrong = headers(&[
        ("host", "localhost"),
        ("sec-websocket-protocol", "hookwire, hookwire.token.nope"),
    ]);
    assert!(policy.check(&uri("/ws"), &wrong).is_err());
    let chat = headers(&[
        ("host", "localhost"),
        ("authorization", "Bearer chat+tok/1"),
    ]);
    let admin = headers(&[("host", "localhost"), ("authorization", "Bearer admin-tok")]);
    for path in ["/api/hooks", "/metrics"] {
        assert_eq!(
            policy.check(&uri(path), &chat).unwrap_err().status,
            StatusCode::UNAUTHORIZED,
            "{path}"
        );
        assert!(policy.check(&uri(path), &admin).is_ok(), "{path}");
    }
    assert!(policy.check(&uri("/api/info"), &chat).is_ok());
    assert!(policy.check(&uri("/api/info"), &admin).is_err());
}

#[test]
fn helpers() {
    assert_eq!(host_name("localhost:8080"), Some("localhost"));
    assert_eq!(host_name("[::1]:8080"), Some("[::1]"));
    assert_eq!(host_name("example"), Some("example"));
    for bad in [
        "[::1].evil.example",
        "[::1]x",
        "a:b:c",
        "[::1",
        "a b",
        "",
        "h:",
    ] {
        assert_eq!(host_name(bad), None, "{bad}");
    }
    assert!(is_ip_literal("192.0.2.1") && is_ip_literal("[2001:db8::1]"));
    assert!(!is_ip_literal("evil.example") && !is_ip_literal("1.2.3.4.evil"));
    assert_eq!(
        origin_authority("http://a.example:1/x"),
        Some("a.example:1")
    );
    assert_eq!(origin_authority("null"), None);
    assert_eq!(percent_decode("a%2fb+c%zz%4"), "a/b c%zz%4");
    assert_eq!(percent_decode("%é%"), "%é%");
    assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("", "a"));
}
