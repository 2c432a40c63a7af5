// The host's PK controls (.pk-host). With a rendezvous, #pk-button opens
// #pk-picker: the other live rooms the rendezvous lists (room_list, asked
// for with {cmd:"rooms"} when the page opens and every few seconds while the
// picker is open, since a host's node does not refresh the list by itself),
// each with a button that asks its host for a PK of #pk-minutes. #pk-card
// shows this host's request until an answer (with a button to withdraw it),
// or another host's request (accept, reject); while a battle runs, #pk-end
// ends it. The battle itself is shown by pk.js.

import { button, el } from '../dom.js';

/** The picker asks for a fresh list this often while it is open (ms). */
const refreshEvery = 5000;
/** An ask that heard nothing back by then is forgotten (ms): the node takes 15 s to reach the other host, which has 30 s to answer. */
const askFor = 50000;

export function mount(root, bus) {
  const open = root.querySelector('#pk-button');
  const picker = root.querySelector('#pk-picker');
  const list = root.querySelector('#pk-rooms');
  const minutes = root.querySelector('#pk-minutes');
  const card = root.querySelector('#pk-card');
  const end = root.querySelector('#pk-end');
  let hosting = false;
  let browsing = false;
  let rooms = [];
  // This host's ask {room, title, minutes}, another host's pk_request, the battle's pk id.
  let asking = null;
  let askTimer = 0;
  let request = null;
  let battle = null;
  let ended = null;
  let refresh = 0;

  function toast(text) {
    bus.emit('page:toast', { message: text });
  }

  function named(title, room) {
    return title ? `«${title}»` : `room ${String(room ?? '').slice(0, 8)}…`;
  }

  function titleOf(room) {
    return rooms.find((r) => r.id === room)?.title ?? '';
  }

  function showPicker(on) {
    picker.hidden = !on;
    open.setAttribute('aria-pressed', String(on));
    clearInterval(refresh);
    if (!on) return;
    bus.send({ cmd: 'rooms' });
    refresh = setInterval(() => bus.send({ cmd: 'rooms' }), refreshEvery);
  }

  function ask(room) {
    const n = Number(minutes.value) || 5;
    if (!bus.send({ cmd: 'pk', do: 'ask', room: room.id, minutes: n })) return;
    setAsking({ room: room.id, title: room.title ?? '', minutes: n });
    showPicker(false);
  }

  function setAsking(a) {
    asking = a;
    clearTimeout(askTimer);
    if (a) askTimer = setTimeout(() => setAsking(null), askFor);
    render();
  }

  function item(room) {
    const li = el('li', 'pk-room');
    li.dataset.id = room.id;
    const text = el('div', 'pk-room-text');
    text.append(
      el('span', 'pk-room-title', room.title || 'Untitled room'),
      el('span', 'pk-room-meta', `${room.nick || ''} · ${room.viewers ?? 0} watching`),
    );
    li.append(text, button('pk-ask primary', 'PK', () => ask(room)));
    return li;
  }

  function renderList() {
    const others = rooms.filter((r) => !r.current && !r.replay);
    if (others.length === 0) list.replaceChildren(el('li', 'pk-none', 'No other live room right now'));
    else list.replaceChildren(...others.map(item));
  }

  function render() {
    open.hidden = !browsing || battle !== null;
    end.hidden = battle === null;
    if (battle === null) end.disabled = false;
    if (battle !== null || asking !== null) showPicker(false);
    if (request) {
      const line = `${named(request.title, request.room)} asks for a ${request.minutes ?? 5}-minute PK`;
      card.replaceChildren(el('p', 'pk-card-text', line),
        button('pk-accept primary', 'Accept', () => answer({ cmd: 'pk', do: 'accept' })),
        button('pk-reject', 'Reject', () => answer({ cmd: 'pk', do: 'reject' })));
    } else if (asking) {
      const line = `Asking ${named(asking.title, asking.room)} for a ${asking.minutes}-minute PK…`;
      card.replaceChildren(el('p', 'pk-card-text', line),
        button('pk-withdraw', 'Withdraw', () => bus.send({ cmd: 'pk', do: 'end' })));
    } else {
      card.replaceChildren();
    }
    card.hidden = !request && !asking;
  }

  function answer(command) {
    if (!bus.send(command)) return;
    request = null;
    render();
  }

  function running(m) {
    if (!hosting || typeof m.pk !== 'string' || m.pk === ended) return;
    battle = m.pk;
    request = null;
    setAsking(null);
  }

  open.addEventListener('click', () => showPicker(picker.hidden));
  end.addEventListener('click', () => {
    if (bus.send({ cmd: 'pk', do: 'end' })) end.disabled = true;
  });

  bus.on('hello', (m) => {
    hosting = m.role === 'host';
    browsing = hosting && m.rendezvous === true;
    render();
    if (browsing) bus.send({ cmd: 'rooms' });
  });
  bus.on('room_list', (m) => {
    if (!hosting) return;
    rooms = Array.isArray(m.rooms) ? m.rooms : [];
    renderList();
  });
  bus.on('pk_request', (m) => {
    if (!hosting) return;
    request = m;
    showPicker(false);
    render();
  });
  // The node's word that the request went out (also in a reloaded page's greeting).
  bus.on('pk_asking', (m) => {
    if (!hosting) return;
    setAsking({ room: m.room, title: m.title || titleOf(m.room) || '', minutes: m.minutes ?? 5 });
  });
  bus.on('pk_rejected', (m) => {
    if (!hosting) return;
    const who = named(m.title || (asking?.room === m.room ? asking.title : titleOf(m.room)), m.room);
    toast(m.reason ? `${who} said no to the PK: ${m.reason}` : `${who} said no to the PK`);
    setAsking(null);
  });
  bus.on('pk_withdrawn', (m) => {
    if (!hosting) return;
    if (request?.room === m.room) {
      toast(`${named(request.title || m.title, m.room)} withdrew its PK request`);
      request = null;
    }
    if (asking?.room === m.room) setAsking(null);
    render();
  });
  bus.on('pk_started', running);
  bus.on('pk_score', running);
  bus.on('pk_ended', (m) => {
    if (!hosting) return;
    ended = m.pk;
    battle = null;
    render();
  });
  // A refused command: an ask the node could not make, or an end it did not take.
  bus.on('error', () => {
    if (!hosting) return;
    end.disabled = false;
    if (asking) setAsking(null);
  });
  bus.on('room_closed', () => {
    request = null;
    battle = null;
    browsing = false;
    setAsking(null);
  });
}
