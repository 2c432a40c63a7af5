// The page's one connection to its local node, and the event bus the widgets
// share. Room events arrive as JSON text messages named by their "event" key;
// media frames arrive as binary messages; commands go back as {"cmd": ...}.
// The page also posts its own events on the bus, named "page:..." so they can
// never collide with the node's: "page:socket" {state}, "page:tap" (the video
// was tapped), "page:lite" {on}, "page:stage" {onStage} (this viewer went on
// or off stage), "page:camera" {on} (use this page's camera on stage, or
// not) and "page:camera_state" {state}. The page's camera goes to the node as
// binary messages (sendMedia).

import { probe } from './probe.js';

/** Reconnect delays double from the first to the last (ms). */
const firstRetry = 500;
const lastRetry = 8000;

const listeners = new Map();
const mediaListeners = [];
let socket = null;
let retry = firstRetry;
/** After room_closed, or the node's own exit, there is nothing to come back to. */
let roomClosed = false;

/** Subscribes fn to the event with this name; fn gets the parsed object. */
export function on(event, fn) {
  if (!listeners.has(event)) listeners.set(event, []);
  listeners.get(event).push(fn);
}

/** Subscribes fn to binary media frames (an ArrayBuffer each). */
export function onMedia(fn) {
  mediaListeners.push(fn);
}

/** Delivers an event to its subscribers, whether it came from the node or the page. */
export function emit(event, message) {
  for (const fn of listeners.get(event) ?? []) {
    // One widget's failure must not keep the event from the others.
    try { fn(message); } catch (e) { console.error(`${event} handler failed`, e); }
  }
}

/** Sends a command to the node; false (and a toast) when the socket is not open. */
export function send(command) {
  if (socket?.readyState !== WebSocket.OPEN) {
    emit('error', { event: 'error', message: 'Not connected to the node — try again in a moment.' });
    return false;
  }
  socket.send(JSON.stringify(command));
  return true;
}

/** Sends a binary media frame (the page's camera); false when the socket is not open. */
export function sendMedia(buffer) {
  if (socket?.readyState !== WebSocket.OPEN) return false;
  socket.send(buffer);
  return true;
}

/** Bytes queued on the socket and not yet sent. */
export function backlog() {
  return socket?.bufferedAmount ?? 0;
}

/** Opens the WebSocket to the node that served this page, and keeps it open. */
export function connect() {
  if (socket) return;
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  // Without a token in the URL, the cookie the node set with the page vouches for us.
  const token = new URLSearchParams(location.search).get('token');
  const query = token === null ? '' : `?token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(`${scheme}//${location.host}/ws${query}`);
  ws.binaryType = 'arraybuffer';
  socket = ws;
  setState('connecting');

  ws.onopen = () => {
    retry = firstRetry;
    setState('open');
  };
  ws.onmessage = (e) => {
    if (typeof e.data === 'string') receiveText(e.data);
    else for (const fn of mediaListeners) fn(e.data);
  };
  ws.onclose = () => {
    socket = null;
    setState('closed');
    if (roomClosed) return;
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, lastRetry);
  };
}

function receiveText(text) {
  let message;
  try { message = JSON.parse(text); } catch { return; }
  if (typeof message?.event !== 'string') return;
  probe.events += 1;
  if (message.event === 'room_closed' || message.event === 'exit') roomClosed = true;
  emit(message.event, message);
}

function setState(state) {
  probe.wsState = state;
  emit('page:socket', { state, final: roomClosed });
}
