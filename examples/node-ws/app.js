// An application server on Node's ws package, shaped like the services
// wsplan's script phase measures (README "Scripted conversations"): JSON
// messages, a login that returns a token, requests answered by id,
// subscriptions that push events, presence pushes nobody asked for.
//
//   npm ci --prefix examples/node-ws
//   node examples/node-ws/app.js 127.0.0.1:9400 [--odd-delay MS] [--stall MS --every MS] [--presence MS]
//
// Messages (JSON text):
//   {"op":"login","user":U,"password":P}    -> {"op":"login_ok","token":"tok-U"} when P is "pw-"+U,
//                                              else {"op":"login_failed"}
//   {"op":"subscribe","room":R,"token":T}   -> {"op":"subscribed","room":R}, then every room member
//                                              gets {"type":"event","room":R,"n":N} on each publish
//   {"op":"publish","room":R,"id":I}        -> {"op":"published","id":I} and an event to the room
//   {"op":"echo"|"add",...,"id":I}          -> {"op":"reply","id":I,...} (add: "sum" of "a" and "b")
//   anything else with an id                -> {"op":"error","id":I}
//   a binary message                        -> the same bytes back (the rate phase's echo)
// A request without a login's token is answered {"op":"error","id":I,"error":"unauthorized"}.
//
// --odd-delay MS answers requests with an odd id MS late (replies out of
// order); --stall MS --every MS blocks the event loop MS out of every MS
// (a pause as a garbage collector makes); --presence MS pushes
// {"type":"presence"} to every connection that often. On SIGTERM it
// prints "logins: N, distinct users: M, repeated: K" (K users logged in
// more than once): a plan whose users each take their own data row shows
// M = N, K = 0.
'use strict';

let WebSocketServer;
try {
  ({ WebSocketServer } = require('ws'));
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  console.error('node-ws app: the ws package is not installed: run `npm ci --prefix examples/node-ws` in the repository root');
  process.exit(1);
}

function parseArgs(argv) {
  const o = { addr: '127.0.0.1:9400', oddDelay: 0, stall: 0, every: 0, presence: 0 };
  const flags = { '--odd-delay': 'oddDelay', '--stall': 'stall', '--every': 'every', '--presence': 'presence' };
  for (let i = 0; i < argv.length; i++) {
    const f = flags[argv[i]];
    if (f) {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v < 0) throw new Error(`${argv[i - 1]} wants milliseconds, got ${JSON.stringify(argv[i])}`);
      o[f] = v;
    } else if (!argv[i].startsWith('--')) {
      o.addr = argv[i];
    } else {
      throw new Error(`unknown flag ${argv[i]}`);
    }
  }
  if ((o.stall > 0) !== (o.every > 0)) throw new Error('--stall and --every go together');
  const i = o.addr.lastIndexOf(':');
  o.host = i < 0 ? '127.0.0.1' : o.addr.slice(0, i);
  o.port = Number(i < 0 ? o.addr : o.addr.slice(i + 1));
  if (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535) throw new Error(`bad address ${JSON.stringify(o.addr)}`);
  return o;
}

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (err) {
  console.error(`node-ws app: ${err.message}`);
  process.exit(2);
}

const wss = new WebSocketServer({ host: opts.host, port: opts.port, perMessageDeflate: false });
const rooms = new Map(); // room -> Set of sockets
const logins = new Map(); // user -> successful logins
let published = 0;

function send(ws, obj) {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(obj));
}

function handle(ws, m) {
  if (m.op === 'login') {
    if (typeof m.user === 'string' && m.password === 'pw-' + m.user) {
      ws.token = 'tok-' + m.user;
      logins.set(m.user, (logins.get(m.user) || 0) + 1);
      send(ws, { op: 'login_ok', token: ws.token });
    } else {
      send(ws, { op: 'login_failed' });
    }
    return;
  }
  if (m.token !== undefined && m.token !== ws.token) {
    send(ws, { op: 'error', id: m.id, error: 'unauthorized' });
    return;
  }
  switch (m.op) {
    case 'subscribe': {
      const room = String(m.room);
      if (!rooms.has(room)) rooms.set(room, new Set());
      rooms.get(room).add(ws);
      (ws.rooms = ws.rooms || []).push(room);
      send(ws, { op: 'subscribed', room });
      return;
    }
    case 'publish': {
      const n = ++published;
      for (const peer of rooms.get(String(m.room)) || []) send(peer, { type: 'event', room: String(m.room), n });
      send(ws, { op: 'published', id: m.id });
      return;
    }
    case 'echo':
    case 'add': {
      const reply = { op: 'reply', id: m.id };
      if (m.op === 'add') reply.sum = Number(m.a) + Number(m.b);
      if (m.data !== undefined) reply.data = m.data;
      if (opts.oddDelay > 0 && Number(m.id) % 2 === 1) setTimeout(() => send(ws, reply), opts.oddDelay);
      else send(ws, reply);
      return;
    }
    default:
      send(ws, { op: 'error', id: m.id, error: 'unknown op' });
  }
}

let socketErrors = 0;
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      ws.send(data, { binary: true });
      return;
    }
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      send(ws, { op: 'error', error: 'not JSON' });
      return;
    }
    handle(ws, m);
  });
  ws.on('close', () => {
    for (const r of ws.rooms || []) rooms.get(r)?.delete(ws);
  });
  ws.on('error', () => { socketErrors++; });
});

if (opts.presence > 0) {
  setInterval(() => {
    for (const ws of wss.clients) send(ws, { type: 'presence' });
  }, opts.presence);
}
if (opts.every > 0) {
  // A pause of the whole process, as a stop-the-world collection makes:
  // nothing is read, answered or accepted while it lasts.
  setInterval(() => {
    const until = Date.now() + opts.stall;
    while (Date.now() < until) { /* stalled */ }
  }, opts.every);
}

wss.on('listening', () => {
  const a = wss.address();
  console.log(`node-ws app listening on ${a.address}:${a.port}`);
});
wss.on('error', (err) => {
  console.error(`node-ws app: ${err.message}`);
  process.exit(1);
});
function stop() {
  let total = 0;
  let repeated = 0;
  for (const n of logins.values()) {
    total += n;
    if (n > 1) repeated++;
  }
  console.log(`node-ws app: logins: ${total}, distinct users: ${logins.size}, repeated: ${repeated}`);
  console.log(`node-ws app stopping (${socketErrors} socket errors)`);
  wss.close();
  for (const ws of wss.clients) ws.terminate();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
