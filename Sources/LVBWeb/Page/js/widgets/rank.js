// Top likers (#rank-list): each author's highest count seen in like events
// (the count is the author's running total, and events can pass each other).

import { el, nickColor } from '../dom.js';

/** Places shown. */
const places = 5;

export function mount(root, bus) {
  const list = root.querySelector('#rank-list');
  let room = null;
  let likers = new Map();

  function render() {
    const top = [...likers.entries()].sort((a, b) => b[1].count - a[1].count).slice(0, places);
    list.replaceChildren(...top.map(([id, { nick, count }]) => {
      const item = el('li', 'liker');
      const name = el('span', 'nick', nick);
      name.style.color = nickColor(id);
      item.append(name, el('span', 'count', String(count)));
      return item;
    }));
  }

  bus.on('hello', (m) => {
    if (m.room === room) return;
    room = m.room;
    likers = new Map();
    render();
  });
  bus.on('like', (m) => {
    const known = likers.get(m.id);
    if (known && known.count >= m.count) return;
    likers.set(m.id, { nick: m.nick, count: m.count });
    render();
  });
}
