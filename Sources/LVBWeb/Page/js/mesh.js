// The mesh page: draws each room's media tree from the mesh's mesh_nodes
// lines (every 2 s), and lists its mesh_event and mesh_said lines. Text
// from the nodes is set only as text.

import { on, connect } from './bus.js';

const svgNS = 'http://www.w3.org/2000/svg';
/** Pixels between columns (leaves) and between depths. */
const columnWidth = 110;
const rowHeight = 78;
/** Lines kept in each list. */
const kept = 200;

const rooms = document.getElementById('rooms');
const events = document.getElementById('events');
const said = document.getElementById('said');
const clock = document.getElementById('clock');

function svg(name, attributes) {
  const e = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, String(v));
  return e;
}

function time(at) {
  const s = Math.floor(at ?? 0);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

function append(list, at, text) {
  const li = document.createElement('li');
  const stamp = document.createElement('span');
  stamp.className = 'at';
  stamp.textContent = time(at);
  li.append(stamp, document.createTextNode(text));
  list.append(li);
  while (list.childElementCount > kept) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

/** x for each node: leaves in order, each parent over the middle of its children. */
function layout(root, childrenOf) {
  const place = new Map();
  let next = 0;
  function walk(node, depth) {
    const kids = childrenOf.get(node.name) ?? [];
    for (const k of kids) walk(k, depth + 1);
    const x = kids.length ? (place.get(kids[0].name).x + place.get(kids[kids.length - 1].name).x) / 2 : next++;
    place.set(node.name, { x, depth });
  }
  walk(root, 0);
  return { place, columns: Math.max(1, next) };
}

function state(n) {
  if (!n.running) return 'gone';
  if (n.role === 'host') return 'host';
  if (typeof n.fps !== 'number') return 'slow';
  return n.fps >= 20 ? 'live' : n.fps > 0 ? 'slow' : 'dark';
}

function drawRoom(room, nodes, likes) {
  const section = document.createElement('section');
  section.className = 'room';
  const title = document.createElement('h2');
  title.textContent = `Room ${room}`;
  const heart = document.createElement('span');
  heart.className = 'likes';
  heart.textContent = `♥ ${likes ?? 0}`;
  title.append(heart);
  section.append(title);
  const host = nodes.find((n) => n.role === 'host');
  if (!host) return section;
  const childrenOf = new Map();
  for (const n of nodes) {
    if (!n.parent || !n.running || n.role === 'host') continue;
    if (!childrenOf.has(n.parent)) childrenOf.set(n.parent, []);
    childrenOf.get(n.parent).push(n);
  }
  const { place, columns } = layout(host, childrenOf);
  const depth = Math.max(0, ...[...place.values()].map((p) => p.depth));
  const width = columns * columnWidth, height = (depth + 1) * rowHeight + 10;
  const picture = svg('svg', { class: 'tree', viewBox: `0 0 ${width} ${height}`, role: 'img' });
  picture.setAttribute('aria-label', `Media tree of room ${room}`);
  const at = (name) => {
    const p = place.get(name);
    return { x: (p.x + 0.5) * columnWidth, y: p.depth * rowHeight + 24 };
  };
  for (const n of nodes) {
    if (!place.has(n.name) || !n.parent || !place.has(n.parent)) continue;
    const a = at(n.parent), b = at(n.name);
    picture.append(svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
  }
  for (const n of nodes) {
    if (!place.has(n.name)) continue;
    const { x, y } = at(n.name);
    const g = svg('g', { class: state(n) });
    g.append(svg('circle', { cx: x, cy: y, r: n.on_stage ? 11 : 8 }));
    const label = svg('text', { x, y: y + 24 });
    label.textContent = n.name + (n.on_stage ? ' ★' : '');
    const figures = svg('text', { x, y: y + 37, class: 'figures' });
    const parts = [];
    if (typeof n.fps === 'number') parts.push(`${n.fps.toFixed(0)} fps`);
    if (typeof n.latency_p95_ms === 'number') parts.push(`p95 ${n.latency_p95_ms.toFixed(0)} ms`);
    if (typeof n.loss === 'number' && n.loss > 0) parts.push(`loss ${(n.loss * 100).toFixed(1)}%`);
    figures.textContent = parts.join(' · ');
    const tip = svg('title', {});
    tip.textContent = `${n.name}: depth ${n.depth ?? '?'}, ${n.children} children, ${n.repaired} packets repaired`;
    g.append(tip, label, figures);
    picture.append(g);
  }
  section.append(picture);
  const loose = nodes.filter((n) => n.role !== 'host' && !place.has(n.name));
  if (loose.length) {
    const p = document.createElement('p');
    p.className = 'loose';
    p.textContent = 'Not in the tree now: ' + loose.map((n) => `${n.name}${n.running ? '' : ' (gone)'}`).join(', ');
    section.append(p);
  }
  return section;
}

on('mesh_nodes', (m) => {
  clock.textContent = `${time(m.at)} since the start`;
  const nodes = Array.isArray(m.nodes) ? m.nodes : [];
  const byRoom = new Map();
  for (const n of nodes) {
    if (typeof n.room !== 'number') continue;  // the rendezvous
    if (!byRoom.has(n.room)) byRoom.set(n.room, []);
    byRoom.get(n.room).push(n);
  }
  const likes = Array.isArray(m.likes) ? m.likes : [];
  rooms.replaceChildren(...[...byRoom.keys()].sort((a, b) => a - b).map((r) => drawRoom(r, byRoom.get(r), likes[r - 1])));
});
on('mesh_event', (m) => append(events, m.at, m.text ?? ''));
on('mesh_said', (m) => append(said, m.at, `${m.nick ?? '?'}: ${m.kind === 'danmaku' ? '» ' : ''}${m.text ?? ''}`));
on('mesh_links', (m) => {
  const link = document.getElementById('studio-link');
  if (typeof m.studio === 'string' && m.studio.startsWith('http://')) {
    link.href = m.studio;
    link.textContent = `${m.viewer ?? 'a viewer'}'s studio page`;
    link.hidden = false;
  }
});
on('summary', (m) => {
  document.getElementById('summary').hidden = false;
  document.getElementById('summary-text').textContent = Array.isArray(m.text) ? m.text.join('\n') : JSON.stringify(m, null, 2);
});

connect();
