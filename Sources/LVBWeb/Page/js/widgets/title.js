// The room title (#title), from the hello and each room_info that carries one.

export function mount(root, bus) {
  const title = root.querySelector('#title');

  function show(text) {
    title.textContent = text;
    document.title = `${text} — lvbnode`;
  }

  bus.on('hello', (m) => show(m.title || 'Untitled room'));
  bus.on('room_info', (m) => { if (typeof m.title === 'string' && m.title) show(m.title); });
}
