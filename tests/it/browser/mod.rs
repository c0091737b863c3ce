//! The browser page in real headless Chromium (over the DevTools protocol) and Firefox (over
//! WebDriver BiDi), driven through one page object (`hookwire_page.rs`: what a person does on
//! the page and what they see, so the tests hold no selectors or scripts of their own but their
//! one-off probes). By topic: a chat with tools, hooks, the history across a reload and hostile
//! Markdown (`chat.rs`); a lost connection and reconnects (`connection.rs`); approval
//! (`approval.rs`); compaction (`compaction.rs`); conversations and exports
//! (`conversations.rs`); the Hooks tab and the trace timeline (`hooks_tab.rs`), its replay of
//! recorded hook traffic (`hook_replay.rs`); what a person
//! meets beside the protocol (`page.rs`, `layout.rs`, `forks.rs`, `failures.rs`, `accessibility.rs`,
//! `screenshots.rs`); the
//! access token (`token.rs`), signing in with a JWT (`sign_in.rs`), trace ids (`trace_id.rs`) and voice (`voice.rs`). Beside
//! hookwire's own page, the AI SDK example a user copies (`examples/ai-sdk`, built and served
//! from `static_dir`) in Chromium (`examples.rs`, its selectors in one small struct there).
//! Without a browser the tests say they were skipped and why; under `CI=true` they fail instead.

mod accessibility;
mod approval;
mod chat;
mod chromium;
mod compaction;
mod connection;
mod conversations;
mod driver;
mod examples;
mod failures;
mod firefox;
mod forks;
mod hook_replay;
mod hooks_tab;
mod hookwire_page;
mod layout;
mod page;
mod screenshots;
mod sign_in;
mod token;
mod trace_id;
mod voice;
