package client

import "github.com/wsplan/wsplan/internal/proto"

// Refusals. A server that refuses a connection on purpose will refuse it
// again: an HTTP 401 or 403 answer to the upgrade, an MQTT CONNACK "not
// authorized" or "bad user name or password", a STOMP ERROR frame
// answering CONNECT, a graphql-ws close 4401 or 4403 (or mercurius'
// connection_error), a Socket.IO CONNECT_ERROR. Such an attempt is not
// retried, whatever the phase's retries: a retry would only double the
// server's work and the failures counted. Transient failures (refused,
// reset, timed out, 5xx) are retried as before. A refusal's reason keeps
// the server's own words (serverWords); the live metrics' reason label
// stays one of its fixed classes (connectReasonOf).

// refuse marks the attempt of c, in its handshake or greeting, as refused
// by the server: it is not retried. It returns r, the reason the attempt
// fails with, so that a greeting reads `return false, refuse(c, r)`.
func refuse(c *Conn, r Reason) Reason {
	if c.state < StateOpen && c.ext != nil {
		c.ext.refused = true
	}
	return r
}

// refusedStatus reports whether an upgrade answered with HTTP status code
// is a refusal: 401 Unauthorized, 403 Forbidden.
func refusedStatus(code int) bool { return code == 401 || code == 403 }

// serverWords is text a server sent (a close frame's reason, an error's
// message) as a reason shows it: on one line, at most proto.MaxWords
// bytes (proto.Words).
func serverWords(b []byte) string { return proto.Words(b) }
