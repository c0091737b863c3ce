// Voice on the page (voice.js): the speaker toggle, the audio queue, the microphone.

import { $, toast } from './dom.js';
import { authHeaders } from './server.js';
import { access, library } from './state.js';
import { drawHook } from './transcript.js';
import { createAudioQueue, record, setSpoken, spoken, transcribe } from './voice.js';

export const voice = { tts: false, stt: false, recording: null, queue: createAudioQueue({ onHook: (frame) => drawHook(frame) }) };
window.hookwireAudio = voice.queue; // what played, in order (the browser tests read it)

export function renderSpeaker() {
  const on = voice.tts && spoken(library.current);
  $('speaker').hidden = !voice.tts;
  $('speaker').setAttribute('aria-pressed', on ? 'true' : 'false');
  $('speaker').textContent = on ? 'Voice on' : 'Voice off';
}

// What /api/info says of voice: the speaker shows with speech, the microphone with transcription
// (and a browser that records).
export function useVoiceInfo(info) {
  voice.tts = !!(info.voice && info.voice.tts);
  voice.stt = !!(info.voice && info.voice.stt);
  $('mic').hidden = !voice.stt || !(navigator.mediaDevices && window.MediaRecorder);
  renderSpeaker();
}

$('speaker').addEventListener('click', () => {
  setSpoken(library.current, !spoken(library.current));
  if (!spoken(library.current)) voice.queue.stop();
  renderSpeaker();
});

$('mic').addEventListener('click', async () => {
  const button = $('mic');
  if (voice.recording) {
    const recording = voice.recording;
    voice.recording = null;
    button.setAttribute('aria-pressed', 'false');
    button.textContent = 'Mic';
    try {
      const text = await transcribe(await recording.stop(), authHeaders(access.token));
      if (text) $('input').value = ($('input').value ? $('input').value + ' ' : '') + text;
      $('input').focus();
    } catch (error) {
      toast('error', 'transcription failed: ' + error.message);
    }
    return;
  }
  try {
    voice.recording = await record();
    button.setAttribute('aria-pressed', 'true');
    button.textContent = 'Stop mic';
  } catch (error) {
    toast('error', 'the microphone is not available: ' + error.message);
  }
});
