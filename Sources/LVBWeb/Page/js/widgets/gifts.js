// Gifts: #gift-button opens #gift-picker (the catalogue the node's hello
// lists; points only, no money); a pick sends {cmd:"gift"}. Every gift the
// room shows plays on the float layer (#gifts): small ones stack as one
// badge per giver's combo in the corner, its count growing (one badge, not a
// flood); big ones fly across the picture, one at a time. Animations are
// CSS transforms and opacity only (the compositor's), so the canvas keeps
// painting. #gift-rank-list shows the host's rank of givers (gift_rank).

import { el, nickColor } from '../dom.js';
import { probe } from '../probe.js';

/** A combo's badge stays this long after its latest gift (ms). */
const badgeFor = 3500;
/** Badges shown at once (the oldest goes). */
const maxBadges = 4;
/** Big gifts waiting to fly at most (more are shown as badges only). */
const maxQueued = 6;
/** How long a big gift takes to cross (ms). */
const flight = 2200;

export function mount(root, bus) {
  const button = root.querySelector('#gift-button');
  const picker = root.querySelector('#gift-picker');
  const layer = root.querySelector('#gifts');
  const stack = root.querySelector('#gift-stack');
  const rankList = root.querySelector('#gift-rank-list');
  const badges = new Map();
  const queue = [];
  let flying = false;
  let room = null;

  function catalogue(gifts) {
    picker.replaceChildren(...(Array.isArray(gifts) ? gifts : []).map((g) => {
      const b = el('button', 'gift-choice');
      b.type = 'button';
      b.dataset.gift = g.name;
      b.title = `${g.name} · ${g.points} point${g.points === 1 ? '' : 's'}`;
      b.append(el('span', 'glyph', g.glyph), el('span', 'points', String(g.points)));
      b.addEventListener('click', () => {
        bus.send({ cmd: 'gift', gift: g.name, count: 1 });
        picker.hidden = true;
      });
      return b;
    }));
  }

  function badge(m) {
    const key = `${m.id}/${m.combo}`;
    let b = badges.get(key);
    if (!b) {
      const node = el('div', 'gift-badge');
      const name = el('span', 'nick', m.nick || '');
      name.style.color = nickColor(m.id);
      const count = el('span', 'gift-count', '');
      node.append(name, el('span', 'gift-glyph', m.glyph || '🎁'), count);
      stack.append(node);
      b = { node, count, timer: 0, shown: 0 };
      badges.set(key, b);
      probe.giftBadges += 1;
      while (badges.size > maxBadges) drop(badges.keys().next().value);
    }
    const n = Math.max(b.shown, Number(m.combo_count) || 1);
    if (n !== b.shown) {
      b.shown = n;
      b.count.textContent = `×${n}`;
      b.count.animate([{ transform: 'scale(1.6)' }, { transform: 'scale(1)' }], { duration: 250, easing: 'ease-out' });
    }
    clearTimeout(b.timer);
    b.timer = setTimeout(() => drop(key), badgeFor);
  }

  function drop(key) {
    const b = badges.get(key);
    if (!b) return;
    badges.delete(key);
    clearTimeout(b.timer);
    b.node.remove();
  }

  function fly() {
    if (flying || queue.length === 0) return;
    flying = true;
    const m = queue.shift();
    const g = el('div', 'gift-flight', m.glyph || '🎁');
    layer.append(g);
    probe.giftFlights += 1;
    const run = g.animate(
      [
        { transform: 'translate(-20cqw, 10cqh) scale(0.6) rotate(-10deg)', opacity: 0 },
        { transform: 'translate(20cqw, -5cqh) scale(1.4) rotate(0deg)', opacity: 1, offset: 0.25 },
        { transform: 'translate(70cqw, -15cqh) scale(1.4) rotate(5deg)', opacity: 1, offset: 0.75 },
        { transform: 'translate(120cqw, -35cqh) scale(0.8) rotate(15deg)', opacity: 0 },
      ],
      { duration: flight, easing: 'ease-in-out' },
    );
    run.onfinish = () => {
      g.remove();
      flying = false;
      fly();
    };
  }

  function rank(m) {
    const top = Array.isArray(m.top) ? m.top : [];
    rankList.replaceChildren(...top.slice(0, 5).map((entry) => {
      const item = el('li', 'giver');
      const name = el('span', 'nick', entry.nick || '');
      name.style.color = nickColor(entry.id);
      item.append(name, el('span', 'count', String(entry.points)));
      return item;
    }));
  }

  button.addEventListener('click', () => { picker.hidden = !picker.hidden; });
  bus.on('hello', (m) => {
    catalogue(m.gifts);
    if (m.room === room) return;
    room = m.room;
    for (const key of [...badges.keys()]) drop(key);
    rankList.replaceChildren();
  });
  bus.on('gift', (m) => {
    badge(m);
    if (m.big && queue.length < maxQueued) {
      queue.push(m);
      fly();
    }
  });
  bus.on('gift_rank', rank);
}
