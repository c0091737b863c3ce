//! Voice (docs/protocol.md §18): `audio` frames from a real espeak-ng and from a fake
//! OpenAI-compatible speech server over HTTP, in order among the chat's frames (a persistent
//! hook keeps its place between the sentences it came between); cancel kills the engine; a
//! failing engine gives one notice and the text answer; `POST /api/transcribe` against a fake
//! transcription server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::*;
use hookwire::config::Config;
use hookwire::voice::settings::{SttSettings, TtsEngine, TtsSettings};

pub(crate) fn command_tts(command: &str) -> impl FnOnce(&mut Config) {
    let command = command.to_string();
    move |c: &mut Config| {
        c.voice.tts = Some(TtsSettings {
            engine: TtsEngine::Command {
                command,
                env: BTreeMap::new(),
            },
            format: "wav".into(),
            timeout: Duration::from_secs(30),
            concurrency: 2,
        });
    }
}

/// What a fake server received: each request's headers and body.
type Seen<T> = Arc<Mutex<Vec<(HeaderMap, T)>>>;

fn of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| f["type"] == kind).collect()
}

fn audio_bytes(frame: &Value) -> Vec<u8> {
    BASE64.decode(frame["data"].as_str().unwrap()).unwrap()
}

/// Words only: what a sentence says, whatever the white space around it.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// A skill whose `after_tool_call` hook is persistent: its `hook` frame comes between the
/// round's text before the tool call and the answer after it.
pub(crate) fn skill_with_persistent_hook(dir: &std::path::Path) -> std::path::PathBuf {
    let skills = dir.join("skills");
    let hooks = skills.join("note/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        skills.join("note/SKILL.md"),
        "---\nname: note\ndescription: Notes tool use.\n---\n",
    )
    .unwrap();
    std::fs::write(hooks.join("seen.md"), "A tool ran; say what it found.").unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        r#"{"hooks":[{"name":"seen","file":"seen.md","timing":"after_tool_call","role":"system","persistent":true}]}"#,
    )
    .unwrap();
    skills
}

/// A reply that says something, then calls `list_dir`.
pub(crate) fn text_then_tool(text: &str) -> Reply {
    let Reply::Sse(mut pieces) = Reply::tool_calls(&[("c1", "list_dir", json!({"path": "."}))])
    else {
        unreachable!()
    };
    pieces.insert(1, Piece::Raw(chunk(json!({"content": text}))));
    Reply::Sse(pieces)
}

