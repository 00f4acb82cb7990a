// A JSON-RPC 2.0 server on rpc-websockets (npm), a library no one on
// wsplan wrote: the server of plans/jsonrpc.yaml (README "Scripted
// conversations"), measured by the script phase as any JSON-RPC client
// would talk to it.
//
//   npm ci --prefix examples/rpc-websockets
//   node examples/rpc-websockets/server.js 127.0.0.1:9500
//
// Methods (params → result):
//   sum    [a, b, …]   → a + b + …
//   echo   any          → the params as they came
//   sleep  {ms: N}      → N, answered N ms later (0–1000): replies leave out
//                         of order when a connection has several in flight
//   publish {…}         → true, and every subscriber of the "feed" event
//                         gets {"notification":"feed","params":{…}}
//   broadcast [event, data] → true, and every subscriber of event (one of
//                         the rooms) gets {"notification":event,"params":[data]}:
//                         the broadcast phase's publish through protocol: jsonrpc
// Events: "feed", and the rooms "room.0" … "room.<N-1>" (--rooms N, default
// 1000; the broadcast phase's room N), each subscribed with the library's
// rpc.on ["name"].
//
//   node examples/rpc-websockets/server.js 127.0.0.1:9500 [--rooms N]
//
// The address is host:port or a port alone (on 127.0.0.1); the default is
// 127.0.0.1:9500. SIGTERM and SIGINT stop it with status 0, after a line
// counting the calls it answered.
'use strict';

let Server;
try {
  ({ Server } = require('rpc-websockets'));
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  console.error('rpc-websockets server: the rpc-websockets package is not installed: run `npm ci --prefix examples/rpc-websockets` in the repository root');
  process.exit(1);
}

function parseAddr(s) {
  const i = s.lastIndexOf(':');
  const host = i < 0 ? '127.0.0.1' : s.slice(0, i);
  const port = Number(i < 0 ? s : s.slice(i + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`want host:port or a port between 1 and 65535, got ${JSON.stringify(s)}`);
  }
  return { host: host || '127.0.0.1', port };
}

let addr;
let rooms = 1000;
try {
  const argv = process.argv.slice(2);
  let a = '127.0.0.1:9500';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rooms') {
      rooms = Number(argv[++i]);
      if (!Number.isInteger(rooms) || rooms < 0) throw new Error(`--rooms wants a count >= 0, got ${JSON.stringify(argv[i])}`);
    } else a = argv[i];
  }
  addr = parseAddr(a);
} catch (err) {
  console.error(`rpc-websockets server: ${err.message}`);
  process.exit(2);
}

const server = new Server({ host: addr.host, port: addr.port, perMessageDeflate: false });
const calls = { sum: 0, echo: 0, sleep: 0, publish: 0, broadcast: 0 };

server.register('sum', (params) => {
  calls.sum++;
  if (!Array.isArray(params)) throw new Error('sum wants an array of numbers');
  return params.reduce((a, b) => a + Number(b), 0);
});
server.register('echo', (params) => {
  calls.echo++;
  return params;
});
server.register('sleep', (params) => {
  calls.sleep++;
  const ms = Math.min(Math.max(Number(params && params.ms) || 0, 0), 1000);
  return new Promise((resolve) => setTimeout(() => resolve(ms), ms));
});
server.event('feed');
server.register('publish', (params) => {
  calls.publish++;
  server.emit('feed', params);
  return true;
});

for (let i = 0; i < rooms; i++) server.event(`room.${i}`);
server.register('broadcast', (params) => {
  calls.broadcast++;
  if (!Array.isArray(params) || typeof params[0] !== 'string' || !params[0].startsWith('room.')) {
    throw new Error('broadcast wants ["room.N", data]');
  }
  server.emit(params[0], params[1]);
  return true;
});

let socketErrors = 0;
server.on('socket-error', () => { socketErrors++; });
server.on('listening', () => {
  // The package exports no package.json: read it beside its entry point.
  const pkg = require('path').join(require.resolve('rpc-websockets'), '..', '..', 'package.json');
  const v = JSON.parse(require('fs').readFileSync(pkg, 'utf8')).version;
  console.log(`rpc-websockets server: rpc-websockets ${v} on node ${process.version}, listening on ${addr.host}:${addr.port}`);
});
server.on('error', (err) => {
  console.error(`rpc-websockets server: ${err.message}`);
  process.exit(1);
});

function stop(sig) {
  const c = Object.entries(calls).map(([k, n]) => `${k} ${n}`).join(', ');
  console.log(`rpc-websockets server: ${sig}, calls: ${c}; ${socketErrors} socket errors`);
  process.exit(0);
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
