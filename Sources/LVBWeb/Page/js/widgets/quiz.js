// The online quiz (.quiz, made here and placed on the #widgets grid by
// widgets.css: top left under the room head). The host's question shows as
// a card with a countdown to its ends_at (the host's wall clock, read
// against this page's) and one button per option; a member's click sends
// {cmd:"answer"} (one answer counts), then its choice is marked, the
// buttons are disabled and quiz_answer's status is said. quiz_result turns
// the options into bars of the host's tally; once the host names the right
// option, it is highlighted and the winners are listed. The host's page has
// the same card with a Reveal button per option ({cmd:"reveal"}, which also
// ends an open quiz early), and asks with the form of quizform.js. A page
// that connects mid-quiz gets the quiz, its result and this member's answer
// right after hello.

import { button, el, nickColor } from '../dom.js';
import { askForm, options } from './quizform.js';

/** A revealed quiz's card stays this long (ms), unless closed sooner. */
const revealedFor = 30000;
/** Winners named on the card; the rest are counted. */
const namedWinners = 5;

/** What a member's answer status (quiz_answer's, or 'pending' until the node says) reads as. */
const statuses = {
  pending: 'Sending your answer…',
  sent: 'Your answer went to the host…',
  counted: 'Your answer counted',
  refused: 'Refused: an earlier answer of yours counts',
  late: 'Too late: the quiz had closed',
  unanswered: 'The host never confirmed your answer',
};