#[tokio::test]
async fn espeak_speaks_every_sentence_in_order_with_the_persistent_hook_between() {
    let upstream = FakeUpstream::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let skills = skill_with_persistent_hook(workspace.path());
    upstream.push(Reply::text(&["[NEED_TOOL] look"]));
    upstream.push(text_then_tool(
        "Let me look at the files. This takes a moment.",
    ));
    upstream.push(Reply::text(&[
        "There is one ",
        "file. It is ",
        "called skills.",
    ]));
    let tts = command_tts("espeak-ng --stdout");
    let server = TestServer::builder()
        .workspace(workspace)
        .upstream(&upstream)
        .config(move |c| {
            c.skills_dir = skills;
            tts(c);
        })
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","id":"v","input":"what is here?","voice":true}),
    )
    .await;
    let kinds = types_of(&frames);
    assert_eq!(kinds.last().map(String::as_str), Some("done"), "{kinds:?}");
    assert!(of_type(&frames, "notice").is_empty(), "{frames:#?}");
    let audio = of_type(&frames, "audio");
    // One frame per sentence, in order, each a WAV file of its own.
    let seqs: Vec<u64> = audio.iter().map(|a| a["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..audio.len() as u64).collect::<Vec<_>>());
    for frame in &audio {
        let data = audio_bytes(frame);
        assert_eq!(&data[..4], b"RIFF", "{}", frame["text"]);
        assert_eq!(&data[8..12], b"WAVE");
        assert!(data.len() > 1000);
        assert_eq!(frame["format"], "wav");
        assert_eq!(frame["id"], "v");
    }
    let spoken: Vec<&str> = audio.iter().map(|a| a["text"].as_str().unwrap()).collect();
    assert!(
        spoken.ends_with(&[
            "Let me look at the files.",
            "This takes a moment.",
            "There is one file.",
            "It is called skills."
        ]),
        "{spoken:?}"
    );
    // Everything the assistant streamed is spoken, word for word.
    assert_eq!(words(&spoken.join(" ")), words(&text_of(&frames)));
    // The hook comes after the audio of the text before the tool call, before the answer's.
    let at = |pred: &dyn Fn(&Value) -> bool| frames.iter().position(pred).unwrap();
    let hook = at(&|f| f["type"] == "hook");
    assert_eq!(frames[hook]["hook"]["name"], "seen");
    let moment = at(&|f| f["type"] == "audio" && f["text"] == "This takes a moment.");
    let answer = at(&|f| f["type"] == "audio" && f["text"] == "There is one file.");
    assert!(moment < hook && hook < answer, "{kinds:?}");
    server.shutdown().await;
}

/// Serves `app` on a free loopback port, for the life of the test; its address.
async fn serve(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A fake `/v1/audio/speech`: answers `AUDIO:<input>` and records each request.
async fn fake_speech_server(fail: bool) -> (String, Seen<Value>) {
    let seen: Seen<Value> = Arc::default();
    let record = seen.clone();
    let app = Router::new().route(
        "/v1/audio/speech",
        post(move |headers: HeaderMap, body: Bytes| {
            let record = record.clone();
            async move {
                let body: Value = serde_json::from_slice(&body).unwrap();
                let input = body["input"].as_str().unwrap_or_default().to_string();
                record.lock().unwrap().push((headers, body));
                if fail {
                    return (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        b"engine overloaded".to_vec(),
                    );
                }
                (
                    axum::http::StatusCode::OK,
                    format!("AUDIO:{input}").into_bytes(),
                )
            }
        }),
    );
    let addr = serve(app).await;
    (format!("http://{addr}/v1"), seen)
}

fn openai_tts(base_url: &str) -> impl FnOnce(&mut Config) {
    let base_url = base_url.to_string();
    move |c: &mut Config| {
        c.voice.tts = Some(TtsSettings {
            engine: TtsEngine::OpenAi {
                base_url,
                api_key: Some("sk-voice".into()),
                model: "tts-test".into(),
                voice: "nova".into(),
            },
            format: "mp3".into(),
            timeout: Duration::from_secs(10),
            concurrency: 3,
        });
    }
}

#[tokio::test]
async fn an_openai_compatible_speech_server_speaks_each_sentence_in_order() {
    let upstream = FakeUpstream::start().await;
    let (base_url, seen) = fake_speech_server(false).await;
    upstream.push(Reply::text(&["One. Two", "! Three? Fo", "ur."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(openai_tts(&base_url))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"count","voice":true})).await;
    let audio = of_type(&frames, "audio");
    let got: Vec<(String, String)> = audio
        .iter()
        .map(|a| {
            (
                a["text"].as_str().unwrap().to_string(),
                String::from_utf8(audio_bytes(a)).unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = ["One.", "Two!", "Three?", "Four."]
        .iter()
        .map(|s| (s.to_string(), format!("AUDIO:{s}")))
        .collect();
    assert_eq!(got, want);
    assert!(audio.iter().all(|a| a["format"] == "mp3"));
    // Every audio frame before `done`.
    assert_eq!(types_of(&frames).last().map(String::as_str), Some("done"));
    for (headers, body) in seen.lock().unwrap().iter() {
        assert_eq!(headers["authorization"], "Bearer sk-voice");
        assert_eq!(body["model"], "tts-test");
        assert_eq!(body["voice"], "nova");
        assert_eq!(body["response_format"], "mp3");
    }
    assert_eq!(seen.lock().unwrap().len(), 4);
    // Without `voice`, no audio and no request.
    upstream.push(Reply::text(&["Quiet. Please."]));
    let frames = chat(&server, json!({"type":"chat","input":"again"})).await;
    assert_eq!(text_of(&frames), "Quiet. Please.");
    assert!(of_type(&frames, "audio").is_empty());
    assert_eq!(seen.lock().unwrap().len(), 4);
    server.shutdown().await;
}

#[tokio::test]
async fn a_failing_engine_gives_one_notice_and_the_answer_as_text() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["First. Second. Third."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(command_tts("echo 'engine broke' >&2; exit 3"))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"hi","voice":true})).await;
    let notices = of_type(&frames, "notice");
    assert_eq!(notices.len(), 1, "{frames:#?}");
    assert_eq!(notices[0]["source"], "voice");
    // What failed, not what the engine said (its stderr may hold a key): that is the log's.
    let notice = notices[0]["message"].as_str().unwrap();
    assert!(notice.contains("exited with status 3"), "{notice}");
    assert!(!notice.contains("engine broke"), "{notice}");
    assert!(of_type(&frames, "audio").is_empty());
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "completed");
    assert_eq!(done["message"]["content"], "First. Second. Third.");
    // The same with a speech server that answers 503.
    let (base_url, _) = fake_speech_server(true).await;
    upstream.push(Reply::text(&["Alpha. Beta."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(openai_tts(&base_url))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"hi","voice":true})).await;
    let notices = of_type(&frames, "notice");
    assert_eq!(notices.len(), 1, "{frames:#?}");
    let notice = notices[0]["message"].as_str().unwrap();
    assert!(notice.contains("503"), "{notice}");
    assert!(!notice.contains("engine overloaded"), "{notice}");
    assert_eq!(
        frame_of(&frames, "done")["message"]["content"],
        "Alpha. Beta."
    );
}

#[tokio::test]
async fn voice_without_a_configured_engine_is_a_notice_and_text() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Plain. Text."]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = chat(&server, json!({"type":"chat","input":"hi","voice":true})).await;
    let notices = of_type(&frames, "notice");
    assert_eq!(notices.len(), 1);
    assert!(notices[0]["message"]
        .as_str()
        .unwrap()
        .contains("voice.tts"));
    assert_eq!(
        frame_of(&frames, "done")["message"]["content"],
        "Plain. Text."
    );
    let (_, info) = http_get(server.addr, "/api/info").await;
    let info: Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        info["voice"],
        json!({"tts": false, "format": null, "stt": false})
    );
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn cancel_stops_synthesis_and_kills_the_engine() {
    let upstream = FakeUpstream::start().await;
    // The model is still answering when the cancel comes.
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":""}))),
        Piece::Raw(chunk(json!({"content":"Wait for me. I am slow. "}))),
        Piece::Hang,
    ]));
    // The engine records its pid and then blocks on a gate file that never comes.
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(command_tts(
            "echo $$ >> pids; while [ ! -e gate ]; do sleep 0.05; done; cat",
        ))
        .start()
        .await;
    let pids = server.workspace.path().join("pids");
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"c","input":"hi","voice":true}))
        .await;
    let read_pids = || {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(Duration::from_secs(10), || async {
            !read_pids().is_empty()
        })
        .await
    );
    let started = read_pids();
    assert!(started.iter().all(|pid| alive(*pid)));
    client.send(json!({"type":"cancel","id":"c"})).await;
    let frames = client.until_end().await;
    let done = frame_of(&frames, "done");
    assert_eq!(done["reason"], "cancelled");
    assert!(of_type(&frames, "audio").is_empty());
    assert!(of_type(&frames, "notice").is_empty(), "{frames:#?}");
    for pid in read_pids() {
        assert!(
            eventually(Duration::from_secs(5), || async { !alive(pid) }).await,
            "engine process {pid} still runs after the cancel"
        );
    }
    server.shutdown().await;
}

