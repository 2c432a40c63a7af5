// The studio page: it mounts every widget on the stage, starts the decoders,
// then connects to the node. Each widget only hears the bus and sends
// commands through it; none touches another's elements.

import * as bus from './bus.js';
import './probe.js';
import * as audio from './media/audio.js';
import * as capture from './media/capture.js';
import * as video from './media/video.js';
import * as chat from './widgets/chat.js';
import * as danmaku from './widgets/danmaku.js';
import * as gifts from './widgets/gifts.js';
import * as host from './widgets/host.js';
import * as likes from './widgets/likes.js';
import * as linkmic from './widgets/linkmic.js';
import * as pk from './widgets/pk.js';
import * as pkhost from './widgets/pkhost.js';
import * as quiz from './widgets/quiz.js';
import * as lite from './widgets/lite.js';
import * as rank from './widgets/rank.js';
import * as replay from './widgets/replay.js';
import * as rooms from './widgets/rooms.js';
import * as stats from './widgets/stats.js';
import * as status from './widgets/status.js';
import * as title from './widgets/title.js';
import * as toast from './widgets/toast.js';
import * as viewers from './widgets/viewers.js';

const stage = document.getElementById('stage');
const canvas = document.getElementById('video');

for (const widget of [title, status, toast, chat, danmaku, gifts, likes, rank, viewers, rooms, linkmic, pk, pkhost, quiz, host, lite, stats, replay]) {
  widget.mount(stage, bus);
}
video.start(canvas, bus);
audio.start(bus);
capture.start(bus);

// The CSS shows host-only or viewer-only parts by the role the node gives this page.
bus.on('hello', (m) => { document.body.dataset.role = m.role; });
// The layers above the picture let taps through where they have nothing; such a tap likes.
canvas.addEventListener('click', () => bus.emit('page:tap'));

bus.connect();
