// A PK battle as every page of the room shows it (#pk): this room on the
// left, the other room on the right (as the node mixes the picture), a score
// bar split in proportion to both scores, the countdown to the battle's end
// (its ends_at, wall-clock ms, against this machine's clock) and a line down
// the middle of the picture. pk_started and pk_score carry the whole battle
// as it stands (a page that connects mid-battle gets one in its greeting);
// pk_ended shows the result for a while, then the bar goes. Shown, hidden
// and moved with transforms and opacity only, so the canvas keeps painting.

import { probe } from '../probe.js';

/** How long the result stays before the bar goes (ms). */
const resultFor = 5000;
/** The bar's split stops this far from either end, so both numbers stay on their own colour. */
const minShare = 0.08;

const results = { won: 'Won', lost: 'Lost', draw: 'Draw' };
const reasons = {
  ended_by_host: 'ended by the host',
  ended_by_other: 'ended by the other host',
  time_up: "time's up",
  other_host_silent: 'the other host went silent',
  other_room_closed: 'the other room closed',
};

/** Seconds left as mm:ss, whole seconds rounded up (00:01 until the very end). */
function countdown(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

export function mount(root, bus) {
  const layer = root.querySelector('#pk');
  const oursTitle = root.querySelector('#pk-ours-title');
  const theirsTitle = root.querySelector('#pk-theirs-title');
  const timer = root.querySelector('#pk-timer');
  const fill = root.querySelector('#pk-fill');
  const edge = root.querySelector('#pk-edge');
  const ours = root.querySelector('#pk-ours');
  const givers = root.querySelector('#pk-givers');
  const theirs = root.querySelector('#pk-theirs');
  const result = root.querySelector('#pk-result');
  let room = null;
  let title = '';
  // The battle shown ({pk, endsAt, ours, theirs}), and the last one that ended (its late scores are ignored).
  let battle = null;
  let ended = null;
  let tick = 0;
  let hide = 0;

  function setState(state) {
    layer.dataset.state = state;
    probe.pkShown = state !== 'off';
  }

  function showTitle() {
    oursTitle.textContent = title || 'Us';
  }

  function number(element, n) {
    const text = String(n);
    if (element.textContent === text) return;
    element.textContent = text;
    element.animate([{ transform: 'scale(1.5)' }, { transform: 'scale(1)' }], { duration: 300, easing: 'ease-out' });
  }

  function score(m) {
    const a = Math.max(0, Number(m.ours) || 0);
    const b = Math.max(0, Number(m.theirs) || 0);
    const share = a + b === 0 ? 0.5 : Math.min(1 - minShare, Math.max(minShare, a / (a + b)));
    fill.style.transform = `scaleX(${share})`;
    edge.style.transform = `translateX(${share * 100}%)`;
    number(ours, a);
    number(theirs, b);
    layer.dataset.lead = a > b ? 'ours' : a < b ? 'theirs' : 'level';
    probe.pkScore = `${a}:${b}`;
    // This side's top givers in the battle, as its host ranks them (names are text).
    const top = Array.isArray(m.top) ? m.top.slice(0, 3) : [];
    const text = top.map((g) => `${g.nick ?? '?'} ${Number(g.points) || 0}`).join(' · ');
    givers.textContent = text ? `Top: ${text}` : '';
    probe.pkGivers = text;
  }

  function showTime() {
    clearTimeout(tick);
    if (!battle) return;
    const left = battle.endsAt - Date.now();
    const text = countdown(left / 1000);
    if (timer.textContent !== text) timer.textContent = text;
    probe.pkTimer = text;
    // The next whole second of the countdown, a little after it turns.
    if (left > 0) tick = setTimeout(showTime, (left % 1000) + 20);
  }

  function running(m) {
    if (typeof m.pk !== 'string' || m.pk === ended) return;
    if (battle?.pk !== m.pk) {
      clearTimeout(hide);
      result.hidden = true;
      probe.pkResult = '';
      theirsTitle.textContent = m.title || 'The other room';
      layer.dataset.lead = 'level';
    }
    battle = { pk: m.pk, endsAt: Number(m.ends_at) || 0 };
    score(m);
    showTime();
    setState('on');
  }

  function over(m) {
    if (typeof m.pk !== 'string' || m.pk === ended) return;
    ended = m.pk;
    battle = null;
    clearTimeout(tick);
    if (m.title) theirsTitle.textContent = m.title;
    score(m);
    const word = results[m.result] ?? 'Over';
    const why = reasons[m.reason] ?? '';
    result.textContent = `${word} ${Number(m.ours) || 0} : ${Number(m.theirs) || 0}${why ? ` · ${why}` : ''}`;
    result.dataset.result = m.result ?? '';
    result.hidden = false;
    probe.pkResult = m.result ?? '';
    setState('over');
    clearTimeout(hide);
    hide = setTimeout(off, resultFor);
  }

  function off() {
    battle = null;
    clearTimeout(tick);
    clearTimeout(hide);
    setState('off');
  }

  bus.on('hello', (m) => {
    title = m.title ?? '';
    showTitle();
    // Another room (a switch): its greeting says whether a battle runs there.
    if (room !== null && m.room !== room) {
      ended = null;
      off();
    }
    room = m.room;
  });
  bus.on('room_info', (m) => {
    if (typeof m.title === 'string' && m.title) {
      title = m.title;
      showTitle();
    }
  });
  bus.on('pk_started', running);
  bus.on('pk_score', running);
  bus.on('pk_ended', over);
  bus.on('room_closed', off);
  setState('off');
}
