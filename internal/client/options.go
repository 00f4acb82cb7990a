package client

import (
	"github.com/wsplan/wsplan/internal/pmdeflate"

	"github.com/wsplan/wsplan/internal/wstls"
)

// Options configure a Client. Zero values are defaults.
type Options struct {
	// Targets are the server addresses, host:port. Connection i goes to
	// Targets[i % len(Targets)].
	Targets []string
	// Path is the request path of the upgrade; default "/ws".
	Path string
	// SourceAddrs are local IPs to bind, used round-robin; empty = the
	// kernel picks. The k-th connection to a target binds the k-th
	// address (modulo their number) of the target's family; every
	// target's family needs at least one.
	SourceAddrs []string
	// Loops is the number of event loops, each on its own locked OS thread;
	// default 1. Run the process with GOMAXPROCS >= Loops+1: with no idle
	// P, the runtime hands a loop's P to another thread whenever its
	// epoll_wait blocks for more than ~20 µs, and wakes it again after
	// (measured over 500,000 echoes on 5,000 connections: 68k context
	// switches at GOMAXPROCS=1, 26k at GOMAXPROCS=2).
	Loops int
	// NoDelay sets TCP_NODELAY on client sockets; default false here, the
	// plan's defaults.nodelay (true) is passed in by the engine.
	NoDelay bool

	// Hosts, when set, has one entry per target: the Host header of the
	// upgrade request (and the TLS server name unless TLS.ServerName says
	// otherwise), host[:port] as a URL wrote it. "" or a missing entry =
	// the target's address.
	Hosts []string `json:",omitempty"`
	// RequestURIs, when set, has one entry per target: the request target
	// of the upgrade, path and query ("/ws?room=1"). "" or a missing entry
	// = Path.
	RequestURIs []string `json:",omitempty"`
	// Headers are extra upgrade request headers, name and value, sent
	// verbatim in this order. Values may be secrets: the client never puts
	// them in an error, a reason or a result. The plan forbids the headers
	// the client writes itself (Host, Upgrade, Sec-WebSocket-*, Origin).
	Headers [][2]string `json:",omitempty"`
	// Subprotocols are offered in Sec-WebSocket-Protocol, in this order;
	// empty = the protocol's own (Subprotocols), none for raw messages. A server that picks one not offered fails the
	// connection with ReasonBadSubprotocol; one that picks none is
	// accepted (results record the negotiated one, "" for none).
	Subprotocols []string `json:",omitempty"`
	// Origin is the Origin header; "" = none sent.
	Origin string `json:",omitempty"`
	// TLS, when non-nil, makes every connection speak TLS (wss://) with
	// these settings; nil = plain ws://.
	TLS *TLSOptions `json:",omitempty"`
	// Compression, when non-nil, offers permessage-deflate (RFC 7692)
	// with these parameters on every connection; a server that declines
	// fails the connection with "compression asked, server declined".
	// nil = no extension offered, and a server that answers with one
	// fails the connection ("unrequested extension").
	Compression *pmdeflate.Params `json:",omitempty"`
	// Protocol is what the server speaks over its messages (protocol.go);
	// zero = raw WebSocket messages.
	Protocol ProtocolOptions `json:",omitempty"`
	// Reconnect, when set with a policy other than none, brings back the
	// pool's connections that the server drops (reconnect.go); nil = a
	// dropped connection stays closed.
	Reconnect *Reconnect `json:",omitempty"`
}

// TLSOptions are how the client's TLS connections verify the server and
// what they offer (wstls.ClientOptions: plain data, a shard gets them as
// JSON); each Client builds its tls.Config from them with
// wstls.ClientConfig, one per server name. ServerName "" = the host of
// the target's Host (Hosts[i], else the target address).
type TLSOptions = wstls.ClientOptions
