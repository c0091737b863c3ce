//! Voice on the page in Chromium (autoplay allowed by flag): the speaker toggle, the audio queue
//! playing espeak-ng's sentences in order, the persistent hook reached between the sentences it
//! was sent between, and stored there in the history.

use serde_json::{json, Value};

use super::chromium::Chromium;
use super::driver::Page;
use super::hookwire_page::*;
use crate::common::*;
use crate::voice::{command_tts, skill_with_persistent_hook, text_then_tool};

#[tokio::test]
async fn the_audio_queue_plays_in_order_and_stores_the_hook_where_it_was_spoken_in_chromium() {
    let Some(mut browser) = Chromium::launch().await else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let skills = skill_with_persistent_hook(workspace.path());
    upstream.push(Reply::text(&["[NEED_TOOL] look"]));
    upstream.push(text_then_tool(
        "Let me look at the files. This takes a moment.",
    ));
    upstream.push(Reply::text(&["There is one file. It is called skills."]));
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
    browser.open(&server.url("/")).await;
    browser.wait_info("loaded").await;
    assert_eq!(browser.hidden("speaker").await, json!(false));
    // No stt configured: no microphone.
    assert_eq!(browser.hidden("mic").await, json!(true));
    browser.click("speaker").await;
    assert_eq!(
        browser
            .eval("document.getElementById('speaker').getAttribute('aria-pressed')")
            .await,
        json!("true")
    );
    browser.send("what is here?").await;
    browser
        .wait_for("window.hookwireAudio.played.some(p => p.type === 'hook') && !window.hookwireAudio.busy")
        .await;
    browser.wait_idle().await;
    let played = browser.eval("window.hookwireAudio.played").await;
    let played = played.as_array().unwrap();
    let audio: Vec<&Value> = played.iter().filter(|p| p["type"] == "audio").collect();
    // Each segment played to its end, in order.
    assert!(audio.iter().all(|a| a["ended"] == true), "{played:#?}");
    let seqs: Vec<u64> = audio.iter().map(|a| a["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..audio.len() as u64).collect::<Vec<_>>());
    let order: Vec<String> = played
        .iter()
        .map(|p| match p["type"].as_str() {
            Some("hook") => format!("HOOK:{}", p["name"].as_str().unwrap()),
            _ => p["text"].as_str().unwrap().to_string(),
        })
        .collect();
    assert!(
        order.ends_with(&[
            "Let me look at the files.".to_string(),
            "This takes a moment.".to_string(),
            "HOOK:seen".to_string(),
            "There is one file.".to_string(),
            "It is called skills.".to_string(),
        ]),
        "{order:?}"
    );
    assert!(browser.count(HOOK_CHIP).await.as_u64().unwrap() >= 1);
    // The history (the chat's `done.turn`): the question, the plan, what was spoken before the
    // hook with the call it made, the call's result, the hook, then the answer spoken after it.
    let history = browser.stored("history").await;
    let history = history.as_array().unwrap();
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "assistant",
            "tool",
            "system",
            "assistant"
        ],
        "{history:#?}"
    );
    assert!(history[2]["content"]
        .as_str()
        .unwrap()
        .ends_with("Let me look at the files. This takes a moment."));
    assert_eq!(history[4]["_hook"]["name"], "seen");
    assert_eq!(
        history[5]["content"],
        "There is one file. It is called skills."
    );
    server.shutdown().await;
}
