// Package faultserver is a WebSocket server for tests that goes wrong on
// purpose: it speaks the server side of every protocol wsplan's client
// speaks (raw echo and rooms, Socket.IO v5, graphql-transport-ws, MQTT
// 3.1.1 and 5, STOMP 1.2, JSON-RPC 2.0), minimally, and bends one rule
// of them as its Options say: it refuses at the greeting, answers with
// the protocol's error, answers wrongly or not at all, downgrades,
// enforces an MQTT 5 quota, or dies at a given time. cmd/wsplan's fault
// matrix runs plans against it (in the test's process, or in a process
// of its own that the test kills or stops).
//
// Only _test.go files import it, and it imports nothing of this module,
// like internal/testserver (internal/layering checks both).
package faultserver

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Fault is what the server does wrong.
type Fault string

// The faults. Greeting faults hit connections (their upgrade or their
// protocol's handshake); the others hit the answers after it.
const (
	// None: the server behaves.
	None Fault = ""
	// Refuse refuses at the greeting: HTTP 401 (raw, jsonrpc), CONNACK
	// not authorized (mqtt), ERROR (stomp), close 4403 (graphql-ws),
	// CONNECT_ERROR (socketio).
	Refuse Fault = "refuse"
	// Mute never answers the greeting (raw, jsonrpc: the upgrade).
	Mute Fault = "mute"
	// Garble answers the greeting with what the protocol does not allow
	// there (raw, jsonrpc: HTTP 200 instead of 101).
	Garble Fault = "garble"
	// Error answers with the protocol's error: MQTT reason 0x87 (PUBACK,
	// PUBREC; SUBACK 0x80), STOMP ERROR naming the receipt, GraphQL error,
	// JSON-RPC error, rpc.on refusing the event. Socket.IO and raw
	// messages have no error answer.
	Error Fault = "error"
	// Wrong answers wrongly: a body changed (a digit of a text, the last
	// byte of a binary message), or, where the answer has no body (MQTT
	// PUBACK, STOMP RECEIPT), another id; broadcast deliveries corrupt.
	Wrong Fault = "wrong"
	// Drop does not answer: no echo, ack, receipt, result, delivery or
	// (raw) pong.
	Drop Fault = "drop"
	// Silent leaves the protocol's keepalives out: no graphql-ws pong,
	// MQTT PINGRESP, STOMP heart-beat or Socket.IO ping.
	Silent Fault = "silent"
	// Downgrade grants less than asked (MQTT): a PUBACK to a QoS 2
	// PUBLISH, a SUBACK of QoS 0 to a subscription at QoS 1 or 2.
	Downgrade Fault = "downgrade"
	// Quota refuses QoS 1 and 2 PUBLISHes beyond Options.Quota in flight
	// with reason 0x97, quota exceeded (MQTT 5).
	Quota Fault = "quota"
)

var faults = map[Fault]bool{None: true, Refuse: true, Mute: true, Garble: true, Error: true, Wrong: true, Drop: true, Silent: true, Downgrade: true, Quota: true}

// greeting reports whether f hits the greeting.
func (f Fault) greeting() bool { return f == Refuse || f == Mute || f == Garble }

// The paths the server answers on, one per protocol.
const (
	PathRaw      = "/ws"         // echo; with ?room=N, the broadcast convention
	PathSocketIO = "/socket.io/" // ?EIO=4&transport=websocket
	PathGraphQL  = "/graphql"
	PathMQTT     = "/mqtt"
	PathSTOMP    = "/stomp"
	PathJSONRPC  = "/jsonrpc"
)

