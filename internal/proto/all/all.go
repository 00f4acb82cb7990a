// Package all registers the built-in protocols: a program that imports
// it (internal/client does) speaks them all. Adding a protocol is its
// package plus one line here.
package all

import (
	_ "github.com/wsplan/wsplan/internal/proto/graphqlws" // GraphQL over WebSocket
	_ "github.com/wsplan/wsplan/internal/proto/jsonrpc"   // JSON-RPC 2.0
	_ "github.com/wsplan/wsplan/internal/proto/mqtt"      // MQTT 3.1.1 and 5
	_ "github.com/wsplan/wsplan/internal/proto/socketio"  // Socket.IO v5
	_ "github.com/wsplan/wsplan/internal/proto/stomp"     // STOMP 1.0-1.2
)
