package client

// Connection states.
const (
	stClosed     uint8 = iota
	stConnecting       // connect() in progress, waiting for EPOLLOUT
	stTLS              // TLS handshake in progress
	stSending          // writing the upgrade request
	stReceiving        // reading the upgrade response
	stGreeting         // WebSocket open, the protocol's handshake in progress (protocol.go)
	StateOpen          // WebSocket open (and its protocol's handshake done)
)

// Connection flags.
const (
	FlagInflight uint8 = 1 << iota // an echo is in flight
	FlagWarm                       // the in-flight echo is warm-up
	FlagBad                        // the message being received differs from the one sent
	FlagWantOut                    // EPOLLOUT is registered: output is pending
	FlagDataPend                   // the data frame is not fully written (woff bytes are)
	fNew                           // opened by the connect phase now running
	fStamp                         // SO_TIMESTAMPNS is on: reads take the kernel's receive time (rxstamp.go)
	FlagClosing                    // the client sent its close frame and waits for the server's: no second one is sent
)

// Conn is one connection, owned by one loop. An idle open connection is
// only this struct (plus a slot in the loop's fd table and open list): no
// buffers. ext is allocated only while something is partial; sec only on
// a TLS or compressed connection (about 2 KB with TLS, plus the inflate
// history under server context takeover).
type Conn struct {
	dec decoder // server frame stream state (24 bytes)
	// Slot belongs to the run in progress: runs that keep a table of
	// per-connection state (rate, hold, ping, broadcast) hold c's index in
	// it here; echo holds the loop clock (ns) its message in flight was sent.
	Slot  int64
	ext   *connExt // partial input/output, handshake state; nil when idle
	Sec   *connSec // TLS session and permessage-deflate state; nil on a plain, uncompressed connection
	fd    int32
	gen   uint32 // loop-unique, carried in epoll event data
	idx   int32  // position in loop.open
	WOff  int32  // bytes of the pending data frame already written
	WKey  uint32 // mask key of the pending data frame
	state uint8
	Flags uint8
	Skip  uint16 // replies still due from stopped phases, to discard
}

// connExt holds what a connection needs only while something is partial:
// its handshake, an incomplete frame header or control frame, or queued
// control frames. Loops recycle them.
type connExt struct {
	pend []byte // unparsed input (≤ maxStash bytes; ≤ maxResponse during the handshake)
	Out  []byte // queued control frames, written before a queued data frame

	// Handshake state, valid while state < stOpen.
	index    int64   // connection number (selects target and source)
	tries    int     // failed attempts so far
	dialer   *Dialer // the dialer this attempt belongs to
	slot     int     // position in dialer.inflight
	started  int64   // loop clock at connect()
	tcpAt    int64   // loop clock when TCP connect completed
	tlsAt    int64   // loop clock when the TLS handshake completed; 0 = plain
	upAt     int64   // loop clock of the 101 response (a protocol's greeting follows)
	deadline int64   // loop clock when the attempt times out
	written  int     // request bytes written
	target   int     // index into the loop's targets
	refused  bool    // the server refused the attempt on purpose: no retry (refusal.go)
	key      [keyLen]byte
}

// idle reports whether the ext holds nothing and may be recycled.
// An attempt's ext (a dialer's) is not idle until the attempt ends.
func (x *connExt) idle() bool { return len(x.pend) == 0 && len(x.Out) == 0 && x.dialer == nil }
