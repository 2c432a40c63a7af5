// The stats overlay (#stats-overlay, toggled by #stats-toggle): what the page
// measures itself (frame rate painted, video bitrate received, glass-to-glass)
// beside what the node's stats events report.

import { probe } from '../probe.js';

/** Refresh period of the overlay, in ms. */
const period = 1000;
/** Glass-to-glass samples the percentiles are taken over (about the last second). */
const recent = 30;

export function mount(root, bus) {
  const toggle = root.querySelector('#stats-toggle');
  const overlay = root.querySelector('#stats-overlay');
  let node = {};
  let timer = 0;
  let last = null;

  function sample() {
    return { at: performance.now(), painted: probe.videoFramesPainted, bytes: probe.videoBytes };
  }

  function render() {
    const now = sample();
    const seconds = (now.at - last.at) / 1000;
    const fps = (now.painted - last.painted) / seconds;
    const kbps = (now.bytes - last.bytes) * 8 / 1000 / seconds;
    last = now;
    const g2g = probe.g2g.slice(-recent).sort((a, b) => a - b);
    const pct = (p) => (g2g.length ? `${g2g[Math.min(g2g.length - 1, Math.floor(p * g2g.length))].toFixed(0)} ms` : '–');
    const lines = [
      `page  ${fps.toFixed(1)} fps  ${kbps.toFixed(0)} kbps video  g2g p50 ${pct(0.5)} p95 ${pct(0.95)}`,
      `      decoded ${probe.videoFramesDecoded}  painted ${probe.videoFramesPainted}  audio ${probe.audioFramesDecoded}`
        + `  after loss: video ${probe.videoLossGaps} audio ${probe.audioLossGaps}`,
    ];
    const parts = [];
    if (typeof node.fps === 'number') parts.push(`${node.fps.toFixed(1)} fps`);
    if (typeof node.recv_kbps === 'number') parts.push(`${node.recv_kbps.toFixed(0)} kbps in`);
    if (typeof node.loss === 'number') parts.push(`loss ${(node.loss * 100).toFixed(1)} %`);
    if (typeof node.g2g_p50_ms === 'number') parts.push(`g2g p50 ${node.g2g_p50_ms.toFixed(0)} ms`);
    if (parts.length) lines.push(`node  ${parts.join('  ')}`);
    overlay.textContent = lines.join('\n');
  }

  toggle.addEventListener('click', () => {
    const on = overlay.hidden;
    overlay.hidden = !on;
    toggle.setAttribute('aria-pressed', String(on));
    clearInterval(timer);
    if (!on) return;
    last = sample();
    overlay.textContent = 'measuring…';
    timer = setInterval(render, period);
  });
  bus.on('stats', (m) => { node = m.media ?? {}; });
}
