// Voice on the page (docs/voice.md): the audio queue of a spoken answer, the speaker toggle
// (per conversation) and the microphone (POST /api/transcribe).
//
// The queue plays `audio` frames one after another in the order they came, and a `hook` frame
// pushed between them is reached when playback gets there (`onHook`), as the first voice
// assistant did: the hook sits where it was spoken around. `stop()` ends playback at once
// (cancel, a new conversation). `played` lists what was played, in order (for the tests).
const MIME = { wav: 'audio/wav', mp3: 'audio/mpeg', opus: 'audio/ogg', ogg: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', pcm: 'audio/wav' };

export function createAudioQueue(options) {
  const onHook = (options && options.onHook) || function () {};
  let items = [];
  let playing = null;
  const queue = {
    played: [],
    get busy() { return playing !== null || items.length > 0; },
    push(item) {
      items.push(item);
      if (!playing) next();
    },
    stop() {
      items = [];
      if (playing) {
        playing.pause();
        playing.removeAttribute('src');
        playing = null;
      }
    },
  };
  function next() {
    while (items.length && items[0].type === 'hook') {
      const hook = items.shift();
      queue.played.push({ type: 'hook', name: hook.frame.hook.name });
      onHook(hook.frame);
    }
    const item = items.shift();
    if (!item) { playing = null; return; }
    const audio = new Audio('data:' + (MIME[item.format] || 'audio/' + item.format) + ';base64,' + item.data);
    playing = audio;
    const entry = { type: 'audio', seq: item.seq, text: item.text, ended: false, failed: null };
    queue.played.push(entry);
    const advance = () => { if (playing === audio) { playing = null; next(); } };
    audio.onended = () => { entry.ended = true; advance(); };
    // A segment that cannot play is skipped: the rest still plays in order.
    audio.onerror = () => { entry.failed = 'cannot decode'; advance(); };
    audio.play().catch((error) => { entry.failed = String(error); advance(); });
  }
  return queue;
}

// Records from the microphone after the browser's permission prompt; `stop()` resolves with
// the recording (a Blob).
export async function record() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  const recorder = new MediaRecorder(stream);
  const chunks = [];
  recorder.ondataavailable = (event) => { if (event.data.size) chunks.push(event.data); };
  const finished = new Promise((resolve) => {
    recorder.onstop = () => {
      for (const track of stream.getTracks()) track.stop();
      resolve(new Blob(chunks, { type: recorder.mimeType || 'audio/webm' }));
    };
  });
  recorder.start();
  return { stop() { if (recorder.state !== 'inactive') recorder.stop(); return finished; } };
}

// POST the recording to /api/transcribe with the page's token; its text.
export async function transcribe(blob, headers) {
  const response = await fetch('/api/transcribe', {
    method: 'POST',
    headers: Object.assign({ 'Content-Type': blob.type || 'audio/webm' }, headers || {}),
    body: blob,
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || ('/api/transcribe answered ' + response.status));
  return typeof body.text === 'string' ? body.text : '';
}

// Whether conversation `id` speaks its answers (kept per conversation, per browser).
export function spoken(id) { return localStorage.getItem('hookwire.voice.' + id) === 'on'; }
export function setSpoken(id, on) {
  if (on) localStorage.setItem('hookwire.voice.' + id, 'on');
  else localStorage.removeItem('hookwire.voice.' + id);
}
