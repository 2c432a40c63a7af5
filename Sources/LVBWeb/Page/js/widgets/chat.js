// The chat (#chat-list, #chat-input, #chat-send): messages as they come, and a
// line for who joined, left, went on stage or was removed.

import { el, nickColor, onSubmit } from '../dom.js';
import * as limits from '../limits.js';

/** Lines kept; the node keeps the same number of chat messages. */
const kept = 200;
/** Within this many pixels of the bottom, a new line scrolls the list; further up, the reader is looking back. */
const stickiness = 40;

export function mount(root, bus) {
  const list = root.querySelector('#chat-list');
  const input = root.querySelector('#chat-input');
  const sendButton = root.querySelector('#chat-send');
  let me = null;

  function append(line) {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < stickiness;
    list.append(line);
    while (list.childElementCount > kept) list.firstElementChild.remove();
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function note(text) {
    append(el('li', 'chat-note', text));
  }

  function muteInput(muted) {
    input.disabled = muted;
    sendButton.disabled = muted;
    input.placeholder = muted ? 'The host has muted you' : 'Say something…';
  }

  onSubmit(input, sendButton, (text) => limits.fits(bus, text, limits.chat) && bus.send({ cmd: 'chat', text }));

  let room = null;
  bus.on('hello', (m) => {
    me = m.id;
    // Another room (a switch): its chat starts over.
    if (room !== null && m.room !== room) {
      list.replaceChildren();
      muteInput(false);
    }
    room = m.room;
  });
  // After a reload, the viewers event says whether this node is muted.
  bus.on('viewers', (m) => {
    const mine = Array.isArray(m.viewers) ? m.viewers.find((v) => v.id === me) : null;
    if (mine) muteInput(mine.muted === true);
  });
  bus.on('chat', (m) => {
    const line = el('li', 'chat-msg');
    const nick = el('span', 'nick', m.nick);
    nick.style.color = nickColor(m.id);
    line.append(nick, el('span', 'text', m.text));
    if (m.time) line.title = new Date(m.time * 1000).toLocaleTimeString();
    append(line);
  });
  bus.on('joined', (m) => note(`${m.nick} joined${m.role === 'host' ? ' (host)' : ''}`));
  bus.on('left', (m) => { if (m.reason !== 'kicked') note(`${m.nick} left`); });
  bus.on('kicked', (m) => note(`${m.nick} was removed by the host`));
  bus.on('muted', (m) => {
    note(`${m.nick} was ${m.muted ? 'muted' : 'unmuted'} by the host`);
    if (m.id === me) muteInput(m.muted);
  });
  bus.on('linkmic_started', (m) => note(`${m.nick} is on stage`));
  bus.on('linkmic_ended', (m) => note(`${m.nick} left the stage`));
  bus.on('room_closed', () => note('The host closed the room'));
}