/// A fake `/v1/audio/transcriptions`: records the multipart body, answers `{"text"}`.
async fn fake_transcriber() -> (String, Seen<Vec<u8>>) {
    let seen: Seen<Vec<u8>> = Arc::default();
    let record = seen.clone();
    let app = Router::new()
        .route(
            "/v1/audio/transcriptions",
            post(move |headers: HeaderMap, body: Bytes| {
                let record = record.clone();
                async move {
                    record.lock().unwrap().push((headers, body.to_vec()));
                    axum::Json(json!({"text": "turn on the lights"}))
                }
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::disable());
    let addr = serve(app).await;
    (format!("http://{addr}/v1"), seen)
}

#[tokio::test]
async fn transcribe_sends_the_audio_to_the_transcription_server_behind_the_token() {
    let (base_url, seen) = fake_transcriber().await;
    let server = TestServer::builder()
        .config(move |c| {
            c.auth_token = Some("tok".into());
            c.voice.stt = Some(SttSettings {
                base_url,
                api_key: Some("sk-stt".into()),
                model: "whisper-test".into(),
                timeout: Duration::from_secs(10),
                upload_timeout: Duration::from_secs(60),
                max_concurrent: 4,
            });
        })
        .start()
        .await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = server.url("/api/transcribe");
    let audio = b"OggS fake recording".to_vec();
    let refused = http
        .post(&url)
        .header("content-type", "audio/ogg")
        .body(audio.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert!(seen.lock().unwrap().is_empty());
    let answer = http
        .post(&url)
        .bearer_auth("tok")
        .header("content-type", "audio/ogg")
        .body(audio.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer, json!({"text": "turn on the lights"}));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let (headers, body) = &seen[0];
        assert_eq!(headers["authorization"], "Bearer sk-stt");
        let body = String::from_utf8_lossy(body);
        assert!(body.contains("whisper-test"));
        assert!(body.contains("OggS fake recording"));
        assert!(body.contains("filename=\"speech.ogg\""));
    }
    // Past 25 MiB: 413, and nothing reaches the transcription server.
    let big = vec![0u8; 25 * 1024 * 1024 + 1];
    let too_big = http
        .post(&url)
        .bearer_auth("tok")
        .header("content-type", "audio/webm")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);
    assert_eq!(seen.lock().unwrap().len(), 1);
    let info: Value = http
        .get(server.url("/api/info"))
        .bearer_auth("tok")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["voice"]["stt"], true);
    server.shutdown().await;
}

