// Package testserver is the module's one WebSocket server for tests: a
// gorilla/websocket echo server on 127.0.0.1 (httptest), or a broadcast
// server on the /broadcast?room=N convention, whose behaviour a test bends
// through Options (TLS, compression, a delay, dropped or duplicated
// replies, closes, a protocol bug) or, for the usual faults, EchoServer's
// fields. Where a test must write the bytes itself, RawServer does the
// handshake and hands it the connection, with the frames' encoding
// (ServerFrame, ReadClientFrame).
//
// Only _test.go files import it, and it imports nothing of this module, so
// the tests of any package (internal/client's, which may import only leaf
// packages, included) use it without an import cycle; internal/layering
// checks both.
package testserver

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Options bend the server. The zero value is a plain echo server: every
// text or binary message is written back with its type, pings are answered
// with a pong of the same payload (gorilla's default), and a close frame is
// echoed.
type Options struct {
	// Rooms serves the broadcast convention instead of echo: a connection
	// joins the room of its upgrade request's room query parameter (before
	// Conns and Live count it), and each message it sends goes to every
	// member of that room, the sender too unless the query says
	// include_sender=false. false = echo.
	Rooms bool
	// TLS, when set, serves wss:// with this configuration (with
	// httptest's own certificate when it holds none); nil = ws://.
	TLS *tls.Config
	// Compression negotiates permessage-deflate when the client offers it
	// (gorilla: no context takeover); false = declined.
	Compression bool
	// Subprotocols are the subprotocols the server selects from, in order
	// of preference; nil = none selected.
	Subprotocols []string
	// Check, when set, sees every upgrade request first; an error refuses
	// it with 403 Forbidden and the error's text. nil = every request is
	// upgraded.
	Check func(r *http.Request) error
	// CheckUTF8 closes a connection with 1007 (invalid frame payload data)
	// when a whole text message is not valid UTF-8, as gorilla's own
	// Autobahn server does; false = such messages are echoed.
	CheckUTF8 bool
	// Pong, when set, returns the payload of the pong answering a ping
	// with payload p; nil = p.
	Pong func(p []byte) []byte
	// Delay is slept before each reply; 0 = none.
	Delay time.Duration
	// Reply, when set, sees every data message before it is answered: id
	// counts messages over the server and n on their connection (both from
	// 1). It may change msg in place, and says what the server does with
	// it. nil = Echo.
	Reply func(id int64, n int, msg []byte) Action
	// Copies, when set, says how many times the k-th delivery is written
	// (k counts over the server from 1, each echo or each member a
	// broadcast reaches): 0 drops it, 2 duplicates it. nil = once.
	Copies func(k int64) int
}

// Action is what the server does with a message (Options.Reply).
type Action int

// The actions.
const (
	Echo      Action = iota // answer it: echo it, or deliver it to the room
	Ignore                  // no answer
	EchoClose               // answer it, then send close 1000 "bye" and end the connection
	EchoDrop                // answer it, then end the TCP connection without a close frame
)

// Server is a test server: New's serves upgrades through ServeHTTP on any
// path of a server the test runs; Start's also runs its own httptest
// server (embedded: URL, Listener), closed at the test's cleanup.
type Server struct {
	*httptest.Server // nil for New's
	opts             Options
	up               websocket.Upgrader

	msgs, conns, live, deliveries atomic.Int64

	mu        sync.Mutex
	open      []*member            // upgraded connections not yet ended, oldest first
	rooms     map[string][]*member // Rooms: members by room
	closed    bool
	handlers  sync.WaitGroup
	closeOnce sync.Once
}

// member is an upgraded connection; the library allows one writer at a
// time.
// errNotUpgraded is a delivery to a member whose upgrade failed.
var errNotUpgraded = errors.New("testserver: member's upgrade failed")

type member struct {
	mu sync.Mutex
	c  *websocket.Conn
}

// New returns a server that is not listening: mount it (ServeHTTP) on a
// server the test runs.
func New(opts Options) *Server {
	return &Server{opts: opts, rooms: map[string][]*member{}, up: websocket.Upgrader{
		CheckOrigin:       func(*http.Request) bool { return true },
		EnableCompression: opts.Compression,
		Subprotocols:      opts.Subprotocols,
	}}
}

