// Room browsing (#rooms, #room-list), for a viewer whose node knows a
// rendezvous (its hello says so): each listed room's thumbnail, title, host
// nickname, viewers and likes, then the replays (length, holders),
// refreshed as the node's list refreshes. A click on a room switches to it,
// on a replay plays it here (the node stays in its room: a click on the
// room is back to live); ArrowDown / ArrowUp, the mouse wheel and a
// vertical swipe over the picture switch to the next / previous room through
// the node's quick switch. One gesture is one switch: a held key repeats
// nothing, and a wheel or swipe must rest before it switches again.

import { el } from '../dom.js';
import { clock } from './replay.js';

/** After a switch, gestures wait this long (ms) before another. */
const settle = 700;
/** A wheel switches again only after it rested this long (ms): one flick of a wheel or touchpad sends dozens of events. */
const wheelRest = 350;
/** A swipe is at least this many pixels up or down, more vertical than sideways. */
const swipeMin = 50;

export function mount(root, bus) {
  const panel = root.querySelector('#rooms');
  const list = root.querySelector('#room-list');
  const video = root.querySelector('#video');
  let enabled = false;
  let current = null;
  let lastSwitch = 0;
  let wheelBusy = false;
  let wheelTimer = null;
  let touchStart = null;
  // Thumbnails already shown, by room id, so a refresh of the list does not reload an unchanged picture.
  const thumbs = new Map();

  function switchTo(to) {
    const now = performance.now();
    if (!enabled || now - lastSwitch < settle) return;
    lastSwitch = now;
    bus.send({ cmd: 'switch', to });
  }

  function thumbnail(room) {
    let img = thumbs.get(room.id);
    if (!room.thumb) return el('span', 'room-thumb none');
    const src = `thumbs/${encodeURIComponent(room.id)}.jpg?v=${encodeURIComponent(String(room.thumb))}`;
    if (!img || img.dataset.src !== src) {
      img = el('img', 'room-thumb');
      img.alt = '';
      img.decoding = 'async';
      img.dataset.src = src;
      img.src = src;
      thumbs.set(room.id, img);
    }
    return img;
  }

  function item(room) {
    const li = el('li', 'room-item');
    li.dataset.id = room.id;
    if (room.id === current || room.current) li.classList.add('current');
    if (room.replay) li.classList.add('replay');
    else if (room.access !== 'open') li.classList.add('private');
    const text = el('div', 'room-text');
    const counts = room.replay
      ? `Replay · ${clock(room.duration_ms ?? 0)} · ${room.holders ?? 0} holder${room.holders === 1 ? '' : 's'}`
      : `${room.viewers ?? 0} watching · ♥ ${room.likes ?? 0}`;
    text.append(
      el('span', 'room-title', room.title || 'Untitled room'),
      el('span', 'room-nick', room.nick || ''),
      el('span', 'room-counts', counts),
    );
    li.append(thumbnail(room), text);
    li.addEventListener('click', () => {
      if (li.classList.contains('current')) return;
      if (room.replay) play(room.id);
      else switchTo(room.id);
    });
    return li;
  }

  // A replay plays on this page while the node stays in its room; a click on a live room comes back.
  function play(id) {
    const now = performance.now();
    if (!enabled || now - lastSwitch < settle) return;
    lastSwitch = now;
    bus.send({ cmd: 'replay', id });
  }

  bus.on('hello', (m) => {
    // A host's list is its PK picker (pkhost.js); a host does not switch rooms.
    enabled = m.rendezvous === true && m.role !== 'host';
    current = m.room;
    panel.hidden = !enabled;
    for (const li of list.children) li.classList.toggle('current', li.dataset.id === current);
    if (enabled) bus.send({ cmd: 'rooms' });
  });
  bus.on('room_list', (m) => {
    if (!enabled) return;
    const rooms = Array.isArray(m.rooms) ? m.rooms : [];
    for (const id of [...thumbs.keys()]) if (!rooms.some((r) => r.id === id)) thumbs.delete(id);
    list.replaceChildren(...rooms.map(item));
  });

  addEventListener('keydown', (e) => {
    if (!enabled || e.repeat || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target instanceof HTMLElement && e.target.closest('input, textarea, select')) return;
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    switchTo(e.key === 'ArrowDown' ? 'next' : 'prev');
  });

  // Over the picture only: the lists keep their own scrolling.
  video.addEventListener('wheel', (e) => {
    if (!enabled || e.deltaY === 0) return;
    e.preventDefault();
    clearTimeout(wheelTimer);
    wheelTimer = setTimeout(() => { wheelBusy = false; }, wheelRest);
    if (wheelBusy) return;
    wheelBusy = true;
    switchTo(e.deltaY > 0 ? 'next' : 'prev');
  }, { passive: false });

  video.addEventListener('touchstart', (e) => {
    touchStart = e.touches.length === 1 ? { x: e.touches[0].clientX, y: e.touches[0].clientY } : null;
  }, { passive: true });
  video.addEventListener('touchend', (e) => {
    if (!touchStart || e.changedTouches.length !== 1) return;
    const dx = e.changedTouches[0].clientX - touchStart.x;
    const dy = e.changedTouches[0].clientY - touchStart.y;
    touchStart = null;
    if (Math.abs(dy) < swipeMin || Math.abs(dy) < 2 * Math.abs(dx)) return;
    // Up brings the next room in from below, as a feed does.
    switchTo(dy < 0 ? 'next' : 'prev');
  }, { passive: true });
}
