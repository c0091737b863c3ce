//! The page object of the browser tests: what a person does on the hookwire page and what they
//! see, as methods, so that the page's element ids, selectors and storage keys are written once,
//! here, and a test reads as the steps it takes. Every `Page` (Chromium, Firefox) is one.
//! A test's own one-off probe (a shape only it checks) stays in the test; what two tests ask,
//! or one test twice, lives here.

use serde_json::Value;

use super::driver::Page;

// ─── selectors of the transcript and the panel ───

/// A user message, an answer (a streaming one too).
pub const USER_MESSAGE: &str = ".msg.user";
pub const ANSWER: &str = ".msg.assistant";
pub const PLAN: &str = ".plan";
pub const TOOL_CARD: &str = ".tool-card";
/// A tool card's one line: the tool's name and how it went.
pub const TOOL_SUMMARY: &str = ".tool-card summary";
pub const HOOK_CHIP: &str = ".hook-chip";
/// A failed chat: its box, and the headline in it.
pub const CHAT_ERROR: &str = ".chat-error";
pub const CHAT_ERROR_TITLE: &str = ".chat-error .error-title";
/// The ways on under the last exchange (Regenerate; under a failure: Retry, Start a new chat, …).
pub const ACTIONS: &str = ".fork-actions button";
/// A chat that ended otherwise than completed ("ended: cancelled").
pub const NOTE: &str = ".note";
pub const TOAST: &str = ".toast";
pub const DIVIDER: &str = ".compact-divider";
pub const APPROVAL_CARD: &str = ".approval-card";
pub const APPROVE: &str = ".approval-card button.approve";
pub const DENY: &str = ".approval-card button.deny";
/// A turn's foot (model, tokens), and one with its hook runs.
pub const TURN: &str = ".turn";
pub const TRACED_TURN: &str = ".turn.traced";
pub const HOOK_CARD: &str = "#hooks .hook-card";
/// The sign-in panel (an id, for `text` and `hidden`).
pub const SIGN_IN: &str = "sign-in";

const IDLE: &str = "document.body.dataset.state === 'idle'";

/// `text` as a JavaScript string literal.
fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// The localStorage key of the current conversation's `name` (history, transcript, approval,
/// sessionHooks), as a JavaScript expression.
fn key_js(name: &str) -> String {
    format!("'hookwire.conversation.' + JSON.parse(localStorage.getItem('hookwire.current')) + '.{name}'")
}

/// The number of elements `selector` finds, as a JavaScript expression.
fn count_js(selector: &str) -> String {
    format!("document.querySelectorAll({}).length", js(selector))
}

/// The last answer's text (or '' before one), as a JavaScript expression.
fn last_answer_js() -> String {
    format!(
        "(Array.from(document.querySelectorAll({})).pop()?.innerText || '')",
        js(ANSWER)
    )
}

/// The hookwire page, as a person meets it.
pub trait HookwirePage: Page {
    // ─── getting there ───

    /// Navigates and waits for the page to be connected and idle.
    async fn open(&mut self, url: &str) {
        self.navigate(url).await;
        self.wait_ready().await;
    }

    /// Reloads and waits for the page to be connected and idle.
    async fn reload_and_wait(&mut self) {
        self.reload().await;
        self.wait_ready().await;
    }

    /// Waits until the page is loaded, connected, idle, and `/api/info` + `/api/skills`
    /// answered (banner and skills drawn).
    async fn wait_ready(&mut self) {
        self.wait_for(&format!(
            "document.readyState === 'complete' && {IDLE} && !!document.body.dataset.info"
        ))
        .await;
    }

    // ─── the composer and the header ───

    /// Focuses the message box, types `text` like a person, presses Enter.
    async fn send(&mut self, text: &str) {
        self.eval("document.getElementById('input').focus()").await;
        self.type_keys_and_enter(text).await;
    }

    /// What the message box holds.
    async fn draft(&mut self) -> Value {
        self.eval("document.getElementById('input').value").await
    }

    /// Clicks the element with id `id` (a button, a switch).
    async fn click(&mut self, id: &str) {
        self.eval(&format!("document.getElementById({}).click()", js(id)))
            .await;
    }

    /// The tools switch: on by default, off for a direct call (one upstream request per chat).
    async fn toggle_tools(&mut self) {
        self.click("tools-switch").await;
    }

