// Likes: #like-button, or a tap on the picture, likes the room and sends a
// heart floating up from the button (#hearts); other people's likes float one
// too. #like-total shows the room's total.

import { el } from '../dom.js';

/** After a like is sent, taps during this many ms go together in the next command (the room takes about 5 like events a second from each member). */
const batchWindow = 250;
/** The most likes one command may carry. */
const maxBatch = 100;
/** Hearts in the air at most. */
const maxHearts = 40;

export function mount(root, bus) {
  const likeButton = root.querySelector('#like-button');
  const total = root.querySelector('#like-total');
  const hearts = root.querySelector('#hearts');
  let me = null;
  let shown = 0;
  let batched = 0;
  let windowOpen = false;

  // Totals only grow within a room, and events can pass each other.
  function setTotal(n, fresh = false) {
    if (typeof n !== 'number' || (!fresh && n <= shown)) return;
    shown = n;
    total.textContent = String(n);
  }

  function flush() {
    if (batched === 0) {
      windowOpen = false;
      return;
    }
    bus.send({ cmd: 'like', count: batched });
    batched = 0;
    windowOpen = true;
    setTimeout(flush, batchWindow);
  }

  function like() {
    heart();
    batched += 1;
    if (!windowOpen || batched >= maxBatch) flush();
  }

  function heart() {
    if (hearts.childElementCount >= maxHearts) return;
    const h = el('span', 'heart', '♥');
    h.style.color = `hsl(${Math.floor(Math.random() * 360)} 90% 65%)`;
    hearts.append(h);
    const drift = (Math.random() - 0.5) * 80;
    const run = h.animate(
      [
        { transform: 'translate(0, 0) scale(0.6)', opacity: 1 },
        { transform: `translate(${drift / 2}px, -90px) scale(1.1)`, opacity: 1, offset: 0.4 },
        { transform: `translate(${drift}px, -220px) scale(0.9)`, opacity: 0 },
      ],
      { duration: 1200 + Math.random() * 600, easing: 'ease-out' },
    );
    run.onfinish = () => h.remove();
  }

  likeButton.addEventListener('click', like);
  bus.on('page:tap', like);
  bus.on('hello', (m) => {
    me = m.id;
    setTotal(m.likes ?? 0, true);
  });
  bus.on('viewers', (m) => setTotal(m.likes));
  bus.on('like', (m) => {
    setTotal(m.total);
    if (m.id !== me) heart();
  });
}
