// Lite mode (#lite-toggle): only the picture, for a weak machine or a clear
// view. The CSS hides the other layers by the body's data-lite; the widgets
// that do work for hidden layers hear "page:lite" and stop.

export function mount(root, bus) {
  const toggle = root.querySelector('#lite-toggle');

  toggle.addEventListener('click', () => {
    const on = toggle.getAttribute('aria-pressed') !== 'true';
    toggle.setAttribute('aria-pressed', String(on));
    document.body.toggleAttribute('data-lite', on);
    bus.emit('page:lite', { on });
  });
}
