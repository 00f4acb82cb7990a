// A graphql-ws 6 server (the graphql-transport-ws protocol), the shape
// wsplan's `protocol: graphql-ws` meets in the field (README "GraphQL over
// WebSocket"): a Subscription fed by a Mutation through an in-process
// pubsub, one room per argument.
//
//   npm ci --prefix examples/graphql-ws
//   node examples/graphql-ws/server.js 127.0.0.1:9600 [--token T] [--refuse] [--ping MS]
//
// Schema:
//   type Query        { hello: String, echo(text: String!): String }
//   type Mutation     { publish(room: String!, data: String!): Boolean }
//   type Subscription { message(room: String!): String }
// message(room) yields null first, once the subscriber is in the room
// (graphql-ws has no subscription acknowledgement: this first result is
// how a client knows a publish cannot race ahead of it), then every data
// published to the room. The WebSocket path is /graphql.
//   --token T   connection_init's payload must be {"token":"T"} (else 4403)
//   --refuse    refuse every connection_init (4403 Forbidden)
//   --ping MS   send the protocol's ping every MS to every acknowledged
//               client and close with 4499 one that did not pong since
'use strict';

let graphql, useServer, WebSocketServer;
try {
  graphql = require('graphql');
  ({ useServer } = require('graphql-ws/use/ws'));
  ({ WebSocketServer } = require('ws'));
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  console.error('graphql-ws app: packages are not installed: run `npm ci --prefix examples/graphql-ws` in the repository root');
  process.exit(1);
}

const argv = process.argv.slice(2);
let addr = '127.0.0.1:9600';
let token = null;
let refuse = false;
let ping = 0;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--token') token = argv[++i];
  else if (argv[i] === '--refuse') refuse = true;
  else if (argv[i] === '--ping') ping = Number(argv[++i]);
  else addr = argv[i];
}
const at = addr.lastIndexOf(':');
const host = at < 0 ? '127.0.0.1' : addr.slice(0, at);
const port = Number(at < 0 ? addr : addr.slice(at + 1));

// rooms: room -> set of push functions, one per live subscription.
const rooms = new Map();
let published = 0;

// roomIterator is one subscription's async iterator: in the room from
// its creation, a null first (subscribed), then the room's messages.
function roomIterator(room) {
  const queue = [{ message: null }];
  const waiting = [];
  let done = false;
  const push = (data) => {
    const value = { message: data };
    if (waiting.length) waiting.shift()({ value, done: false });
    else queue.push(value);
  };
  if (!rooms.has(room)) rooms.set(room, new Set());
  rooms.get(room).add(push);
  const stop = () => {
    if (!done) {
      done = true;
      const subs = rooms.get(room);
      subs.delete(push);
      if (subs.size === 0) rooms.delete(room);
      while (waiting.length) waiting.shift()({ value: undefined, done: true });
    }
    return Promise.resolve({ value: undefined, done: true });
  };
  return {
    next() {
      if (queue.length) return Promise.resolve({ value: queue.shift(), done: false });
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => waiting.push(resolve));
    },
    return: stop,
    throw(err) {
      stop();
      return Promise.reject(err);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

const { GraphQLSchema, GraphQLObjectType, GraphQLString, GraphQLBoolean, GraphQLNonNull } = graphql;
const room = { type: new GraphQLNonNull(GraphQLString) };
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: { type: GraphQLString, resolve: () => 'world' },
      echo: { type: GraphQLString, args: { text: { type: new GraphQLNonNull(GraphQLString) } }, resolve: (_, { text }) => text },
    },
  }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      publish: {
        type: GraphQLBoolean,
        args: { room, data: { type: new GraphQLNonNull(GraphQLString) } },
        resolve: (_, args) => {
          published++;
          const subs = rooms.get(args.room);
          if (subs) for (const push of subs) push(args.data);
          return true;
        },
      },
    },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      message: {
        type: GraphQLString,
        args: { room },
        subscribe: (_, args) => roomIterator(args.room),
      },
    },
  }),
});

const wss = new WebSocketServer({ host, port, path: '/graphql', perMessageDeflate: false });
useServer(
  {
    schema,
    onConnect: (ctx) => {
      if (refuse) return false;
      if (token !== null && (!ctx.connectionParams || ctx.connectionParams.token !== token)) return false;
      return true;
    },
  },
  wss,
  0 // no WebSocket-level keepalive: --ping tests the protocol's own
);

let pings = 0;
let pongs = 0;
if (ping > 0) {
  // The protocol's ping, to every client that got its connection_ack
  // (the server's first message); one that did not pong since the last
  // ping is closed 4499.
  wss.on('connection', (socket) => {
    let acked = false;
    let owed = false;
    const origSend = socket.send.bind(socket);
    socket.send = (data, ...rest) => {
      if (!acked && String(data).includes('"connection_ack"')) acked = true;
      return origSend(data, ...rest);
    };
    socket.on('message', (data) => {
      if (String(data).includes('"pong"')) {
        owed = false;
        pongs++;
      }
    });
    const timer = setInterval(() => {
      if (!acked || socket.readyState !== socket.OPEN) return;
      if (owed) {
        socket.close(4499, 'No pong');
        return;
      }
      owed = true;
      pings++;
      origSend('{"type":"ping"}');
    }, ping);
    socket.on('close', () => clearInterval(timer));
  });
}

wss.on('listening', () => console.log(`graphql-ws app listening on ${host}:${port}/graphql`));
wss.on('error', (err) => {
  console.error(`graphql-ws app: ${err.message}`);
  process.exit(1);
});
function stop() {
  console.log(`graphql-ws app stopping (${published} published, ${pings} pings, ${pongs} pongs)`);
  wss.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
