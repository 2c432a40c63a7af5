// Brief notices (#toast): the node's error events, and notes other widgets
// post as "page:toast".

/** How long a notice stays, in ms. */
const shownFor = 4000;

export function mount(root, bus) {
  const toast = root.querySelector('#toast');
  let timer = 0;

  function show({ message }) {
    if (!message) return;
    toast.textContent = message;
    toast.hidden = false;
    clearTimeout(timer);
    timer = setTimeout(() => { toast.hidden = true; }, shownFor);
  }

  bus.on('error', show);
  bus.on('page:toast', show);
}
