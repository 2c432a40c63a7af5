// Who is in the room (#viewer-list, #viewer-count): the host and co-hosts
// marked, and for the host a mute and a kick button beside each viewer.

import { button, el, nickColor } from '../dom.js';

export function mount(root, bus) {
  const list = root.querySelector('#viewer-list');
  const count = root.querySelector('#viewer-count');
  let me = null;
  let hosting = false;
  let members = [];
  let total = 0;
  // Who is muted: each viewers event says so, and muted events in between.
  const muted = new Set();

  function render() {
    count.textContent = String(total);
    list.replaceChildren(...members.map(item));
  }

  function item(m) {
    const li = el('li', 'viewer');
    li.dataset.id = m.id;
    const nick = el('span', 'nick', m.nick);
    nick.style.color = nickColor(m.id);
    li.append(nick);
    if (m.role === 'host') {
      li.classList.add('host');
      li.append(el('span', 'badge', 'Host'));
    } else if (m.cohost) {
      li.classList.add('cohost');
      li.append(el('span', 'badge', 'On stage'));
    }
    if (m.id === me) li.append(el('span', 'badge you', 'You'));
    if (hosting && m.role !== 'host') {
      const isMuted = muted.has(m.id);
      li.append(
        button('mute', isMuted ? 'Unmute' : 'Mute', () => bus.send({ cmd: 'mute', id: m.id, muted: !isMuted })),
        button('kick danger', 'Kick', () => bus.send({ cmd: 'kick', id: m.id })),
      );
    }
    return li;
  }

  let room = null;
  bus.on('hello', (m) => {
    me = m.id;
    hosting = m.role === 'host';
    // Another room (a switch): nobody is known in it until its viewers event.
    if (room !== null && m.room !== room) {
      members = [];
      total = 0;
      muted.clear();
    }
    room = m.room;
    render();
  });
  bus.on('viewers', (m) => {
    members = Array.isArray(m.viewers) ? m.viewers : [];
    muted.clear();
    for (const v of members) if (v.muted === true) muted.add(v.id);
    total = typeof m.count === 'number' ? m.count : members.length;
    render();
  });
  bus.on('muted', (m) => {
    if (m.muted) muted.add(m.id);
    else muted.delete(m.id);
    render();
  });
}
