// The Node ws echo server as a new user first writes it: no 'error'
// listener on its sockets, so the first protocol error a client provokes
// (conformance case 2.5, a ping with 126 bytes) throws and ends the whole
// process. TestNodeServerCrashes runs it against a conformance phase.
//
//   NODE_PATH=examples/node-ws/node_modules node crash-server.js 127.0.0.1:PORT
'use strict';
const { WebSocketServer } = require('ws');
const arg = process.argv[2] || '127.0.0.1:9300';
const i = arg.lastIndexOf(':');
const wss = new WebSocketServer({ host: arg.slice(0, i), port: Number(arg.slice(i + 1)), perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});
wss.on('listening', () => console.log('listening'));
