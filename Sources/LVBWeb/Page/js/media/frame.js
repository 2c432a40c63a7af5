// One binary WebSocket message from the node: a media frame (lvbnode(1), WEB
// STUDIO).
//
//     0      kind: 1 VP8 video frame, 2 Opus packet
//     1      flags: bit 0 keyframe, bit 1 frames were lost just before this one,
//            bit 2 decode but do not show (a replay's frames on the way to a seek's target)
//     2..9   capture time, µs since the Unix epoch, big-endian (0: unknown)
//     10..13 RTP timestamp, big-endian (video 90 kHz, audio 48 kHz)
//     14..   the frame

export const videoKind = 1;
export const audioKind = 2;
export const headerSize = 14;

/** The frame in buffer, or null if it is too short to hold a header and data. */
export function parseFrame(buffer) {
  if (buffer.byteLength <= headerSize) return null;
  const view = new DataView(buffer);
  return {
    kind: view.getUint8(0),
    keyframe: (view.getUint8(1) & 1) === 1,
    afterLoss: (view.getUint8(1) & 2) === 2,
    catchUp: (view.getUint8(1) & 4) === 4,
    // Microseconds since 1970 stay below 2^53 for millennia: a Number holds them exactly.
    captureMicros: Number(view.getBigUint64(2)),
    rtpTimestamp: view.getUint32(10),
    data: new Uint8Array(buffer, headerSize),
  };
}

/**
 * Turns 32-bit RTP timestamps into microseconds for WebCodecs chunks, counted
 * from the first one seen; unwraps the 32-bit wraparound (RFC 3550 §5.1: the
 * timestamp wraps, and a step is the shortest way around the circle).
 */
export class RtpClock {
  constructor(clockRate) {
    this.clockRate = clockRate;
    this.last = null;
    this.ticks = 0;
  }

  micros(rtpTimestamp) {
    if (this.last !== null) this.ticks += (rtpTimestamp - this.last) | 0;
    this.last = rtpTimestamp;
    return Math.round(this.ticks * 1e6 / this.clockRate);
  }
}
