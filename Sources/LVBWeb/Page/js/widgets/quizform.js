// The host's "Ask a quiz", part of the quiz widget (quiz.js places it and
// says when the host may ask): a toggle that opens a small form — the
// question, the options separated by |, how many seconds it is open —
// checked as the node checks it, then sent as {cmd:"quiz"}. What was typed
// stays until the quiz comes back; the node's refusal (an error event)
// lets it be sent again.

import { button, el } from '../dom.js';
import * as limits from '../limits.js';

/** How long a quiz is open, in seconds (the node takes 5 to 600), and how many options it has. */
const seconds = { min: 5, max: 600, usual: 30 };
export const options = { min: 2, max: 6 };

function input(type, placeholder, label, maxLength) {
  const i = el('input');
  i.type = type;
  i.placeholder = placeholder;
  i.maxLength = maxLength;
  i.autocomplete = 'off';
  i.setAttribute('aria-label', label);
  return i;
}

/** The toggle and the form; `changed` is called when the form opens or closes, or a quiz is sent. */
export function askForm(bus, changed) {
  const question = input('text', 'Question', 'Question', limits.quizQuestion.bytes);
  const choices = input('text', 'Option | Option | …', 'Options, separated by |', options.max * (limits.quizOption.bytes + 3));
  const time = input('number', 'Seconds', 'Seconds open', 3);
  Object.assign(time, { min: String(seconds.min), max: String(seconds.max), step: '1', value: String(seconds.usual) });
  const send = button('quiz-ask primary', 'Ask', ask);
  const row = el('div', 'quiz-form-row');
  row.append(time, el('span', 'quiz-unit', 's'), send, button('quiz-cancel', 'Cancel', () => setOpen(false)));
  const panel = el('div', 'panel quiz-form');
  panel.append(el('h2', '', 'Ask a quiz'), question, choices, row);
  const toggle = button('quiz-ask-toggle', 'Ask a quiz', () => setOpen(!open));
  for (const i of [question, choices, time]) {
    i.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.isComposing) {
        e.preventDefault();
        ask();
      }
    });
  }
  let open = false;
  // Sent, and neither back as a quiz nor refused yet.
  let asking = false;

  function toast(message) {
    bus.emit('page:toast', { message });
  }

  function setOpen(on) {
    open = on;
    changed();
    if (on) question.focus();
  }

  function ask() {
    if (asking) return;
    const q = question.value.trim();
    const opts = choices.value.split('|').map((o) => o.trim());
    const s = Number(time.value);
    if (!q) return toast('Type the question first.');
    if (q.includes('|')) return toast('The question cannot hold a |: it separates the options.');
    if (opts.length < options.min || opts.length > options.max || opts.some((o) => !o)) {
      return toast(`Give ${options.min} to ${options.max} options, separated by |.`);
    }
    if (!Number.isInteger(s) || s < seconds.min || s > seconds.max) {
      return toast(`A quiz is open ${seconds.min} to ${seconds.max} seconds.`);
    }
    if (!limits.fits(bus, q, limits.quizQuestion) || !opts.every((o) => limits.fits(bus, o, limits.quizOption))) return;
    if (!bus.send({ cmd: 'quiz', seconds: s, text: [q, ...opts].join(' | ') })) return;
    asking = true;
    changed();
  }

  return {
    toggle,
    panel,
    /** True while the form is open (the card makes way for it). */
    get open() { return open; },
    /** Shows the toggle, and the form if it is open, when the host may ask; closes it otherwise. */
    show(canAsk) {
      if (!canAsk) open = false;
      toggle.hidden = !canAsk;
      toggle.setAttribute('aria-pressed', String(open));
      panel.hidden = !open;
      send.disabled = asking;
      send.textContent = asking ? 'Asking…' : 'Ask';
    },
    /** A quiz came: the one this form sent is out, and the form closes empty. */
    asked() {
      if (!asking) return;
      asking = false;
      open = false;
      question.value = '';
      choices.value = '';
    },
    /** Nothing is on its way (the node refused a command, or the page connected again): an ask may be sent again. */
    idle() {
      asking = false;
    },
  };
}