/// A fake speech server that records the path and query each request came to.
async fn fake_speech_server_seeing_urls() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let app = Router::new().fallback(move |uri: axum::http::Uri| {
        let record = record.clone();
        async move {
            record.lock().unwrap().push(uri.to_string());
            b"AUDIO".to_vec()
        }
    });
    let addr = serve(app).await;
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn a_base_url_with_a_query_keeps_it_after_the_path_and_no_url_reaches_the_client() {
    let upstream = FakeUpstream::start().await;
    let (root, seen) = fake_speech_server_seeing_urls().await;
    upstream.push(Reply::text(&["Hello."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(openai_tts(&format!("{root}/v1?key=sekrit")))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"hi","voice":true})).await;
    assert_eq!(of_type(&frames, "audio").len(), 1, "{frames:#?}");
    assert_eq!(*seen.lock().unwrap(), ["/v1/audio/speech?key=sekrit"]);
    server.shutdown().await;

    // A server that cannot be reached: the notice says so without the URL or its key.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    upstream.push(Reply::text(&["Hello."]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(openai_tts(&format!(
            "http://user:pass@127.0.0.1:{port}/v1?key=sekrit"
        )))
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"hi","voice":true})).await;
    let notices = of_type(&frames, "notice");
    assert_eq!(notices.len(), 1, "{frames:#?}");
    let notice = notices[0]["message"].as_str().unwrap();
    assert!(notice.contains("could not be reached"), "{notice}");
    for secret in ["sekrit", "pass", "127.0.0.1", "http"] {
        assert!(!notice.contains(secret), "{secret} in {notice}");
    }
    server.shutdown().await;
}

/// Sends the head of a POST that declares `length` bytes of audio and `sent` of them, and keeps
/// the connection open without sending more.
async fn stalled_upload(
    addr: std::net::SocketAddr,
    length: usize,
    sent: &[u8],
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/transcribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: audio/webm\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

/// The status line of the answer on `stream`.
async fn status_of(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&answer[..read])
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_stalled_upload_gets_408_and_uploads_past_the_cap_get_503() {
    let (base_url, seen) = fake_transcriber().await;
    let server = TestServer::builder()
        .config(move |c| {
            c.voice.stt = Some(SttSettings {
                base_url,
                api_key: None,
                model: "whisper-test".into(),
                timeout: Duration::from_secs(10),
                upload_timeout: Duration::from_secs(4),
                max_concurrent: 1,
            });
        })
        .start()
        .await;
    // Declares 25 MiB, sends 10 bytes, then nothing: it holds the only slot.
    let mut stalled = stalled_upload(server.addr, 25 * 1024 * 1024, b"OggS 12345").await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = server.url("/api/transcribe");
    let busy = eventually(Duration::from_secs(5), || {
        let http = http.clone();
        let url = url.clone();
        async move {
            let answer = http
                .post(&url)
                .header("content-type", "audio/ogg")
                .body(b"OggS".to_vec())
                .send()
                .await
                .unwrap();
            answer.status() == 503
        }
    })
    .await;
    assert!(
        busy,
        "a second upload while the only slot is held is refused with 503"
    );
    // The stalled one is answered 408 once its time is up, and frees the slot.
    let status = status_of(&mut stalled).await;
    assert!(status.contains("408"), "{status}");
    let answer = http
        .post(&url)
        .header("content-type", "audio/ogg")
        .body(b"OggS fine".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let stalled_reached = seen
        .lock()
        .unwrap()
        .iter()
        .any(|(_, body)| String::from_utf8_lossy(body).contains("12345"));
    assert!(
        !stalled_reached,
        "nothing of the stalled upload reached the transcription server"
    );
    server.shutdown().await;
}
