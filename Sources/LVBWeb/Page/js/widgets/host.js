// The host's controls: the room title (#title-input, #title-save), the
// layout of the co-host tiles (#layout-select), going live with this
// browser's own camera and microphone in place of the node's sources
// (#host-camera, "page:camera": capture.js does it) and closing the room
// (#close-room, which asks for a second tap).

import { onSubmit } from '../dom.js';
import { cameraButton } from '../media/capture.js';
import * as limits from '../limits.js';

/** How long the close button waits for its confirming tap, in ms. */
const confirmFor = 3000;

export function mount(root, bus) {
  const titleInput = root.querySelector('#title-input');
  const titleSave = root.querySelector('#title-save');
  const layout = root.querySelector('#layout-select');
  const close = root.querySelector('#close-room');
  let confirming = 0;

  cameraButton(root.querySelector('#host-camera'), bus, 'Go live with my camera');

  // The box keeps showing the title it set: the callback never has it cleared.
  onSubmit(titleInput, titleSave, (text) => {
    if (limits.fits(bus, text, limits.title) && bus.send({ cmd: 'title', text })) titleInput.blur();
    return false;
  });
  layout.addEventListener('change', () => bus.send({ cmd: 'layout', layout: layout.value }));

  function disarm() {
    clearTimeout(confirming);
    confirming = 0;
    close.textContent = 'Close room';
    close.classList.remove('armed');
  }
  close.addEventListener('click', () => {
    if (!confirming) {
      close.textContent = 'Tap again to close';
      close.classList.add('armed');
      confirming = setTimeout(disarm, confirmFor);
      return;
    }
    disarm();
    bus.send({ cmd: 'close' });
  });

  // The input starts with the title the room has, for editing.
  bus.on('hello', (m) => {
    titleInput.value = m.title ?? '';
    showLayout(m);
  });
  // The layout in use: as chosen here or on the console, or as it follows the guest count.
  function showLayout(m) {
    if ([...layout.options].some((o) => o.value === m.layout)) layout.value = m.layout;
  }
  bus.on('layout', showLayout);
  bus.on('room_info', (m) => {
    if (typeof m.title === 'string' && document.activeElement !== titleInput) titleInput.value = m.title;
  });
  bus.on('room_closed', () => { close.disabled = true; });
}
