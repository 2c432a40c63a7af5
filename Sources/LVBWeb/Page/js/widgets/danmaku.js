// Bullet comments: they fly right to left across the #danmaku layer (the CSS
// lays it over the top 60 % of the picture), each in its own lane and its
// sender's colour; #danmaku-input / #danmaku-send / #danmaku-color send one.
// A comment waits for a lane to clear rather than run over another.

import { el, onSubmit } from '../dom.js';
import * as limits from '../limits.js';

/** Lane height in px (the CSS font is 20 px). */
const laneHeight = 30;
/** Seconds a comment takes to cross the layer, whatever its length, so none catches up with the one ahead. */
const crossing = 8;
/** Space in px kept between one comment's tail and the next one's head in a lane. */
const gap = 24;
/** Comments waiting for a lane at most; past it the oldest waiting is dropped (a flood is not readable anyway). */
const maxWaiting = 30;

export function mount(root, bus) {
  const layer = root.querySelector('#danmaku');
  const input = root.querySelector('#danmaku-input');
  const sendButton = root.querySelector('#danmaku-send');
  const color = root.querySelector('#danmaku-color');
  // For each lane, when (performance.now(), ms) its last comment's tail has cleared the right edge.
  let freeAt = [];
  let waiting = [];
  let timer = 0;
  let lite = false;

  onSubmit(input, sendButton, (text) => limits.fits(bus, text, limits.danmaku) && bus.send({ cmd: 'danmaku', text, color: color.value }));

  function freeLane(wanted, now) {
    // Lanes on the wire count from 1, and 0 leaves the choice to us; a wanted
    // lane that is busy gives way to the highest free one.
    const lane = (wanted - 1) % freeAt.length;
    if (wanted > 0 && freeAt[lane] <= now) return lane;
    return freeAt.findIndex((t) => t <= now);
  }

  function launch() {
    clearTimeout(timer);
    timer = 0;
    const lanes = Math.max(1, Math.floor(layer.clientHeight / laneHeight));
    if (freeAt.length !== lanes) freeAt = Array.from({ length: lanes }, (_, i) => freeAt[i] ?? 0);
    const now = performance.now();
    while (waiting.length) {
      const lane = freeLane(waiting[0].lane | 0, now);
      if (lane < 0) break;
      fly(waiting.shift(), lane, now);
    }
    if (waiting.length) timer = setTimeout(launch, Math.max(16, Math.min(...freeAt) - now));
  }

  function fly(m, lane, now) {
    const width = layer.clientWidth;
    const item = el('div', 'danmaku-item', m.text);
    if (/^#[0-9a-f]{6}$/i.test(m.color)) item.style.color = m.color;
    item.style.top = `${lane * laneHeight}px`;
    layer.append(item);
    const length = item.offsetWidth;
    const speed = width / (crossing * 1000);
    freeAt[lane] = now + (length + gap) / speed;
    const run = item.animate(
      [{ transform: `translateX(${width}px)` }, { transform: `translateX(${-length}px)` }],
      { duration: (width + length) / speed, easing: 'linear' },
    );
    run.onfinish = () => item.remove();
  }

  bus.on('danmaku', (m) => {
    if (lite || typeof m.text !== 'string' || !m.text) return;
    waiting.push(m);
    if (waiting.length > maxWaiting) waiting.shift();
    launch();
  });
  // Lite mode is for weak machines: no comments are laid out while it is on.
  bus.on('page:lite', ({ on }) => {
    lite = on;
    if (!on) return;
    clearTimeout(timer);
    waiting = [];
    layer.replaceChildren();
  });
}
