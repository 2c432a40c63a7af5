// The page's own measurements, in one object that the stats overlay reads and
// that tests and a curious user read as window.lvbStudio.

/** How many glass-to-glass samples are kept (10 s of 30 fps video). */
const g2gKept = 300;

export const probe = {
  videoFramesDecoded: 0,
  videoFramesPainted: 0,
  videoBytes: 0,
  /** Video frames that came after lost ones (the node skipped what it could not repair). */
  videoLossGaps: 0,
  /** Audio packets that came after a gap the node filled with concealment. */
  audioLossGaps: 0,
  audioFramesDecoded: 0,
  /** The speakers: 'waiting' for a click or key press, then the AudioContext's state. */
  audioOutput: 'waiting',
  /** Glass-to-glass of the last painted frames, in milliseconds. */
  g2g: [],
  /** 'connecting', 'open' or 'closed' (closed also while waiting to reconnect). */
  wsState: 'connecting',
  /** Room events received. */
  events: 0,
  /** Gifts shown (gifts.js): combo badges made, big gifts flown. */
  giftBadges: 0,
  giftFlights: 0,
  /** This page's own camera on stage (capture.js): 'off', 'opening', 'on' or 'unavailable'. */
  camera: 'off',
  /** Its VP8 frames (and keyframes) and Opus packets sent to the node, and the bitrate the node set. */
  cameraFrames: 0,
  cameraKeyframes: 0,
  cameraAudioPackets: 0,
  cameraKbps: 0,
  /** The PK bar (pk.js): shown (a battle runs or its result shows), the score as shown ("ours:theirs"), the timer's text, and the last result ('won', 'lost', 'draw'). */
  pkShown: false,
  pkScore: '',
  pkTimer: '',
  pkResult: '',
  /** This side's top givers in the battle as the bar shows them ("nick points · …"). */
  pkGivers: '',
};

export function addG2G(ms) {
  probe.g2g.push(ms);
  if (probe.g2g.length > g2gKept) probe.g2g.splice(0, probe.g2g.length - g2gKept);
}

window.lvbStudio = probe;