/** Seconds left as m:ss, whole seconds rounded up, never below 0:00. */
function countdown(left) {
  const s = Math.max(0, Math.ceil(left));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function mount(root, bus) {
  const card = el('div', 'panel quiz-card');
  const time = el('span', 'quiz-time');
  const dismiss = button('quiz-dismiss', '×', () => {
    dismissed = quiz?.id ?? null;
    render();
  });
  dismiss.setAttribute('aria-label', 'Close the quiz card');
  const head = el('div', 'quiz-head');
  head.append(el('h2', '', 'Quiz'), time, dismiss);
  const clock = el('div', 'quiz-clock');
  const clockFill = el('div', 'quiz-clock-fill');
  clock.append(clockFill);
  const question = el('p', 'quiz-question');
  const list = el('ol', 'quiz-options');
  const status = el('p', 'quiz-status');
  status.setAttribute('aria-live', 'polite');
  const winners = el('p', 'quiz-winners');
  card.append(head, clock, question, list, status, winners);
  const form = askForm(bus, () => render());
  const section = el('section', 'quiz live-only');
  section.setAttribute('aria-label', 'Quiz');
  section.append(card, form.toggle, form.panel);
  root.querySelector('#widgets').append(section);

  let hosting = false;
  let roomClosed = false;
  // The quiz shown {id, question, options, endsAt, seconds}; the latest
  // quiz_result and quiz_answer (shown when they name it); the answer
  // clicked here that the node has not spoken of yet {id, answer}.
  let quiz = null;
  let result = null;
  let mine = null;
  let pending = null;
  // The card closed here (its quiz id); the host's reveal, sent and not yet answered.
  let dismissed = null;
  let revealing = false;
  let tick = 0;
  let hide = 0;

  function about(m) {
    return quiz !== null && m !== null && m.id === quiz.id;
  }

  /** 'none', 'open', 'counting' (time is up, no tally yet), 'closed' (tallied) or 'revealed'. */
  function phase() {
    if (quiz === null) return 'none';
    if (about(result)) return result.answer === null ? 'closed' : 'revealed';
    return Date.now() >= quiz.endsAt ? 'counting' : 'open';
  }

  function answerStatus() {
    if (about(mine)) return mine.status;
    return about(pending) ? 'pending' : null;
  }

  function chosen() {
    if (about(mine)) return mine.answer;
    return about(pending) ? pending.answer : null;
  }

  function answerable() {
    return !hosting && !roomClosed && phase() === 'open' && chosen() === null;
  }

  function answer(n) {
    if (!answerable() || !bus.send({ cmd: 'answer', answer: n })) return;
    pending = { id: quiz.id, answer: n };
    render();
  }

  function reveal(n) {
    if (revealing || !bus.send({ cmd: 'reveal', answer: n })) return;
    revealing = true;
    render();
  }

  function option(text, i, p) {
    const n = i + 1;
    const fill = el('span', 'quiz-fill');
    const parts = [fill, el('span', 'quiz-number', String(n)), el('span', 'quiz-text', text)];
    if (p === 'closed' || p === 'revealed') {
      const count = Math.max(0, Number(result.counts?.[i]) || 0);
      const total = Math.max(0, Number(result.answers) || 0);
      const share = total > 0 ? Math.min(1, count / total) : 0;
      fill.style.transform = `scaleX(${share})`;
      parts.push(el('span', 'quiz-count', `${count} · ${Math.round(share * 100)}%`));
    }
    let item;
    if (hosting) {
      item = el('div', 'quiz-option');
      item.append(...parts);
      if (p !== 'revealed' && !roomClosed) {
        const b = button('quiz-reveal', 'Reveal', () => reveal(n));
        b.title = p === 'open' ? `End the quiz now; option ${n} is right` : `Option ${n} is right`;
        b.disabled = revealing;
        item.append(b);
      }
    } else {
      item = button('quiz-option', '', () => answer(n));
      item.append(...parts);
      item.disabled = !answerable();
    }
    item.dataset.option = String(n);
    if (chosen() === n) item.dataset.chosen = '';
    if (p === 'revealed' && result.answer === n) item.dataset.right = '';
    const li = el('li');
    li.append(item);
    return li;
  }

  function statusText(p) {
    const total = about(result) ? Math.max(0, Number(result.answers) || 0) : 0;
    if (hosting) {
      if (p === 'open') return 'Members are answering. Reveal ends the quiz now.';
      if (p === 'counting') return 'Time is up: counting…';
      if (p === 'closed') return `${plural(total, 'answer')}. Reveal the right one.`;
      return plural(total, 'answer');
    }
    const s = answerStatus();
    if (s === null) {
      if (p === 'open') return 'Pick one: one answer counts.';
      return p === 'counting' ? 'Time is up.' : `You did not answer · ${plural(total, 'answer')}`;
    }
    const said = statuses[s] ?? s;
    if (p === 'revealed' && s === 'counted') return `${said} · ${mine.answer === result.answer ? 'right!' : 'not this time'}`;
    return said;
  }

  function showWinners(p) {
    winners.replaceChildren();
    winners.hidden = p !== 'revealed';
    if (winners.hidden) return;
    const named = (Array.isArray(result.winners) ? result.winners : []).slice(0, namedWinners);
    const count = Math.max(named.length, Number(result.winners_count) || 0);
    if (count === 0) {
      winners.append('Nobody got it right');
      return;
    }
    // Nicks are other people's text: text nodes, as everywhere.
    winners.append('Right: ');
    named.forEach((w, i) => {
      const nick = el('span', 'nick', w.nick || String(w.id ?? '').slice(0, 8));
      nick.style.color = nickColor(w.id);
      if (i > 0) winners.append(', ');
      winners.append(nick);
    });
    const more = count - named.length;
    if (more > 0) winners.append(el('span', 'quiz-more', ` +${more} more`));
  }

  function render() {
    const p = phase();
    // The host asks a new quiz once the last one is closed; its open form takes the card's place.
    const canAsk = hosting && !roomClosed && (p === 'none' || p === 'closed' || p === 'revealed');
    form.show(canAsk);
    const showCard = p !== 'none' && dismissed !== quiz.id && !form.open;
    card.hidden = !showCard;
    if (showCard) {
      card.dataset.phase = p;
      question.textContent = quiz.question;
      list.replaceChildren(...quiz.options.map((text, i) => option(text, i, p)));
      status.textContent = statusText(p);
      const s = hosting ? null : answerStatus();
      if (s) status.dataset.status = s;
      else delete status.dataset.status;
      showWinners(p);
      dismiss.hidden = p === 'open' || p === 'counting';
    }
    section.hidden = !showCard && !canAsk;
    showTime();
  }

  function showTime() {
    clearTimeout(tick);
    const p = phase();
    if (p !== 'open') {
      time.textContent = p === 'none' ? '' : 'Closed';
      clockFill.style.transform = 'scaleX(0)';
      return;
    }
    const left = Math.max(0, quiz.endsAt - Date.now());
    time.textContent = countdown(left / 1000);
    clockFill.style.transform = `scaleX(${Math.min(1, left / (Math.max(1, quiz.seconds) * 1000))})`;
    // The next whole second, a little after it turns; at the end the card closes its buttons.
    tick = setTimeout(() => (phase() === 'open' ? showTime() : render()), (left % 1000 || 1000) + 20);
  }

  bus.on('hello', (m) => {
    // The greeting's quiz lines (if any) follow the hello: start from nothing.
    hosting = m.role === 'host';
    roomClosed = false;
    quiz = result = mine = pending = null;
    dismissed = null;
    revealing = false;
    form.idle();
    clearTimeout(hide);
    render();
  });
  bus.on('quiz', (m) => {
    if (typeof m.id !== 'string' || !Array.isArray(m.options)) return;
    quiz = {
      id: m.id,
      question: String(m.question ?? ''),
      options: m.options.slice(0, options.max).map(String),
      endsAt: Number(m.ends_at) || 0,
      seconds: Number(m.seconds) || 0,
    };
    form.asked();
    render();
  });
  bus.on('quiz_result', (m) => {
    if (typeof m.id !== 'string' || !Array.isArray(m.counts)) return;
    // The tally again without the answer cannot take the answer back.
    if (result?.id === m.id && result.answer !== null && m.answer === null) return;
    result = { ...m, answer: Number.isInteger(m.answer) ? m.answer : null };
    if (about(result)) revealing = false;
    if (about(result) && result.answer !== null) {
      clearTimeout(hide);
      const id = result.id;
      hide = setTimeout(() => {
        if (quiz?.id === id) dismissed = id;
        render();
      }, revealedFor);
    }
    render();
  });
  bus.on('quiz_answer', (m) => {
    if (typeof m.id !== 'string') return;
    mine = { id: m.id, answer: Number(m.answer) || null, status: String(m.status ?? '') };
    render();
  });
  // A refused command: an answer, ask or reveal the node did not take can be tried again.
  bus.on('error', () => {
    if (pending && !about(mine)) pending = null;
    revealing = false;
    form.idle();
    render();
  });
  bus.on('room_closed', () => {
    roomClosed = true;
    render();
  });
  render();
}
