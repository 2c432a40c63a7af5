// The room's state (#status): a small LIVE badge while the room is live, a
// message across the picture otherwise. CSS styles it by data-status.

const messages = {
  connecting: 'Connecting to your node…',
  reconnecting: 'Connection to your node lost — reconnecting…',
  connected: '',
  entering: 'Entering the room…',
  live: 'LIVE',
  host_away: 'The host stepped away — waiting for them to come back',
  closing: 'The room is closing…',
  closed: 'The host closed the room',
  removed: 'The host removed you from the room',
  replay: 'REPLAY',
  loading: 'Loading…',
  replay_ended: 'The replay ended',
};

export function mount(root, bus) {
  const status = root.querySelector('#status');
  let me = null;

  function show(state) {
    status.dataset.status = state;
    status.textContent = messages[state];
  }

  bus.on('page:socket', ({ state, final }) => {
    if (final) return;
    if (state === 'closed') show('reconnecting');
  });
  // Until the node says where the room stands, the connection itself is the news.
  bus.on('hello', (m) => {
    me = m.id;
    if (['connecting', 'reconnecting'].includes(status.dataset.status)) show('connected');
  });
  bus.on('status', (m) => { if (m.status in messages) show(m.status); });
  bus.on('room_closed', () => show('closed'));
  bus.on('kicked', (m) => { if (m.id === me) show('removed'); });
}
