use proptest::prelude::*;

use super::*;

#[test]
fn urls_lose_userinfo_query_values_fragments_and_opaque_segments() {
    assert_eq!(
        url("https://user:pw@hooks.example:8443/a/b?key=K1&x=2&flag#frag"),
        "https://***@hooks.example:8443/a/b?key=***&x=***&***"
    );
    assert_eq!(url("http://127.0.0.1:9/hook"), "http://127.0.0.1:9/hook");
    assert_eq!(
        url("https://hooks.slack.example/services/T0001/B0002/abcdEFGH12345678ijkl"),
        "https://hooks.slack.example/services/T0001/B0002/***"
    );
    assert_eq!(
        urls_in("cannot connect to http://h/mcp?token=SECRET1: refused"),
        "cannot connect to http://h/mcp?token=***: refused"
    );
    // A password with `/` or `#` in it is still userinfo.
    assert_eq!(
        url("ftp://u:pa/ss#1@files.example/x"),
        "ftp://***@files.example/x"
    );
    assert_eq!(
        urls_in("connect to postgresql://app:pw@db:5432/app failed"),
        "connect to postgresql://***@db:5432/app failed"
    );
}

#[test]
fn commands_lose_assignments_flagged_words_headers_and_opaque_words() {
    let shown = command(
        "API_KEY=C1 ./hook.sh --token=C2 --password C3 -H 'Authorization: Bearer C4' \
         curl https://u:C5@h.example/x?k=C6 sk0abcdefghijklmnopC7 --verbose",
    );
    for canary in ["C1", "C2", "C3", "C4", "C5", "C6", "C7"] {
        assert!(!shown.contains(canary), "{canary} in {shown}");
    }
    assert_eq!(
        shown,
        "API_KEY=*** ./hook.sh --token=*** --password *** -H 'Authorization: Bearer ***' curl \
         https://***@h.example/x?k=*** *** --verbose"
    );
    assert_eq!(
        command("jq .tool_name | grep -q read"),
        "jq .tool_name | grep -q read"
    );
}

#[test]
fn quoted_text_is_read_by_the_rules_not_hidden_whole() {
    for plain in [
        r#"echo "no reading of secrets" >&2; exit 2"#,
        r#"jq -r '.tool_input.path' | grep -q '\.env$'"#,
        r#"sh -c 'echo "done: $1"' -- x"#,
        r#"curl -s -H 'Content-Type: application/json' http://127.0.0.1:9/hook"#,
        "mkdir -p out && cp 'a b.txt' out/",
    ] {
        assert_eq!(command(plain), plain);
    }
    assert_eq!(
        command(r#"sh -c 'curl -u bot:S3 https://h/x' && echo "ok""#),
        r#"sh -c 'curl -u *** https://h/x' && echo "ok""#
    );
    assert_eq!(
        command(r#"curl -d '{"user":"bot","password":"S3"}' https://h/login"#),
        r#"curl -d '{"user":"bot","password":"***"}' https://h/login"#
    );
}

#[test]
fn secrets_glued_to_their_flag_are_hidden_for_the_programs_that_read_them_so() {
    assert_eq!(
        command("mysqldump -uroot -pS3cret app > dump.sql"),
        "mysqldump -uroot -p*** app > dump.sql"
    );
    assert_eq!(command("redis-cli -a S3cret ping"), "redis-cli -a *** ping");
    assert_eq!(
        command("curl -ubot:S3cret https://h"),
        "curl -u*** https://h"
    );
    // Elsewhere `-print` and `-a` are what they say.
    assert_eq!(command("find . -print"), "find . -print");
    assert_eq!(command("ls -a /tmp"), "ls -a /tmp");
}

/// The shapes a secret takes in a command; `{S}` is the secret.
const SHAPES: &[&str] = &[
    "mysql -u app -p{S} -h db app",
    "sudo mysqldump -uroot -p{S} --all-databases",
    "sshpass -p{S} ssh deploy@host ./run.sh",
    "sshpass -p {S} ssh deploy@host",
    "curl -u bot:{S} https://h.example/x",
    "curl -s -ubot:{S} https://h.example/x",
    "curl --user bot:{S} https://h.example/x",
    "redis-cli -h cache -a {S} ping",
    "redis-cli -a{S} ping",
    "redis-cli -u redis://:{S}@cache:6379/0 ping",
    "psql postgresql://app:{S}@db:5432/app -c 'select 1'",
    "psql 'postgres://app:{S}@db/app?sslmode=require'",
    "python3 notify.py amqp://guest:{S}@mq:5672/%2f",
    "curl ftp://ftpuser:{S}@files.example/report.csv",
    "mongosh \"mongodb+srv://app:{S}@cluster.example/app\"",
    "curl -H 'Authorization: Bearer {S}' https://h.example",
    "curl -H \"Authorization: Basic {S}\" https://h.example",
    "curl -H 'authorization: token {S}' https://h.example",
    "curl -H 'X-Api-Key: {S}' -H 'Content-Type: application/json' https://h.example",
    "curl --header 'Cookie: session={S}' https://h.example",
    "curl -H Authorization:{S} https://h.example",
    "wget --header=\"Authorization: Bearer {S}\" https://h.example",
    "PGPASSWORD={S} psql -h db app",
    "env API_TOKEN={S} ./hook.sh",
    "./hook.sh --token {S}",
    "./hook.sh --api-key={S}",
    "./hook.sh --password \"{S}\"",
    "./hook.sh -p {S}",
    "sh -c 'mysql -p{S} app < x.sql'",
    "sh -c \"curl -H 'Authorization: Bearer {S}' https://h\"",
    "curl -d '{\"password\":\"{S}\"}' https://h.example/login",
    "curl -d '{\"api_key\": \"{S}\"}' https://h.example",
    "curl 'https://h.example/x?token={S}&v=1'",
    "curl https://h.example/x?token=\"{S}\"",
    "notify --auth {S} --verbose",
    "gh api -H 'Authorization: token {S}' /user",
];

/// Passwords as people write them (`hunter2`, `S3cret.pw`); no shell metacharacters.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9._~+-]{5,23}"
}

proptest! {
    #[test]
    fn no_shape_shows_its_secret(shape in prop::sample::select(SHAPES), secret in secret()) {
        prop_assume!(!shape.contains(&secret));
        let shown = command(&shape.replace("{S}", &secret));
        prop_assert!(!shown.contains(&secret), "{shape}: {shown}");
    }

    /// Quoted text without a secret's shape is shown as it is.
    #[test]
    fn plain_quoted_text_is_shown_as_written(
        words in prop::collection::vec("[a-z]{1,8}", 1..6),
        quote in prop::sample::select(&['\'', '"'][..]),
    ) {
        let text = words.join(" ");
        prop_assume!(!names_secret(&text) && !text.split(' ').any(auth_scheme));
        let line = format!("echo {quote}{text}{quote} >&2; exit 2");
        prop_assert_eq!(command(&line), line);
    }
}
