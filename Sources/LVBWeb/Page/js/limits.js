// The room's text limits, in UTF-8 bytes (lvbnode(1), Limits). The node
// refuses longer text with an error event; the page says what is wrong
// before sending, and keeps what was typed. (A link-mic message has no entry:
// the node cuts it to 200 bytes rather than refusing it.)

export const chat = { bytes: 500, what: 'A chat message' };
export const danmaku = { bytes: 100, what: 'A bullet comment' };
export const title = { bytes: 100, what: 'A room title' };
export const quizQuestion = { bytes: 160, what: 'A quiz question' };
export const quizOption = { bytes: 48, what: 'A quiz option' };

const encoder = new TextEncoder();

/** True if text is within limit; otherwise a toast names the limit and the answer is false. */
export function fits(bus, text, limit) {
  const length = encoder.encode(text).length;
  if (length <= limit.bytes) return true;
  bus.emit('page:toast', { message: `${limit.what} is at most ${limit.bytes} bytes (this one is ${length}).` });
  return false;
}
