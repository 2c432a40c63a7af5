// The room's sound: Opus packets from the node, decoded by WebCodecs and
// played through an AudioWorklet (audio-worklet.js). Decoding starts at once;
// the speakers wait for the first click or key press, because browsers keep
// an AudioContext silent until the user has interacted with the page.

import { probe } from '../probe.js';
import { parseFrame, RtpClock, audioKind } from './frame.js';

const sampleRate = 48000;
const defaultChannels = 2;

/** Decodes the node's audio packets, and plays them once the user has interacted. */
export function start(bus) {
  // The video module already tells the user when WebCodecs is missing.
  if (!('AudioDecoder' in window)) return;
  let clock = new RtpClock(sampleRate);
  let channels = defaultChannels;
  let decoder = null;
  let player = null;

  function restart() {
    if (decoder && decoder.state !== 'closed') decoder.close();
    decoder = null;
  }

  function makeDecoder() {
    const d = new AudioDecoder({
      output: decoded,
      error: (e) => {
        console.warn('audio decoder error; starting again', e);
        if (decoder === d) restart();
      },
    });
    d.configure({ codec: 'opus', sampleRate, numberOfChannels: channels });
    return d;
  }

  function decoded(data) {
    probe.audioFramesDecoded += 1;
    if (!player) {
      data.close();
      return;
    }
    const planes = [];
    for (let c = 0; c < data.numberOfChannels; c++) {
      const plane = new Float32Array(data.numberOfFrames);
      data.copyTo(plane, { planeIndex: c, format: 'f32-planar' });
      planes.push(plane);
    }
    data.close();
    player.port.postMessage(planes, planes.map((p) => p.buffer));
  }

  async function startSpeakers() {
    removeEventListener('pointerdown', startSpeakers, true);
    removeEventListener('keydown', startSpeakers, true);
    // Created inside the gesture, so the browser lets it run.
    const context = new AudioContext({ sampleRate, latencyHint: 'interactive' });
    context.onstatechange = () => { probe.audioOutput = context.state; };
    await context.audioWorklet.addModule('js/media/audio-worklet.js');
    const node = new AudioWorkletNode(context, 'lvb-player', { numberOfInputs: 0, outputChannelCount: [2] });
    node.connect(context.destination);
    await context.resume();
    player = node;
  }
  addEventListener('pointerdown', startSpeakers, true);
  addEventListener('keydown', startSpeakers, true);

  bus.on('hello', (hello) => {
    const announced = hello.channels || defaultChannels;
    if (announced !== channels) {
      channels = announced;
      restart();
    }
  });

  // Another room is another stream, with timestamps of its own.
  bus.on('switched', () => {
    clock = new RtpClock(sampleRate);
    restart();
  });
  // A replay's seek: what was queued is from before it.
  bus.on('replay_state', (m) => { if (m.seek) restart(); });

  bus.onMedia((buffer) => {
    const f = parseFrame(buffer);
    if (!f || f.kind !== audioKind) return;
    if (f.afterLoss) probe.audioLossGaps += 1;
    const timestamp = clock.micros(f.rtpTimestamp);
    decoder ??= makeDecoder();
    try {
      decoder.decode(new EncodedAudioChunk({ type: 'key', timestamp, data: f.data }));
    } catch (e) {
      console.warn('audio packet refused by the decoder', e);
      restart();
    }
  });
}