// Options say what goes wrong, and when. The zero value is a server that
// behaves.
type Options struct {
	Fault Fault
	// Every makes the fault hit every Every-th unit only (connection for
	// a greeting fault, answer or delivery for the others); 0 or 1 = each.
	Every int
	// Deliveries aims the fault at the deliveries to a room's members
	// (broadcast) instead of the answers: joins are answered as they
	// should be, and Wrong and Drop bend what the rooms carry.
	Deliveries bool
	// Spare spares the first Spare units (1: the upgrade wsplan's target
	// probe makes before the first phase); 0 = none.
	Spare int
	// DieAfter, when > 0, kills the server that long after its first
	// upgrade: every connection is closed and the listener with them, so
	// that new dials are refused.
	DieAfter time.Duration
	// ReceiveMaximum is announced in an MQTT 5 CONNACK; 0 = not announced.
	ReceiveMaximum int
	// Quota is how many QoS 1 and 2 PUBLISHes may be in flight on a
	// connection before Quota refuses the next; 0 = ReceiveMaximum, or 1.
	Quota int
	// AckDelay holds MQTT PUBACKs and PUBRECs that long, so that
	// PUBLISHes are in flight at the server; 0 = none (Quota: 20ms).
	AckDelay time.Duration
	// Delay holds every upgrade, raw echo, pong and close answer that
	// long, so that a phase lasts long enough to be killed in; 0 = none.
	Delay time.Duration
	// Strict refuses an upgrade to PathMQTT, PathGraphQL or PathSTOMP
	// that does not offer the protocol's subprotocol (HTTP 400), as EMQX
	// does by default; false = any upgrade is taken.
	Strict bool
	// Beat is the server's own keepalive: Socket.IO's pingInterval (and
	// pingTimeout), STOMP's heart-beat; 0 = 25 s for Socket.IO, none for
	// STOMP.
	Beat time.Duration
}