    /// The trace switch: each turn's hook runs under its answer.
    async fn toggle_trace(&mut self) {
        self.click("trace-switch").await;
    }

    async fn stop(&mut self) {
        self.click("stop").await;
    }

    async fn compact(&mut self) {
        self.click("compact").await;
    }

    /// New: a new conversation (a streaming reply is stopped first).
    async fn new_chat(&mut self) {
        self.click("new-chat").await;
    }

    async fn dismiss_banner(&mut self) {
        self.click("dismiss-banner").await;
    }

    /// The theme switch set to `theme` (system, light, dark), as a person picks it.
    async fn set_theme(&mut self, theme: &str) {
        self.eval(&format!(
            "(() => {{ const s = document.getElementById('theme'); s.value = {}; s.dispatchEvent(new Event('change')); }})()",
            js(theme)
        ))
        .await;
    }

    /// Whether the element with id `id` is not on screen: not rendered at all, whatever its
    /// `hidden` attribute says (a style may override it, and the person sees the style).
    async fn hidden(&mut self, id: &str) -> Value {
        self.eval(&format!(
            "document.getElementById({}).getClientRects().length === 0",
            js(id)
        ))
        .await
    }

    /// The tooltip (title) of the element with id `id`.
    async fn tooltip(&mut self, id: &str) -> Value {
        self.eval(&format!("document.getElementById({}).title", js(id)))
            .await
    }

    /// The box of the first element `selector` finds, on screen: {left, right, top, bottom}.
    async fn rect(&mut self, selector: &str) -> Value {
        self.eval(&format!(
            "(() => {{ const b = document.querySelector({}).getBoundingClientRect(); return {{left: b.left, right: b.right, top: b.top, bottom: b.bottom}}; }})()",
            js(selector)
        ))
        .await
    }

    /// How opaque the first element `selector` finds is drawn (1: fully shown, 0: not seen).
    async fn opacity(&mut self, selector: &str) -> Value {
        self.eval(&format!(
            "Number(getComputedStyle(document.querySelector({})).opacity)",
            js(selector)
        ))
        .await
    }

    async fn disabled(&mut self, id: &str) -> Value {
        self.eval(&format!("document.getElementById({}).disabled", js(id)))
            .await
    }

    /// The text of the element with id `id`.
    async fn text(&mut self, id: &str) -> Value {
        self.eval(&format!("document.getElementById({}).innerText", js(id)))
            .await
    }

    /// The chat state: idle, running or offline.
    async fn state(&mut self) -> Value {
        self.eval("document.body.dataset.state").await
    }

    /// How `/api/info` went: loaded, failed (or null before it answered).
    async fn info(&mut self) -> Value {
        self.eval("document.body.dataset.info").await
    }

    // ─── signing in ───

    /// Waits until the sign-in panel is on screen with its token field focused.
    async fn wait_sign_in(&mut self) {
        self.wait_for(&format!(
            "document.getElementById({})?.getClientRects().length > 0 && document.activeElement?.id === 'sign-in-token'",
            js(SIGN_IN)
        ))
        .await;
    }

    /// Pastes `token` into the sign-in panel's field and presses Enter.
    async fn sign_in(&mut self, token: &str) {
        self.eval("document.getElementById('sign-in-token').focus()")
            .await;
        self.type_keys_and_enter(token).await;
    }

    /// Waits until the sign-in panel says why a token was refused, in words containing `part`.
    async fn wait_sign_in_problem(&mut self, part: &str) {
        self.wait_for(&format!(
            "document.getElementById('sign-in-problem')?.getClientRects().length > 0 && document.getElementById('sign-in-problem').innerText.includes({})",
            js(part)
        ))
        .await;
    }

    // ─── the side panel ───

    async fn toggle_panel(&mut self) {
        self.click("toggle-panel").await;
    }

    /// Opens the panel (on a phone it is closed) on tab `name`: conversations, skills, hooks.
    async fn open_panel_tab(&mut self, name: &str) {
        self.eval(&format!(
            "(() => {{ if (document.getElementById('panel').hidden) document.getElementById('toggle-panel').click(); document.getElementById('tab-' + {}).click(); }})()",
            js(name)
        ))
        .await;
    }

    /// The Chats list as shown: each date group's label with its titles, top first.
    async fn chat_groups(&mut self) -> Value {
        self.eval("Array.from(document.querySelectorAll('#conversations .date-group')).map(g => [g.querySelector('.date-label').innerText, Array.from(g.querySelectorAll('.title')).map(t => t.textContent)])").await
    }

