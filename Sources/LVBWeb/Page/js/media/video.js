// The room's picture: VP8 frames from the node, decoded by WebCodecs and
// painted onto the canvas at most once per display refresh.

import { probe, addG2G } from '../probe.js';
import { parseFrame, RtpClock, videoKind } from './frame.js';

/** Frames waiting in the decoder past which it has fallen behind live: start again at the next keyframe. */
const maxQueued = 15;
/** Capture times kept for frames not painted yet; more means frames vanished inside the decoder. */
const maxCaptureTimes = 64;
const config = { codec: 'vp8', optimizeForLatency: true };

/** Decodes the node's video frames onto canvas. */
export function start(canvas, bus) {
  if (!('VideoDecoder' in window)) {
    bus.emit('error', { message: 'This browser cannot decode video here: WebCodecs needs a recent browser and a page opened on localhost or https.' });
    return;
  }
  const context = canvas.getContext('2d', { alpha: false, desynchronized: true });
  let clock = new RtpClock(90000);
  // Chunk timestamp → capture time (µs), to measure glass-to-glass when the frame is painted.
  const captureTimes = new Map();
  // Timestamps of frames decoded only to reach a replay's seek target: never painted.
  const catchUp = new Set();
  let decoder = null;
  let waitingForKeyframe = true;
  let unsupported = false;
  // The newest decoded frame not painted yet; an older one is dropped unpainted.
  let pending = null;
  let paintScheduled = false;

  function restart() {
    if (decoder && decoder.state !== 'closed') decoder.close();
    decoder = null;
    waitingForKeyframe = true;
    captureTimes.clear();
    catchUp.clear();
  }

  function makeDecoder() {
    const d = new VideoDecoder({
      output: decoded,
      error: (e) => {
        console.warn('video decoder error; waiting for the next keyframe', e);
        if (e.name === 'NotSupportedError') {
          unsupported = true;
          bus.emit('error', { message: 'This browser cannot decode VP8 video.' });
        }
        if (decoder === d) restart();
      },
    });
    d.configure(config);
    return d;
  }

  function decoded(frame) {
    probe.videoFramesDecoded += 1;
    if (catchUp.delete(frame.timestamp)) {
      frame.close();
      return;
    }
    if (pending) drop(pending);
    pending = frame;
    if (!paintScheduled) {
      paintScheduled = true;
      requestAnimationFrame(paint);
    }
  }

  function drop(frame) {
    captureTimes.delete(frame.timestamp);
    frame.close();
  }

  function paint() {
    paintScheduled = false;
    const frame = pending;
    pending = null;
    if (!frame) return;
    if (canvas.width !== frame.displayWidth || canvas.height !== frame.displayHeight) {
      canvas.width = frame.displayWidth;
      canvas.height = frame.displayHeight;
    }
    context.drawImage(frame, 0, 0, canvas.width, canvas.height);
    probe.videoFramesPainted += 1;
    const captured = captureTimes.get(frame.timestamp);
    if (captured) addG2G((Date.now() * 1000 - captured) / 1000);
    drop(frame);
  }

  bus.onMedia((buffer) => {
    const f = parseFrame(buffer);
    if (!f || f.kind !== videoKind || unsupported) return;
    probe.videoBytes += f.data.byteLength;
    if (f.afterLoss) {
      probe.videoLossGaps += 1;
      // A picture whose references never reached the page: decode again from a keyframe.
      if (!f.keyframe) waitingForKeyframe = true;
    }
    const timestamp = clock.micros(f.rtpTimestamp);
    if (decoder && decoder.decodeQueueSize > maxQueued) restart();
    if (waitingForKeyframe && !f.keyframe) return;
    decoder ??= makeDecoder();
    waitingForKeyframe = false;
    if (f.catchUp) {
      catchUp.add(timestamp);
      if (catchUp.size > maxCaptureTimes) catchUp.delete(catchUp.values().next().value);
    } else if (f.captureMicros) {
      captureTimes.set(timestamp, f.captureMicros);
      if (captureTimes.size > maxCaptureTimes) captureTimes.delete(captureTimes.keys().next().value);
    }
    try {
      decoder.decode(new EncodedVideoChunk({ type: f.keyframe ? 'key' : 'delta', timestamp, data: f.data }));
    } catch (e) {
      console.warn('video frame refused by the decoder; waiting for the next keyframe', e);
      restart();
    }
  });

  // A new connection may start in the middle of a group of pictures.
  bus.on('page:socket', ({ state }) => { if (state === 'open') restart(); });
  // Another room is another stream: its own timestamps, from its next keyframe (a preloaded room sends one at once).
  bus.on('switched', () => {
    clock = new RtpClock(90000);
    restart();
  });
  // A replay's seek: the node sends the pictures from the keyframe before the target on.
  bus.on('replay_state', (m) => { if (m.seek) restart(); });
}