// ParseFlags reads a server's address and Options from command-line
// arguments (a test binary run as a fault server): --addr, --fault,
// --every, --in-rooms, --spare, --die-after, --receive-maximum, --quota,
// --ack-delay, --delay, --strict, --beat.
func ParseFlags(args []string) (addr string, o Options, err error) {
	fs := flag.NewFlagSet("faultserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	fault := fs.String("fault", "", "refuse, mute, garble, error, wrong, drop, silent, downgrade, quota; empty = none")
	fs.IntVar(&o.Every, "every", 0, "hit every Nth unit")
	fs.BoolVar(&o.Deliveries, "in-rooms", false, "aim at what rooms carry instead of answers")
	fs.IntVar(&o.Spare, "spare", 0, "spare the first N units")
	fs.DurationVar(&o.DieAfter, "die-after", 0, "die this long after the first upgrade")
	fs.IntVar(&o.ReceiveMaximum, "receive-maximum", 0, "MQTT 5 Receive Maximum")
	fs.IntVar(&o.Quota, "quota", 0, "MQTT publishes in flight before 0x97")
	fs.DurationVar(&o.AckDelay, "ack-delay", 0, "hold MQTT acks")
	fs.DurationVar(&o.Delay, "delay", 0, "hold upgrades, raw echoes and pongs")
	fs.BoolVar(&o.Strict, "strict", false, "refuse an upgrade without the protocol's subprotocol")
	fs.DurationVar(&o.Beat, "beat", 0, "Socket.IO ping interval, STOMP heart-beat")
	if err := fs.Parse(args); err != nil {
		return "", Options{}, err
	}
	o.Fault = Fault(*fault)
	return addr, o, o.check()
}

// check returns the options' first problem.
func (o Options) check() error {
	switch {
	case !faults[o.Fault]:
		return errors.New("faultserver: unknown fault " + strconv.Quote(string(o.Fault)))
	case o.Every < 0 || o.Spare < 0 || o.Quota < 0 || o.ReceiveMaximum < 0 || o.ReceiveMaximum > 65535:
		return errors.New("faultserver: every, spare, quota and receive maximum must be >= 0 (receive maximum <= 65535)")
	case o.DieAfter < 0 || o.AckDelay < 0 || o.Beat < 0 || o.Delay < 0:
		return errors.New("faultserver: durations must be >= 0")
	}
	return nil
}

// Server is a running fault server.
type Server struct {
	o     Options
	ln    net.Listener
	http  *http.Server
	up    websocket.Upgrader
	rooms rooms

	greets, units atomic.Int64 // units counted by hit
	first         sync.Once
	dead          chan struct{}
	mu            sync.Mutex
	peers         map[*peer]struct{}
	wg            sync.WaitGroup
}

// Start serves o on addr (host:port; port 0 = any free one) until Close.
func Start(addr string, o Options) (*Server, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Fault == Quota && o.AckDelay == 0 {
		o.AckDelay = 20 * time.Millisecond
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, ln: ln, dead: make(chan struct{}), peers: map[*peer]struct{}{}, rooms: rooms{m: map[string]map[*peer]string{}}}
	s.up = websocket.Upgrader{
		CheckOrigin:  func(*http.Request) bool { return true },
		Subprotocols: []string{"mqtt", "graphql-transport-ws", "v12.stomp", "v11.stomp", "v10.stomp"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(PathRaw, s.handle(s.serveRaw))
	mux.HandleFunc(PathSocketIO, s.handle(s.serveSocketIO))
	mux.HandleFunc(PathGraphQL, s.handle(s.serveGraphQL))
	mux.HandleFunc(PathMQTT, s.handle(s.serveMQTT))
	mux.HandleFunc(PathSTOMP, s.handle(s.serveSTOMP))
	mux.HandleFunc(PathJSONRPC, s.handle(s.serveJSONRPC))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		// ErrServerClosed once Close or the death closed it.
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and ends every connection.
func (s *Server) Close() {
	s.die()
	s.wg.Wait()
}

// die closes the listener and every connection, once.
func (s *Server) die() {
	select {
	case <-s.dead:
		return
	default:
	}
	s.mu.Lock()
	select {
	case <-s.dead:
		s.mu.Unlock()
		return
	default:
	}
	close(s.dead)
	peers := make([]*peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// Hanging upgrades (Mute) end with it; hijacked connections are ours.
	_ = s.http.Shutdown(ctx) // a handler still running is closed below
	_ = s.http.Close()       // whatever Shutdown left
	for _, p := range peers {
		p.ws.Close()
	}
}

// wait sleeps Delay, or until ctx ends or the server dies.
func (s *Server) wait(ctx context.Context) {
	if s.o.Delay <= 0 {
		return
	}
	t := time.NewTimer(s.o.Delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-s.dead:
	}
}

// hit counts one unit on n and reports whether the fault hits it.
func (s *Server) hit(n *atomic.Int64) bool {
	k := n.Add(1)
	if k <= int64(s.o.Spare) {
		return false
	}
	k -= int64(s.o.Spare)
	return s.o.Every <= 1 || k%int64(s.o.Every) == 0
}

// answerFault returns the fault that hits the next answer (None when it
// is spared, the fault is a greeting's, or it aims at deliveries).
func (s *Server) answerFault() Fault {
	if s.o.Deliveries {
		return None
	}
	return s.unitFault()
}

// deliveryFault returns the fault that hits the next delivery to a
// room's member (None unless it aims at deliveries).
func (s *Server) deliveryFault() Fault {
	if !s.o.Deliveries {
		return None
	}
	return s.unitFault()
}

// unitFault returns the fault that hits the next unit after the
// greeting.
func (s *Server) unitFault() Fault {
	if s.o.Fault == None || s.o.Fault.greeting() || !s.hit(&s.units) {
		return None
	}
	return s.o.Fault
}

// greetFault returns the greeting fault that hits the next connection
// (None when it is spared or the fault is not a greeting's).
func (s *Server) greetFault() Fault {
	if !s.o.Fault.greeting() || !s.hit(&s.greets) {
		return None
	}
	return s.o.Fault
}

// peer is one WebSocket connection; writes may come from other
// connections' goroutines (rooms), so they take wmu.
type peer struct {
	s   *Server
	ws  *websocket.Conn
	wmu sync.Mutex
}

// writeTimeout bounds a write to a client that does not read.
const writeTimeout = 5 * time.Second

// write sends one message of type op.
func (p *peer) write(op int, b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.ws.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	return p.ws.WriteMessage(op, b)
}

// closeWith sends a close frame with code and reason, then closes.
func (p *peer) closeWith(code int, reason string) {
	p.wmu.Lock()
	// The connection ends either way.
	_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	p.wmu.Unlock()
	p.ws.Close()
}

// handle upgrades a request (unless a greeting fault of the upgrade hits
// it: raw and jsonrpc have no other greeting) and runs serve on it.
func (s *Server) handle(serve func(p *peer, r *http.Request, greet Fault)) http.HandlerFunc {
	upgradeOnly := map[string]bool{PathRaw: true, PathJSONRPC: true}
	return func(w http.ResponseWriter, r *http.Request) {
		if want := strictSubprotocols[r.URL.Path]; s.o.Strict && want != "" && !offers(r, want) {
			http.Error(w, "subprotocol "+want+" required", http.StatusBadRequest)
			return
		}
		s.wait(r.Context())
		greet := s.greetFault()
		if upgradeOnly[r.URL.Path] {
			switch greet {
			case Refuse:
				http.Error(w, "not authorized", http.StatusUnauthorized)
				return
			case Garble:
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, "hello") // an answer, not an upgrade
				return
			case Mute:
				select {
				case <-r.Context().Done():
				case <-s.dead:
				}
				return
			}
		}
		ws, err := s.up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		p := &peer{s: s, ws: ws}
		s.mu.Lock()
		select {
		case <-s.dead:
			s.mu.Unlock()
			ws.Close()
			return
		default:
		}
		s.peers[p] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		if s.o.DieAfter > 0 {
			s.first.Do(func() { time.AfterFunc(s.o.DieAfter, s.die) })
		}
		defer func() {
			s.rooms.leaveAll(p)
			s.mu.Lock()
			delete(s.peers, p)
			s.mu.Unlock()
			ws.Close()
			s.wg.Done()
		}()
		serve(p, r, greet)
	}
}

// strictSubprotocols are what Strict wants offered, by path.
var strictSubprotocols = map[string]string{PathMQTT: "mqtt", PathGraphQL: "graphql-transport-ws", PathSTOMP: "v12.stomp"}

// offers reports whether an upgrade request offers subprotocol p.
func offers(r *http.Request, p string) bool {
	for _, o := range websocket.Subprotocols(r) {
		if o == p {
			return true
		}
	}
	return false
}

// rooms are the server's rooms: name → member → its subscription id
// (STOMP's subscription, GraphQL's operation id; "" elsewhere).
type rooms struct {
	mu sync.Mutex
	m  map[string]map[*peer]string
}

func (r *rooms) join(room string, p *peer, sub string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[room] == nil {
		r.m[room] = map[*peer]string{}
	}
	r.m[room][p] = sub
}

func (r *rooms) leave(room string, p *peer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[room], p)
}

// leaveSub takes p out of the rooms it joined with subscription id sub.
func (r *rooms) leaveSub(p *peer, sub string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.m {
		if s, ok := m[p]; ok && s == sub {
			delete(m, p)
		}
	}
}

func (r *rooms) leaveAll(p *peer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.m {
		delete(m, p)
	}
}

// members returns room's members and their subscription ids.
func (r *rooms) members(room string) map[*peer]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[*peer]string, len(r.m[room]))
	for p, sub := range r.m[room] {
		out[p] = sub
	}
	return out
}

// deliver sends payload to every member of room but skip (nil = none)
// through send, each delivery bent by the fault that hits it: dropped,
// or its payload corrupt (Wrong).
func (s *Server) deliver(room string, skip *peer, payload []byte, send func(p *peer, sub string, payload []byte)) {
	for p, sub := range s.rooms.members(room) {
		if p == skip {
			continue
		}
		switch s.deliveryFault() {
		case Drop:
			continue
		case Wrong:
			send(p, sub, corrupt(payload, false))
		default:
			send(p, sub, payload)
		}
	}
}

// corrupt returns a copy of b with one byte changed: the last digit
// counted up (9 becomes 0) when text is set and b has a digit, else the
// last byte's low bit flipped.
func corrupt(b []byte, text bool) []byte {
	out := append([]byte(nil), b...)
	if len(out) == 0 {
		return []byte("?")
	}
	if text {
		for i := len(out) - 1; i >= 0; i-- {
			if c := out[i]; c >= '0' && c <= '9' {
				out[i] = '0' + (c-'0'+1)%10
				return out
			}
		}
	}
	out[len(out)-1] ^= 1
	return out
}