    /// Types `query` into the Chats list's search box.
    async fn search_chats(&mut self, query: &str) {
        self.eval(&format!(
            "(() => {{ const s = document.getElementById('chat-search'); s.value = {}; s.dispatchEvent(new Event('input')); }})()",
            js(query)
        ))
        .await;
    }

    /// The titles in the Chats list, top first, and the title in the header.
    async fn chat_titles(&mut self) -> Value {
        self.eval("[Array.from(document.querySelectorAll('#conversations .title')).map(e => e.textContent), document.getElementById('conversation-title').textContent]").await
    }

    /// Clicks the conversation in the Chats list whose row shows `title`.
    async fn open_chat(&mut self, title: &str) {
        self.eval(&format!(
            "Array.from(document.querySelectorAll('#conversations .open')).find(b => b.innerText.includes({})).click()",
            js(title)
        ))
        .await;
    }

    /// Rename: the current row becomes a form (its field takes the focus).
    async fn start_rename(&mut self) {
        self.click("rename-conversation").await;
    }

    /// Renames the current conversation through its form.
    async fn rename_to(&mut self, title: &str) {
        self.start_rename().await;
        self.eval(&format!(
            "(() => {{ const i = document.querySelector('.rename-input'); i.value = {}; i.form.requestSubmit(); }})()",
            js(title)
        ))
        .await;
    }

    /// One click on Delete (the first asks again, the second deletes).
    async fn delete_chat(&mut self) {
        self.click("delete-conversation").await;
    }

    /// Delete from the keyboard's point of view: focused, then clicked (armed, it asks again).
    async fn arm_delete(&mut self) {
        self.eval("(() => { const d = document.getElementById('delete-conversation'); d.focus(); d.click(); })()").await;
    }

    /// What Delete says now ("Delete", "Delete for good?").
    async fn delete_label(&mut self) -> Value {
        self.eval("document.getElementById('delete-conversation').textContent")
            .await
    }

    /// Downloads the current conversation as `kind`: json or md.
    async fn export_as(&mut self, kind: &str) {
        self.click(&format!("export-{kind}")).await;
    }

    /// Whether the JSON and the Markdown export are hidden.
    async fn exports_hidden(&mut self) -> Value {
        self.eval("[document.getElementById('export-json').hidden, document.getElementById('export-md').hidden]").await
    }

    /// The Skills tab's switch of skill `name`.
    async fn toggle_skill(&mut self, name: &str) {
        self.eval(&format!(
            "document.querySelector('#skills input[data-skill=' + {} + ']').click()",
            js(name)
        ))
        .await;
    }

    async fn skill_checked(&mut self, name: &str) -> Value {
        self.eval(&format!(
            "document.querySelector('#skills input[data-skill=' + {} + ']').checked",
            js(name)
        ))
        .await
    }

