// The room title (#title), from the hello and each room_info that carries
// one; a replay's from its replay_info (a live viewer's node that plays a
// replay on this page still hears its room: that room's title waits).

export function mount(root, bus) {
  const title = root.querySelector('#title');
  let replay = false;

  function show(text) {
    title.textContent = text;
    document.title = `${text} — lvbnode`;
  }

  bus.on('hello', (m) => {
    replay = m.role === 'replay';
    show(m.title || (replay ? 'Replay' : 'Untitled room'));
  });
  bus.on('room_info', (m) => { if (!replay && typeof m.title === 'string' && m.title) show(m.title); });
  bus.on('replay_info', (m) => { if (replay && typeof m.title === 'string' && m.title) show(m.title); });
}
