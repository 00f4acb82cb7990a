// A socket.io 4 application server, the shape wsplan's `protocol:
// socketio` meets in the field (README "Socket.IO"): clients join rooms
// with an acknowledged event, emit with acknowledgements, and publish to
// a room, which socket.io fans out to every member.
//
//   npm ci --prefix examples/socketio
//   node examples/socketio/server.js 127.0.0.1:9500 [--ping-interval MS] [--no-connect]
//
// Events (the default namespace "/"):
//   join   (room, ack)          joins room; ack({room})
//   leave  (room, ack)          leaves it; ack({room})
//   chat   (data, ack)          ack(data): an emit answered by its ack
//   publish({room, data}, ack?) io.to(room).emit("message", data); ack({n}) when asked
// --no-connect never answers a namespace connect (a server that breaks
// the protocol, for wsplan's tests).
'use strict';

let Server;
try {
  ({ Server } = require('socket.io'));
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  console.error('socketio app: the socket.io package is not installed: run `npm ci --prefix examples/socketio` in the repository root');
  process.exit(1);
}

const argv = process.argv.slice(2);
let addr = '127.0.0.1:9500';
let pingInterval = 25000;
let noConnect = false;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--ping-interval') pingInterval = Number(argv[++i]);
  else if (argv[i] === '--no-connect') noConnect = true;
  else addr = argv[i];
}
const i = addr.lastIndexOf(':');
const host = i < 0 ? '127.0.0.1' : addr.slice(0, i);
const port = Number(i < 0 ? addr : addr.slice(i + 1));

const httpServer = require('http').createServer();
const io = new Server(httpServer, { pingInterval, pingTimeout: 20000, transports: ['websocket', 'polling'], perMessageDeflate: false, maxHttpBufferSize: 1e6 });
if (noConnect) {
  // A namespace whose middleware never calls next(): the connect packet
  // goes unanswered.
  io.use(() => {});
}
let published = 0;
io.on('connection', (socket) => {
  socket.on('join', (room, ack) => {
    socket.join(String(room));
    if (typeof ack === 'function') ack({ room: String(room) });
  });
  socket.on('leave', (room, ack) => {
    socket.leave(String(room));
    if (typeof ack === 'function') ack({ room: String(room) });
  });
  socket.on('chat', (data, ack) => {
    if (typeof ack === 'function') ack(data);
  });
  socket.on('publish', (m, ack) => {
    published++;
    io.to(String(m && m.room)).emit('message', m && m.data);
    if (typeof ack === 'function') ack({ n: published });
  });
});
httpServer.listen(port, host);
httpServer.on('listening', () => console.log(`socketio app listening on ${host}:${port}`));
httpServer.on('error', (err) => {
  console.error(`socketio app: ${err.message}`);
  process.exit(1);
});
function stop() {
  console.log(`socketio app stopping (${published} published)`);
  io.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
