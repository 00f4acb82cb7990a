// An echo server on Node's ws package: every message goes back on its
// connection with the same opcode (text stays text, binary stays binary).
// It is the server of plans/openloop-node.yaml; any path upgrades.
//
//   npm ci --prefix examples/node-ws
//   node examples/node-ws/server.js 127.0.0.1:9300   # or WS_ADDR=127.0.0.1:9300
//
// The address is host:port or a port alone (on 127.0.0.1); the default is
// 127.0.0.1:9300. SIGTERM and SIGINT stop it with status 0.
'use strict';

let WebSocketServer;
try {
  ({ WebSocketServer } = require('ws'));
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  console.error('node-ws: the ws package is not installed: run `npm ci --prefix examples/node-ws` in the repository root');
  process.exit(1);
}

function parseAddr(s) {
  const i = s.lastIndexOf(':');
  const host = i < 0 ? '127.0.0.1' : s.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  const port = Number(i < 0 ? s : s.slice(i + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`want host:port or a port between 1 and 65535, got ${JSON.stringify(s)}`);
  }
  return { host: host || '127.0.0.1', port };
}

let addr;
try {
  addr = parseAddr(process.argv[2] || process.env.WS_ADDR || '127.0.0.1:9300');
} catch (err) {
  console.error(`node-ws: ${err.message}`);
  process.exit(2);
}

// perMessageDeflate is off by default in ws 8; said here so the shape is
// plain frames whatever the version.
const wss = new WebSocketServer({ host: addr.host, port: addr.port, perMessageDeflate: false });

let socketErrors = 0;
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  // A protocol error or a reset closes the connection; without a listener
  // ws would throw and end the whole server.
  ws.on('error', () => { socketErrors++; });
});
wss.on('listening', () => {
  console.log(`node-ws: ws ${require('ws/package.json').version} on node ${process.version}, listening on ${addr.host}:${addr.port}`);
});
wss.on('error', (err) => {
  console.error(`node-ws: ${err.message}`);
  process.exit(1);
});

function stop(sig) {
  console.log(`node-ws: ${sig}, ${wss.clients.size} connections open, ${socketErrors} socket errors`);
  process.exit(0);
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
