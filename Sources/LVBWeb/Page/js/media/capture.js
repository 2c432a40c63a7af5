// This browser's own camera and microphone: a co-host's on stage, or a
// host's in place of its node's sources. Asked for with the bus event
// "page:camera" {on} (the link-mic widget's button, the host's "Go live with
// my camera", or by itself on stage when a co-host's node has no stage
// sources of its own); it opens the devices
// (getUserMedia: a secure context only, such as http://127.0.0.1), tells the
// node ({"cmd":"camera","on":true}) and, once the node answers with the
// stage's settings (stage_camera), encodes with WebCodecs — VP8 (realtime)
// and Opus (48 kHz, 20 ms) — and sends each chunk as a binary message in the
// node's own media frame layout (frame.js), its capture time on the node's
// clock. The node asks for keyframes (stage_keyframe) and sets the bitrate
// (stage_bitrate). It says where it stands with "page:camera_state" {state}:
// 'off', 'opening', 'on' or 'unavailable'.

import { probe } from '../probe.js';
import { audioKind, headerSize, videoKind } from './frame.js';

/** Encoded chunks waiting in the encoder at most; a slower encoder drops pictures. */
const maxEncodeQueue = 2;
/** Socket backlog above which video waits (then restarts at a keyframe). */
const maxBacklog = 1024 * 1024;
/** The node's Opus rate (MediaConstants.audioBitrate). */
const opusBitrate = 48000;

let bus = null;
let cam = null;
let hasStageSources = false;

/**
 * Wires a button that turns this page's camera on and off ("page:camera")
 * and says where it stands: `idle` when off, then "Opening camera…" and
 * "Stop my camera"; class `live` while on.
 */
export function cameraButton(button, theBus, idle) {
  let state = 'off';
  button.addEventListener('click', () => {
    theBus.emit('page:camera', { on: state !== 'on' && state !== 'opening' });
  });
  theBus.on('page:camera_state', ({ state: now }) => {
    state = now;
    button.disabled = now === 'opening';
    button.textContent = { on: 'Stop my camera', opening: 'Opening camera…' }[now] ?? idle;
    button.classList.toggle('live', now === 'on');
  });
}

export function start(theBus) {
  bus = theBus;
  setState('off');
  bus.on('hello', (m) => { hasStageSources = m.stage_sources === true; });
  bus.on('page:camera', ({ on }) => (on ? open() : close(true)));
  bus.on('page:stage', ({ onStage }) => {
    if (onStage && !hasStageSources && !cam) open();
    if (!onStage) close(false);
  });
  bus.on('stage_camera', (m) => (m.on ? begin(m) : close(false)));
  bus.on('stage_keyframe', () => { if (cam) cam.keyframe = true; });
  bus.on('stage_bitrate', (m) => setBitrate(m.kbps));
  bus.on('page:socket', ({ state }) => { if (state !== 'open') close(false); });
  bus.on('room_closed', () => close(false));
}

function setState(state) {
  probe.camera = state;
  bus.emit('page:camera_state', { state });
}

function unavailable(why) {
  setState('unavailable');
  const stays = hasStageSources ? "the stage stays on the node's own sources" : 'the stage has no picture or sound from you';
  bus.emit('page:toast', { message: `Camera unavailable: ${why} — ${stays}.` });
}