// Start runs a server on 127.0.0.1 until the test ends (or Close).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	s.Server = httptest.NewUnstartedServer(s)
	if opts.TLS != nil {
		s.Server.TLS = opts.TLS
		s.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // failed TLS handshakes are what some tests make
		s.Server.StartTLS()
	} else {
		s.Server.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// ClosedAddr is a 127.0.0.1 host:port nothing listens on (one the kernel
// gave out and took back): connecting to it is refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreeAddr is a host:port on the IPv4 host that nothing listens on now
// (one the kernel gave out and took back): free when chosen, not
// reserved, for a process the test starts that binds it itself.
func FreeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp4", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Addr is the host:port Start's server listens on.
func (s *Server) Addr() string { return s.Listener.Addr().String() }

// Msgs is the number of data messages received.
func (s *Server) Msgs() int64 { return s.msgs.Load() }

// Conns is the number of connections upgraded.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Live is the number of upgraded connections not yet ended.
func (s *Server) Live() int64 { return s.live.Load() }

// Drop ends the TCP connections of the n oldest open connections (all of
// them when fewer are open), without a close frame.
func (s *Server) Drop(n int) {
	s.mu.Lock()
	n = min(n, len(s.open))
	drop := slices.Clone(s.open[:n])
	s.open = slices.Delete(s.open, 0, n)
	s.mu.Unlock()
	for _, m := range drop {
		m.c.NetConn().Close()
	}
}

// Close stops Start's listener, ends every open connection and waits for
// their handlers. Later calls do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.Server != nil {
			s.Server.Close()
		}
		s.mu.Lock()
		s.closed = true
		open := s.open
		s.open = nil
		s.mu.Unlock()
		for _, m := range open {
			m.c.NetConn().Close()
		}
		s.handlers.Wait()
	})
}

// ServeHTTP upgrades the request and serves the connection until it ends.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	if s.opts.Check != nil {
		if err := s.opts.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	q := r.URL.Query()
	room, include := q.Get("room"), q.Get("include_sender") != "false"
	me := &member{}
	if s.opts.Rooms {
		// In its room before the 101 goes out, as a broadcast server must
		// be: a client may publish as soon as it reads the 101, and a
		// member that joined only after would miss it. Deliveries to it
		// wait for its connection (me.mu).
		me.mu.Lock()
		s.join(room, me)
		defer s.leave(room, me)
	}
	c, err := s.up.Upgrade(w, r, nil)
	me.c = c
	if s.opts.Rooms {
		me.mu.Unlock()
	}
	if err != nil {
		return // Upgrade has answered the request
	}
	if !s.add(me) {
		return
	}
	defer s.remove(me)
	s.conns.Add(1) // counted once in its room
	s.live.Add(1)
	defer s.live.Add(-1)
	if s.opts.Pong != nil {
		c.SetPingHandler(func(p string) error {
			return c.WriteControl(websocket.PongMessage, s.opts.Pong([]byte(p)), time.Now().Add(time.Second))
		})
	}
	s.serve(me, room, include)
}

// serve reads and answers me's messages until the connection ends.
func (s *Server) serve(me *member, room string, include bool) {
	var to []*member
	for n := 1; ; n++ {
		op, msg, err := me.c.ReadMessage()
		if err != nil {
			return
		}
		if s.opts.CheckUTF8 && op == websocket.TextMessage && !utf8.Valid(msg) {
			// The connection ends either way.
			_ = me.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, ""), time.Now().Add(time.Second))
			return
		}
		id := s.msgs.Add(1)
		act := Echo
		if s.opts.Reply != nil {
			act = s.opts.Reply(id, n, msg)
		}
		if act == Ignore {
			continue
		}
		if s.opts.Delay > 0 {
			time.Sleep(s.opts.Delay)
		}
		to = append(to[:0], me)
		if s.opts.Rooms {
			to = s.members(to[:0], room, me, include)
		}
		for _, m := range to {
			if err := s.deliver(m, op, msg); err != nil && m == me {
				return
			}
		}
		switch act {
		case EchoClose:
			// The test looks at what the client saw.
			_ = me.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
			return
		case EchoDrop:
			return
		}
	}
}

// deliver writes msg to m as many times as Copies says.
func (s *Server) deliver(m *member, op int, msg []byte) error {
	k := s.deliveries.Add(1)
	times := 1
	if s.opts.Copies != nil {
		times = s.opts.Copies(k)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		return errNotUpgraded
	}
	for range times {
		if err := m.c.WriteMessage(op, msg); err != nil {
			return err
		}
	}
	return nil
}

// add registers an upgraded connection; false (having closed it) when
// the server is closing.
func (s *Server) add(m *member) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		m.c.Close()
		return false
	}
	s.open = append(s.open, m)
	return true
}

// remove closes m's connection and forgets it.
func (s *Server) remove(m *member) {
	m.c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.open, m); i >= 0 {
		s.open = slices.Delete(s.open, i, i+1)
	}
}

func (s *Server) join(room string, m *member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rooms[room] = append(s.rooms[room], m)
}

func (s *Server) leave(room string, m *member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rooms[room] = slices.DeleteFunc(s.rooms[room], func(x *member) bool { return x == m })
}

// members appends room's members, but me unless include, to dst.
func (s *Server) members(dst []*member, room string, me *member, include bool) []*member {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.rooms[room] {
		if include || m != me {
			dst = append(dst, m)
		}
	}
	return dst
}
