// Plays the decoded Opus audio the page posts to it (one Float32Array per
// channel per message) from a small ring buffer: it starts once about 60 ms are
// queued, so network jitter does not click, and throws the oldest audio away
// when more than 200 ms pile up, so the sound stays live with the picture.

/** Queued audio at which playback (re)starts, in seconds. */
const target = 0.06;
/** Queued audio past which the oldest is dropped back to the target, in seconds. */
const ceiling = 0.2;
/** Ring size in seconds: the ceiling plus the longest Opus packet (120 ms), with room to spare. */
const capacitySeconds = 0.5;
const channels = 2;

class Player extends AudioWorkletProcessor {
  constructor() {
    super();
    // sampleRate is the AudioWorkletGlobalScope's: the context's rate.
    this.capacity = Math.ceil(sampleRate * capacitySeconds);
    this.rings = Array.from({ length: channels }, () => new Float32Array(this.capacity));
    this.readAt = 0;
    this.writeAt = 0;
    this.queued = 0;
    this.playing = false;
    this.port.onmessage = (e) => this.push(e.data);
  }

  push(planes) {
    const n = planes[0].length;
    for (let c = 0; c < channels; c++) {
      // Mono goes to both speakers.
      const source = planes[Math.min(c, planes.length - 1)];
      const ring = this.rings[c];
      const first = Math.min(n, this.capacity - this.writeAt);
      ring.set(source.subarray(0, first), this.writeAt);
      ring.set(source.subarray(first), 0);
    }
    this.writeAt = (this.writeAt + n) % this.capacity;
    this.queued += n;
    if (this.queued > ceiling * sampleRate) {
      const drop = this.queued - Math.round(target * sampleRate);
      this.readAt = (this.readAt + drop) % this.capacity;
      this.queued -= drop;
    }
  }

  process(_inputs, outputs) {
    const out = outputs[0];
    const frames = out[0].length;
    if (!this.playing && this.queued >= target * sampleRate) this.playing = true;
    if (!this.playing) return true;
    if (this.queued < frames) {
      // Ran dry: stay silent until the buffer has refilled to the target.
      this.playing = false;
      return true;
    }
    for (let c = 0; c < out.length; c++) {
      const ring = this.rings[Math.min(c, channels - 1)];
      const first = Math.min(frames, this.capacity - this.readAt);
      out[c].set(ring.subarray(this.readAt, this.readAt + first));
      out[c].set(ring.subarray(0, frames - first), first);
    }
    this.readAt = (this.readAt + frames) % this.capacity;
    this.queued -= frames;
    return true;
  }
}

registerProcessor('lvb-player', Player);