async function open() {
  if (cam) return;
  if (!window.isSecureContext || !navigator.mediaDevices?.getUserMedia) {
    return unavailable('this page is not on a secure context (open it at http://127.0.0.1 or localhost)');
  }
  if (!window.MediaStreamTrackProcessor || !window.VideoEncoder || !window.AudioEncoder) {
    return unavailable('this browser lacks WebCodecs encoders or MediaStreamTrackProcessor');
  }
  const c = { stream: null, settings: null, video: null, audio: null, readers: [], keyframe: true, stopped: false };
  cam = c;
  setState('opening');
  try {
    c.stream = await navigator.mediaDevices.getUserMedia({
      video: { width: { max: 640 }, height: { max: 360 }, frameRate: { max: 30 } },
      audio: { sampleRate: 48000, channelCount: 1, echoCancellation: true },
    });
  } catch (e) {
    cam = null;
    return unavailable(e?.name === 'NotAllowedError' ? 'permission refused' : (e?.message || String(e)));
  }
  if (c.stopped) return stopTracks(c);
  // The node switches the stage to this page and answers with stage_camera.
  if (!bus.send({ cmd: 'camera', on: true })) close(false);
}

/** The node took the camera: encoders set up to its settings, then the devices' frames flow. */
function begin(settings) {
  const c = cam;
  if (!c || c.stopped || c.settings) {
    if (c?.settings) setBitrate(settings.kbps);
    return;
  }
  c.settings = settings;
  // The node's clock minus ours: capture times go to the node on its clock.
  c.skew = settings.clock_us - wallMicros();
  c.gopMicros = Math.max(0.1, settings.gop || 2) * 1e6;
  c.kbps = settings.kbps;
  const [videoTrack] = c.stream.getVideoTracks();
  const [audioTrack] = c.stream.getAudioTracks();
  if (videoTrack) pumpVideo(c, videoTrack);
  if (audioTrack) pumpAudio(c, audioTrack);
  setState('on');
}

function wallMicros() {
  return (performance.timeOrigin + performance.now()) * 1000;
}

/**
 * Capture times: a track's frames carry microseconds on the browser's media
 * clock; the smallest (wall − frame) difference seen is the closest mapping
 * onto the wall clock (the frame that waited least), then shifted onto the node's.
 */
function captureMapper(c) {
  let offset = Infinity;
  return {
    seen(timestamp) { offset = Math.min(offset, wallMicros() - timestamp); },
    micros(timestamp) { return Math.max(0, Math.round(timestamp + offset + c.skew)); },
  };
}

function send(kind, keyframe, captureMicros, chunk) {
  const buffer = new ArrayBuffer(headerSize + chunk.byteLength);
  const view = new DataView(buffer);
  view.setUint8(0, kind);
  view.setUint8(1, keyframe ? 1 : 0);
  view.setBigUint64(2, BigInt(captureMicros));
  view.setUint32(10, 0);  // the node numbers the stream
  chunk.copyTo(new Uint8Array(buffer, headerSize));
  return bus.sendMedia(buffer);
}

function videoConfig(c, width, height) {
  return {
    codec: 'vp8', width, height, bitrate: c.kbps * 1000, framerate: c.settings.fps || 30,
    latencyMode: 'realtime', bitrateMode: 'variable',
  };
}

function pumpVideo(c, track) {
  const clock = captureMapper(c);
  let size = null;
  let lastKey = -Infinity;
  c.video = new VideoEncoder({
    output: (chunk) => {
      if (c.stopped) return;
      const key = chunk.type === 'key';
      // A picture the socket cannot take breaks the chain: the next one is a keyframe.
      if (c.videoBroken && !key) return;
      if (bus.backlog() > maxBacklog || !send(videoKind, key, clock.micros(chunk.timestamp), chunk)) {
        c.videoBroken = true;
        c.keyframe = true;
        return;
      }
      c.videoBroken = false;
      probe.cameraFrames += 1;
      if (key) probe.cameraKeyframes += 1;
    },
    error: (e) => fail(c, `video encoder: ${e.message}`),
  });
  c.configureVideo = () => {
    if (size) c.video.configure(videoConfig(c, size.width, size.height));
    c.keyframe = true;
  };
  read(c, track, (frame) => {
    clock.seen(frame.timestamp);
    const width = frame.displayWidth & ~1, height = frame.displayHeight & ~1;
    if (!size || size.width !== width || size.height !== height) {
      size = { width, height };
      c.configureVideo();
    }
    if (c.video.encodeQueueSize > maxEncodeQueue) return;
    const key = c.keyframe || frame.timestamp - lastKey >= c.gopMicros;
    if (key) {
      c.keyframe = false;
      lastKey = frame.timestamp;
    }
    c.video.encode(frame, { keyFrame: key });
  });
}

