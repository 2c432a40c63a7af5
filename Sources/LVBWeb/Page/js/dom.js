// Element helpers for the widgets. Text always goes in as a text node: nicks,
// chat, titles and messages come from other people, and must never be parsed
// as HTML.

/** A new element with an optional class name and text. */
export function el(tag, className = '', text = '') {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== '') e.textContent = text;
  return e;
}

/** A button that calls onClick. */
export function button(className, text, onClick) {
  const b = el('button', className, text);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

/** Calls fn with the value of input (trimmed) on Enter or a click on sendButton; clears the input when fn returns true. */
export function onSubmit(input, sendButton, fn) {
  const submit = () => {
    const text = input.value.trim();
    if (text && fn(text)) input.value = '';
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  sendButton.addEventListener('click', submit);
}

/** A stable colour for a node id, so one person's name looks the same everywhere. */
export function nickColor(id) {
  let h = 0;
  for (const ch of String(id)) h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${h % 360} 75% 72%)`;
}
