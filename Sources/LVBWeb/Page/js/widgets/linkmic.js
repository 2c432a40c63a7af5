// Link-mic. A viewer asks to go on stage (#linkmic-request, with an optional
// #linkmic-message), withdraws or leaves the stage (#linkmic-hangup), and on
// stage puts this browser's camera and microphone there or takes them off
// (#camera-toggle, "page:camera"; capture.js does it and starts by itself
// when the node has no stage sources of its own). The host answers requests
// in #linkmic-queue and takes co-hosts off in #linkmic-stage.

import { button, el, nickColor } from '../dom.js';
import { cameraButton } from '../media/capture.js';

export function mount(root, bus) {
  const message = root.querySelector('#linkmic-message');
  const request = root.querySelector('#linkmic-request');
  const hangup = root.querySelector('#linkmic-hangup');
  const camera = root.querySelector('#camera-toggle');
  const queue = root.querySelector('#linkmic-queue');
  const stage = root.querySelector('#linkmic-stage');
  let me = null;
  // A viewer's place: 'idle', 'asking' (waiting for the host) or 'onstage'.
  let place = 'idle';

  function setPlace(p) {
    const was = place;
    place = p;
    camera.hidden = p !== 'onstage';
    if ((was === 'onstage') !== (p === 'onstage')) bus.emit('page:stage', { onStage: p === 'onstage' });
    message.hidden = p !== 'idle';
    request.hidden = p === 'onstage';
    request.disabled = p === 'asking';
    request.textContent = p === 'asking' ? 'Waiting for the host…' : 'Go on stage';
    hangup.hidden = p === 'idle';
    hangup.textContent = p === 'asking' ? 'Withdraw' : 'Leave stage';
  }

  function toast(text) {
    bus.emit('page:toast', { message: text });
  }

  request.addEventListener('click', () => {
    if (bus.send({ cmd: 'linkmic', text: message.value.trim() })) {
      message.value = '';
      setPlace('asking');
    }
  });
  cameraButton(camera, bus, 'Use my camera');
  hangup.addEventListener('click', () => {
    if (bus.send({ cmd: 'hangup' })) setPlace('idle');
  });

  function person(className, m, ...buttons) {
    const li = el('li', className);
    li.dataset.id = m.id;
    const nick = el('span', 'nick', m.nick);
    nick.style.color = nickColor(m.id);
    li.append(nick);
    if (m.message) li.append(el('span', 'message', m.message));
    li.append(...buttons);
    return li;
  }

  function find(list, id) {
    return [...list.children].find((li) => li.dataset.id === id);
  }

  function addRequest(m) {
    find(queue, m.id)?.remove();
    const answer = (command) => () => {
      if (bus.send(command)) find(queue, m.id)?.remove();
    };
    queue.append(person('linkmic-req', m,
      button('accept', 'Accept', answer({ cmd: 'accept', id: m.id })),
      button('reject', 'Reject', answer({ cmd: 'reject', id: m.id }))));
  }

  function addCohost(m) {
    if (find(stage, m.id)) return;
    stage.append(person('onstage', m, button('hangup', 'Take off stage', () => bus.send({ cmd: 'hangup', id: m.id }))));
  }

  bus.on('hello', (m) => {
    me = m.id;
    // A reloaded page picks up where this node's link-mic stands.
    setPlace(['asking', 'onstage'].includes(m.linkmic) ? m.linkmic : 'idle');
  });

  // A viewer's side.
  bus.on('linkmic_accepted', () => {
    setPlace('onstage');
    toast('The host accepted: you are on stage');
  });
  bus.on('linkmic_rejected', (m) => {
    setPlace('idle');
    toast(m.reason ? `The host declined: ${m.reason}` : 'The host declined your request');
  });
  bus.on('linkmic_off', () => {
    if (place !== 'idle') toast('You are off stage');
    setPlace('idle');
  });

  // The host's side, and the stage everyone sees.
  bus.on('linkmic_request', addRequest);
  bus.on('linkmic_expired', (m) => {
    find(queue, m.id)?.remove();
    if (m.id === me && place === 'asking') {
      setPlace('idle');
      toast('The host did not answer your request');
    }
  });
  bus.on('linkmic_started', (m) => {
    find(queue, m.id)?.remove();
    addCohost(m);
  });
  bus.on('linkmic_ended', (m) => {
    find(stage, m.id)?.remove();
    if (m.id === me) setPlace('idle');
  });
  bus.on('viewers', (m) => {
    const cohosts = (m.viewers ?? []).filter((v) => v.cohost);
    stage.replaceChildren();
    cohosts.forEach(addCohost);
    // After a reconnect this is how the page learns it is on stage; leaving
    // it is told by linkmic_off and linkmic_ended, which a viewers event sent
    // just before the change must not overrule.
    if (cohosts.some((v) => v.id === me)) setPlace('onstage');
  });
  bus.on('room_closed', () => {
    setPlace('idle');
    request.disabled = true;
    queue.replaceChildren();
    stage.replaceChildren();
  });
}