    /// The Hooks tab as data: per level, each card's name, event, matcher, tags, what it runs,
    /// place and metrics; the untrusted files with their commands.
    async fn hooks_tab(&mut self) -> Value {
        self.eval("(() => { const out = {}; for (const level of document.querySelectorAll('#hooks .hook-level')) {
            out[level.dataset.level] = { count: level.querySelector('h3 .count').textContent,
              hooks: Array.from(level.querySelectorAll('.hook-card')).map(c => ({ name: c.querySelector('.hook-name').textContent,
                event: c.querySelector('.hook-event').textContent, matcher: c.querySelector('.hook-matcher')?.textContent || null,
                tags: Array.from(c.querySelectorAll('.tag')).map(t => t.textContent), what: c.querySelector('.hook-what')?.textContent || null,
                where: c.querySelector('.hook-where')?.textContent || null,
                metrics: Object.fromEntries(Array.from(c.querySelectorAll('[data-metric]')).map(m => [m.dataset.metric, m.textContent])) })),
              untrusted: Array.from(level.querySelectorAll('.untrusted-file')).map(u => u.innerText) }; }
          return out; })()").await
    }

    /// How many times the Hooks tab refreshed.
    async fn hook_refreshes(&mut self) -> u64 {
        self.eval(HOOK_REFRESHES).await.as_u64().unwrap_or(0)
    }

    /// Waits until the Hooks tab refreshed `times` times in all.
    async fn wait_hooks_refreshed(&mut self, times: u64) {
        self.wait_for(&format!("{HOOK_REFRESHES} >= {times}")).await;
    }

    /// Whether the Hooks tab refreshes by itself now.
    async fn hooks_polling(&mut self) -> Value {
        self.eval("document.getElementById('hooks').dataset.polling")
            .await
    }

    /// Waits until the hook card named `name` shows `value` for `metric` (runs, blocked, …).
    async fn wait_hook_metric(&mut self, name: &str, metric: &str, value: &str) {
        self.wait_for(&format!("{} === {}", metric_js(name, metric), js(value)))
            .await;
    }

    /// Asks the Hooks tab to replay the last `last` recorded events (types the number, clicks the
    /// button); returns what the button and the status said at once: `[disabled, label, status]`.
    async fn replay_recorded(&mut self, last: u32) -> Value {
        self.eval(&format!(
            "(() => {{ const n = document.getElementById('replay-last'); n.value = '{last}'; n.dispatchEvent(new Event('input'));
               const b = document.getElementById('replay-run'); b.click();
               return [b.disabled, b.textContent, document.getElementById('replay-status').textContent]; }})()"
        ))
        .await
    }

    /// Waits until the replay answered (a table, or what went wrong).
    async fn wait_replayed(&mut self) {
        self.wait_for(&format!("['done', 'failed'].includes({REPLAY_STATE})"))
            .await;
    }

    /// The replay as shown: its state, the status line, the button's label and state, the column
    /// headers, and each event's row (its result, event, when, outcome, the hook that decided)
    /// with the lines under it (`detail`).
    async fn replay_shown(&mut self) -> Value {
        self.eval(&format!("(() => {{ const b = document.getElementById('replay-run');
            return {{ state: {REPLAY_STATE}, status: document.getElementById('replay-status').innerText, button: b.textContent,
              disabled: b.disabled, live: document.getElementById('replay-status').getAttribute('aria-live'),
              headers: Array.from(document.querySelectorAll('#replay-result th')).map(h => h.textContent),
              rows: Array.from(document.querySelectorAll('#replay-result .replay-row')).map(r => {{
                const next = r.nextElementSibling;
                const cell = (name) => r.querySelector('.' + name).innerText;
                return {{ mark: cell('mark'), event: cell('event'), when: cell('when'), outcome: cell('outcome'), decided: cell('decided'),
                  detail: next && next.classList.contains('replay-detail') ? next.innerText.split('\\n').filter(Boolean) : [] }}; }}) }}; }})()"))
            .await
    }

    /// Ticks or clears "Only changed" under the replay.
    async fn replay_only_changed(&mut self, on: bool) {
        self.eval(&format!(
            "(() => {{ const c = document.getElementById('replay-only-changed'); if (c.checked !== {on}) c.click(); }})()"
        ))
        .await;
    }

    // ─── the transcript ───

    /// The texts of the elements `selector` finds, in order.
    async fn texts(&mut self, selector: &str) -> Vec<String> {
        let shown = self
            .eval(&format!(
                "Array.from(document.querySelectorAll({})).map(e => e.innerText)",
                js(selector)
            ))
            .await;
        serde_json::from_value(shown).unwrap()
    }

    /// The text of the first element `selector` finds, or null.
    async fn first_text(&mut self, selector: &str) -> Value {
        self.eval(&format!(
            "document.querySelector({})?.innerText ?? null",
            js(selector)
        ))
        .await
    }

    /// The last answer's text ('' before the first).
    async fn last_answer(&mut self) -> Value {
        self.eval(&last_answer_js()).await
    }

    /// How many elements `selector` finds.
    async fn count(&mut self, selector: &str) -> Value {
        self.eval(&count_js(selector)).await
    }

    /// Clicks the first element `selector` finds.
    async fn click_first(&mut self, selector: &str) {
        self.eval(&format!("document.querySelector({}).click()", js(selector)))
            .await;
    }

    /// Approve on the first card waiting, with the mouse.
    async fn approve(&mut self) {
        self.click_first(APPROVE).await;
    }

    /// Approve from the keyboard: the button focused, then Enter.
    async fn approve_by_keyboard(&mut self) {
        self.eval(&format!("document.querySelector({}).focus()", js(APPROVE)))
            .await;
        self.press_enter().await;
    }

    /// Deny on the card waiting, with `reason`.
    async fn deny(&mut self, reason: &str) {
        self.eval(&format!(
            "(() => {{ document.querySelector('.approval-card .approval-reason').value = {}; document.querySelector({}).click(); }})()",
            js(reason),
            js(DENY)
        ))
        .await;
    }

    /// The approval card `index` (0: the first): its title, its outcome line, its buttons.
    async fn approval_card(&mut self, index: usize) -> Value {
        self.eval(&format!("(() => {{ const c = document.querySelectorAll('.approval-card')[{index}]; return [c.querySelector('.approval-title').innerText, c.querySelector('.approval-outcome')?.innerText ?? null, c.querySelectorAll('button').length]; }})()")).await
    }

    /// The last failure as the person sees it: its headline, its explanation, its technical
    /// details (folded: `detail_open`) and the ways on offered under it.
    async fn failure(&mut self) -> Value {
        self.eval(&format!("(() => {{ const boxes = document.querySelectorAll({}); const b = boxes[boxes.length - 1]; if (!b) return null;
            const d = b.querySelector('.error-detail');
            return {{ title: b.querySelector('.error-title').innerText, body: b.querySelector('.error-body')?.innerText ?? null,
              detail: d ? d.querySelector('code').textContent : null, detail_open: d ? d.open : null,
              actions: Array.from(document.querySelectorAll({})).map(a => a.innerText) }}; }})()", js(CHAT_ERROR), js(ACTIONS))).await
    }

    /// Clicks the way on (under the last exchange) that says `label`.
    async fn take_action(&mut self, label: &str) {
        self.eval(&format!(
            "Array.from(document.querySelectorAll({})).find(b => b.innerText === {}).click()",
            js(ACTIONS),
            js(label)
        ))
        .await;
    }

    /// Retry (under a failed exchange) or Regenerate (under an answered one).
    async fn retry(&mut self) {
        self.click_first(".fork-actions .retry").await;
    }

    async fn regenerate(&mut self) {
        self.click_first(".fork-actions .regenerate").await;
    }

    /// Edit on user message `index`: its form opens with the text field cleared and focused,
    /// ready for `type_keys_and_enter`.
    async fn edit_message(&mut self, index: usize) {
        self.eval(&format!(
            "document.querySelectorAll('.msg.user .edit-message')[{index}].click()"
        ))
        .await;
        self.eval("(() => { const a = document.querySelector('.edit-form textarea'); a.value = ''; a.focus(); })()")
            .await;
    }

    // ─── what the page keeps ───

    /// The current conversation's stored `name` (history, transcript, approval, sessionHooks),
    /// parsed; null when there is none.
    async fn stored(&mut self, name: &str) -> Value {
        self.eval(&format!(
            "JSON.parse(localStorage.getItem({}) ?? 'null')",
            key_js(name)
        ))
        .await
    }

    /// Stores `value` as the current conversation's `name` (as an older page or another tab
    /// might have left it); the page reads it at the next reload.
    async fn put_stored(&mut self, name: &str, value: &Value) {
        self.eval(&format!(
            "localStorage.setItem({}, {})",
            key_js(name),
            js(&value.to_string())
        ))
        .await;
    }

    /// Forgets the current conversation's stored `name`.
    async fn forget_stored(&mut self, name: &str) {
        self.eval(&format!("localStorage.removeItem({})", key_js(name)))
            .await;
    }

    /// The current conversation's id.
    async fn current_id(&mut self) -> Value {
        self.eval("JSON.parse(localStorage.getItem('hookwire.current'))")
            .await
    }

    /// The raw text of localStorage key `key`, or null.
    async fn local(&mut self, key: &str) -> Value {
        self.eval(&format!("localStorage.getItem({})", js(key)))
            .await
    }

    /// The localStorage keys that contain `part`.
    async fn local_keys(&mut self, part: &str) -> Value {
        self.eval(&format!(
            "Object.keys(localStorage).filter(k => k.includes({}))",
            js(part)
        ))
        .await
    }

    /// The history conversation `title` keeps, as `[role, content]` pairs (null: no such one).
    async fn history_of(&mut self, title: &str) -> Value {
        self.eval(&format!(
            "(() => {{ const meta = JSON.parse(localStorage.getItem('hookwire.conversations')).find(m => m.title === {});
                return meta ? JSON.parse(localStorage.getItem('hookwire.conversation.' + meta.id + '.history')).map(m => [m.role, m.content]) : null; }})()",
            js(title)
        ))
        .await
    }

    /// The access token the tab keeps (JSON text), or null.
    async fn tab_token(&mut self) -> Value {
        self.eval("sessionStorage.getItem('hookwire.token')").await
    }

    async fn forget_tab_token(&mut self) {
        self.eval("sessionStorage.removeItem('hookwire.token')")
            .await;
    }

    // ─── waiting ───

    async fn wait_idle(&mut self) {
        self.wait_for(IDLE).await;
    }

    /// Waits until the page is idle with an answer on screen.
    async fn wait_answer(&mut self) {
        self.wait_idle_with(ANSWER).await;
    }

    /// Waits until the page is idle with `n` answers on screen.
    async fn wait_answers(&mut self, n: usize) {
        self.wait_count(ANSWER, n).await;
    }

    /// Waits until the page is idle with `text` as its last answer.
    async fn wait_last_answer(&mut self, text: &str) {
        self.wait_for(&format!("{IDLE} && {} === {}", last_answer_js(), js(text)))
            .await;
    }

    /// Waits until the page is idle and `selector` finds something.
    async fn wait_idle_with(&mut self, selector: &str) {
        self.wait_for(&format!(
            "{IDLE} && !!document.querySelector({})",
            js(selector)
        ))
        .await;
    }

    /// Waits until the page is idle and `selector` finds `n` elements.
    async fn wait_count(&mut self, selector: &str, n: usize) {
        self.wait_for(&format!("{IDLE} && {} === {n}", count_js(selector)))
            .await;
    }

    /// Waits until `selector` finds something, whatever the chat state.
    async fn wait_shown(&mut self, selector: &str) {
        self.wait_for(&format!("!!document.querySelector({})", js(selector)))
            .await;
    }

    /// Waits until a reply streams: running, `answers` answers on screen, the last one showing
    /// `text`.
    async fn wait_streaming(&mut self, answers: usize, text: &str) {
        self.wait_for(&format!(
            "document.body.dataset.state === 'running' && {} === {answers} && {}.includes({})",
            count_js(ANSWER),
            last_answer_js(),
            js(text)
        ))
        .await;
    }

    /// Waits until the page is idle with an empty conversation on screen (the starters shown).
    async fn wait_empty_chat(&mut self) {
        self.wait_for(&format!(
            "{IDLE} && document.querySelectorAll('.msg').length === 0 && !!document.querySelector('#transcript .empty')"
        ))
        .await;
    }

    /// Waits until the page is idle with `text` as the first user message.
    async fn wait_chat_starting(&mut self, text: &str) {
        self.wait_for(&format!(
            "{IDLE} && document.querySelector({})?.innerText === {}",
            js(USER_MESSAGE),
            js(text)
        ))
        .await;
    }

    /// Waits until the socket is connected and the page idle.
    async fn wait_connected(&mut self) {
        self.wait_for(&format!(
            "{IDLE} && document.getElementById('status-text').innerText === 'connected'"
        ))
        .await;
    }

    /// Waits until the page knows it is offline and says it tries again.
    async fn wait_offline(&mut self) {
        self.wait_for("document.body.dataset.state === 'offline' && document.getElementById('status-text').innerText.startsWith('offline, retrying')").await;
    }

    /// Waits until `/api/info` went as `how` (loaded, failed), whatever the socket does.
    async fn wait_info(&mut self, how: &str) {
        self.wait_for(&format!(
            "!!document.body && document.body.dataset.info === {}",
            js(how)
        ))
        .await;
    }
}

impl<P: Page> HookwirePage for P {}

/// The replay's state (idle, running, done, failed), as a JavaScript expression.
const REPLAY_STATE: &str = "document.getElementById('replay').dataset.state";

/// How many times the Hooks tab refreshed, as a JavaScript expression.
const HOOK_REFRESHES: &str = "Number(document.getElementById('hooks').dataset.refreshes || 0)";

/// The metric `metric` of the hook card named `name`, as shown, as a JavaScript expression.
fn metric_js(name: &str, metric: &str) -> String {
    format!(
        "Array.from(document.querySelectorAll({})).find(c => c.querySelector('.hook-name').textContent === {})?.querySelector('[data-metric={metric}]')?.textContent",
        js(HOOK_CARD),
        js(name)
    )
}
