// A replay's controls (#replay-bar), on the page of a node that plays a
// replay (its hello's role is "replay"): play and pause, a scrubber over the
// whole replay, the position and length, and the speed. The node says where
// it plays four times a second (replay_state); between those the scrubber
// moves on by itself. Dragging the scrubber seeks where it is let go.

/** "M:SS" or "H:MM:SS" of a time in ms. */
export function clock(ms) {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
  const ss = String(s).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export function mount(root, bus) {
  const toggle = root.querySelector('#replay-toggle');
  const seek = root.querySelector('#replay-seek');
  const time = root.querySelector('#replay-time');
  const speed = root.querySelector('#replay-speed');
  let active = false;
  // What the node said last, and when (performance.now()), to move on between its reports.
  let said = { position: 0, duration: 0, playing: false, speed: 1, at: 0 };
  let dragging = false;

  function position() {
    if (!said.playing) return said.position;
    return Math.min(said.duration, said.position + (performance.now() - said.at) * said.speed);
  }

  function render() {
    const now = position();
    if (!dragging) seek.value = String(now);
    seek.max = String(said.duration);
    time.textContent = `${clock(dragging ? Number(seek.value) : now)} / ${clock(said.duration)}`;
    toggle.textContent = said.playing ? '❚❚' : '▶';
    toggle.setAttribute('aria-label', said.playing ? 'Pause' : 'Play');
  }

  function frame() {
    if (!active) return;
    render();
    requestAnimationFrame(frame);
  }

  bus.on('hello', (m) => {
    const was = active;
    active = m.role === 'replay';
    if (active && !was) requestAnimationFrame(frame);
  });
  bus.on('replay_info', (m) => {
    if (typeof m.duration_ms === 'number') said.duration = m.duration_ms;
  });
  bus.on('replay_state', (m) => {
    said = {
      position: Number(m.position_ms) || 0,
      duration: typeof m.duration_ms === 'number' ? m.duration_ms : said.duration,
      playing: m.playing === true,
      speed: Number(m.speed) || 1,
      at: performance.now(),
    };
    if (document.activeElement !== speed) speed.value = String(said.speed);
  });

  toggle.addEventListener('click', () => bus.send({ cmd: said.playing ? 'pause' : 'play' }));
  seek.addEventListener('input', () => { dragging = true; });
  seek.addEventListener('change', () => {
    dragging = false;
    const ms = Math.round(Number(seek.value));
    if (bus.send({ cmd: 'seek', ms })) said = { ...said, position: ms, at: performance.now() };
  });
  speed.addEventListener('change', () => bus.send({ cmd: 'speed', x: Number(speed.value) }));
}