function pumpAudio(c, track) {
  const clock = captureMapper(c);
  const channels = c.settings.channels || 1;
  c.audio = new AudioEncoder({
    output: (chunk) => {
      if (c.stopped) return;
      if (send(audioKind, false, clock.micros(chunk.timestamp), chunk)) probe.cameraAudioPackets += 1;
    },
    error: (e) => fail(c, `audio encoder: ${e.message}`),
  });
  const config = { codec: 'opus', sampleRate: 48000, numberOfChannels: channels, bitrate: opusBitrate };
  try {
    c.audio.configure({ ...config, opus: { frameDuration: 20000 } });
  } catch {
    c.audio.configure(config);  // a browser without Opus options: its default frames are 20 ms
  }
  let warned = false;
  read(c, track, (data) => {
    clock.seen(data.timestamp);
    if (data.sampleRate !== 48000) {
      if (!warned) bus.emit('page:toast', { message: `Microphone at ${data.sampleRate} Hz: the node takes 48 kHz, so no sound goes on stage.` });
      warned = true;
      return;
    }
    if (data.numberOfChannels === channels) {
      c.audio.encode(data);
      return;
    }
    const mixed = downmix(data, channels);
    c.audio.encode(mixed);
    mixed.close();
  });
}

/** The first `channels` channels' average (mono: all of them) as a new AudioData. */
function downmix(data, channels) {
  const n = data.numberOfFrames;
  const out = new Float32Array(n * channels);
  const plane = new Float32Array(n);
  for (let ch = 0; ch < data.numberOfChannels; ch += 1) {
    data.copyTo(plane, { planeIndex: ch, format: 'f32-planar' });
    const target = channels === 1 ? 0 : Math.min(ch, channels - 1);
    const gain = channels === 1 ? 1 / data.numberOfChannels : 1;
    for (let i = 0; i < n; i += 1) out[target * n + i] += plane[i] * gain;
  }
  return new AudioData({ format: 'f32-planar', sampleRate: data.sampleRate, numberOfFrames: n,
                         numberOfChannels: channels, timestamp: data.timestamp, data: out });
}

/** Reads a track's frames into `take` until the camera stops; every frame is closed here. */
async function read(c, track, take) {
  const reader = new MediaStreamTrackProcessor({ track }).readable.getReader();
  c.readers.push(reader);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      try {
        if (!c.stopped) take(value);
      } finally {
        value.close();
      }
      if (c.stopped) break;
    }
  } catch (e) {
    if (!c.stopped) fail(c, e.message);
  }
}

function fail(c, why) {
  if (c !== cam) return;
  bus.emit('page:toast', { message: `Camera stopped: ${why}` });
  close(true);
}

function setBitrate(kbps) {
  const c = cam;
  if (!c?.settings || !(kbps > 0) || kbps === c.kbps) return;
  c.kbps = kbps;
  probe.cameraKbps = kbps;
  if (c.video?.state === 'configured') c.configureVideo();
}

function stopTracks(c) {
  for (const t of c.stream?.getTracks() ?? []) t.stop();
}

/** Stops the devices and encoders; `tellNode`: the page decided (the node did not). */
function close(tellNode) {
  const c = cam;
  if (!c) return;
  cam = null;
  c.stopped = true;
  for (const r of c.readers) r.cancel().catch(() => {});
  stopTracks(c);
  for (const e of [c.video, c.audio]) {
    if (e && e.state !== 'closed') e.close();
  }
  if (tellNode) bus.send({ cmd: 'camera', on: false });
  setState('off');
}
