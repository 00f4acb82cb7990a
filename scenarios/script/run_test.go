package script

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/internal/testenv"

	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// appServer is a small application server over JSON messages, as real
// services speak: login → token, requests answered by id (out of order
// when asked), subscriptions that push a stream, presence pushes nobody
// asked for.
type appServer struct {
	outOfOrder bool          // odd ids are answered 20 ms late
	presence   time.Duration // push {"type":"presence"} this often; 0 = never
	users      atomic.Int64
	queries    sync.Map // the upgrade request's query, by user
}

func (s *appServer) start(t testing.TB) string {
	t.Helper()
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		s.users.Add(1)
		s.queries.Store(r.URL.Query().Get("u"), r.Header.Get("X-User"))
		var mu sync.Mutex
		send := func(v any) {
			b, _ := json.Marshal(v)
			mu.Lock()
			defer mu.Unlock()
			_ = ws.WriteMessage(websocket.TextMessage, b) // the client sees what arrives
		}
		if s.presence > 0 {
			done := make(chan struct{})
			defer close(done)
			go func() {
				tk := time.NewTicker(s.presence)
				defer tk.Stop()
				for {
					select {
					case <-done:
						return
					case <-tk.C:
						send(map[string]any{"type": "presence"})
					}
				}
			}()
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(msg, &m) != nil {
				send(map[string]any{"op": "error"})
				continue
			}
			switch m["op"] {
			case "login":
				if m["password"] == "pw-"+m["user"].(string) {
					send(map[string]any{"op": "login_ok", "token": "tok-" + m["user"].(string)})
				} else {
					send(map[string]any{"op": "login_failed"})
				}
			case "echo":
				id, _ := m["id"].(float64)
				reply := map[string]any{"op": "reply", "id": m["id"], "token": m["token"]}
				if s.outOfOrder && int(id)%2 == 1 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(20 * time.Millisecond)
						send(reply)
					}()
					continue
				}
				send(reply)
			case "subscribe":
				n, _ := m["n"].(float64)
				for i := range int(n) {
					send(map[string]any{"op": "event", "i": i})
				}
				send(map[string]any{"op": "done"})
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func steps(t *testing.T, doc string) []lang.Step {
	t.Helper()
	var v struct {
		Steps []lang.Step `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return v.Steps
}

func runScript(t *testing.T, addr string, loops int, p Params) *Result {
	t.Helper()
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: loops})
	if p.Timeout == 0 {
		p.Timeout = units.Duration(5 * time.Second)
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = units.Duration(5 * time.Second)
	}
	res, err := c.Run(t.Context(), &p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*Result)
}

const loginScript = `
steps:
  - send: '{"op":"login","user":{{json .row.user}},"password":{{json .row.password}}}'
  - expect: {json: {$.op: login_ok}, capture: {token: $.token}, as: login}
  - loop:
      count: 50
      inflight: 8
      steps:
        - send: '{"op":"echo","id":{{.seq}},"token":"{{.token}}"}'
        - expect: {correlate: $.id, json: {$.token: "tok-{{.row.user}}"}, as: echo}
  - send: '{"op":"subscribe","n":5}'
  - expect: {json: {$.op: event}, until: {json: {$.op: done}}, as: stream}
`

func userRows(n int) *lang.Rows {
	r := &lang.Rows{Columns: []string{"user", "password"}, Total: n}
	for i := range n {
		u := "u" + strconv.Itoa(i)
		r.Values = append(r.Values, []string{u, "pw-" + u})
	}
	return r
}

// TestScriptConversation: login → capture → 50 pipelined requests matched
// by id out of order → a stream, over 2 loops, one row per user.
func TestScriptConversation(t *testing.T) {
	srv := &appServer{outOfOrder: true}
	addr := srv.start(t)
	r := runScript(t, addr, 2, Params{Steps: steps(t, loginScript), Users: 40, Iterations: 1, Concurrency: 10,
		Rows: userRows(40), Order: lang.OrderUnique, Query: "u={{.row.user}}", HeaderList: [][2]string{{"X-User", "{{.row.user}}"}}})
	if r.Users != 40 || r.Finished != 40 || r.Aborted != 0 || r.Iterations != 40 {
		t.Fatalf("users %d finished %d aborted %d iterations %d; failures %v errors %v", r.Users, r.Finished, r.Aborted, r.Iterations, r.Failures, r.Errors)
	}
	for name, want := range map[string]int64{"login": 40, "echo": 40 * 50, "stream": 40} {
		e := r.Exchanges[name]
		if e == nil || e.Count != want || e.Mismatched != 0 || e.Timeouts != 0 || e.Latency.TotalCount() != want {
			t.Errorf("%s: %+v, want %d completed", name, e, want)
		}
	}
	if e := r.Exchanges["echo"]; e.Latency.Max() < int64(15*time.Millisecond) {
		t.Errorf("echo max latency %v: the odd ids wait 20 ms", time.Duration(e.Latency.Max()))
	}
	if r.Unexpected != 0 || r.Sent != 40*52 || r.Received != 40*(1+50+6) {
		t.Errorf("unexpected %d sent %d received %d", r.Unexpected, r.Sent, r.Received)
	}
	if r.Connect.TotalCount() != 40 || r.Peak < 1 || r.Peak > 40 {
		t.Errorf("connect latencies %d, peak %d: want every user's handshake, at most 40 at once", r.Connect.TotalCount(), r.Peak)
	}
	for i := range 40 {
		u := "u" + strconv.Itoa(i)
		if h, ok := srv.queries.Load(u); !ok || h != u {
			t.Errorf("user %s: query/header not rendered (%v %v)", u, h, ok)
		}
	}
}

// TestScriptMismatch: the same requests without correlate take replies in
// order: out-of-order replies are mismatches, counted, not timeouts.
func TestScriptMismatch(t *testing.T) {
	addr := (&appServer{outOfOrder: true}).start(t)
	r := runScript(t, addr, 1, Params{Users: 4, Iterations: 1, Steps: steps(t, `
steps:
  - loop:
      count: 20
      inflight: 4
      steps:
        - send: '{"op":"echo","id":{{.seq}}}'
        - expect: {json: {$.op: reply, $.id: "{{.seq}}"}, as: echo}
`)})
	e := r.Exchanges["echo"]
	if e.Mismatched == 0 || e.Count+e.Mismatched != 80 || e.Timeouts != 0 || r.Aborted != 0 {
		t.Fatalf("echo %+v aborted %d: want mismatches counted, every reply taken", e, r.Aborted)
	}
	if got := r.Failures["steps[0].loop.steps[1].expect"][ReasonMismatch]; got != e.Mismatched {
		t.Errorf("failures %v, want %d mismatched", r.Failures, e.Mismatched)
	}
}

// TestScriptUnexpectedIgnoreTimeout: pushes nobody asked for are
// unexpected unless ignored; a reply that never comes times out and ends
// the user.
func TestScriptUnexpectedIgnoreTimeout(t *testing.T) {
	addr := (&appServer{presence: 5 * time.Millisecond}).start(t)
	body := `
steps:
  - think: 60ms
  - send: '{"op":"echo","id":1}'
  - expect: {correlate: $.id, as: echo}
  - send: '{"op":"nothing"}'
  - expect: {json: {$.op: never}, timeout: 50ms, as: never}
`
	r := runScript(t, addr, 1, Params{Users: 3, Iterations: 1, Steps: steps(t, body)})
	if r.Unexpected == 0 || r.UnexpectedUsers != 3 {
		t.Errorf("unexpected %d users %d: presence pushes must count", r.Unexpected, r.UnexpectedUsers)
	}
	if e := r.Exchanges["never"]; e.Timeouts != 3 || r.Aborted != 3 || r.Finished != 0 {
		t.Errorf("never %+v aborted %d finished %d", e, r.Aborted, r.Finished)
	}
	r = runScript(t, addr, 1, Params{Users: 3, Iterations: 1, Steps: steps(t, body), Ignore: []lang.Match{{JSON: map[string]string{"$.type": "presence"}}}})
	if r.Unexpected != 0 || r.Ignored == 0 || r.Exchanges["echo"].Count != 3 {
		t.Errorf("with ignore: unexpected %d ignored %d echo %+v", r.Unexpected, r.Ignored, r.Exchanges["echo"])
	}
}

// TestScriptTimerRearm: a user keeps one wake-up armed through its
// exchanges; one that comes early (armed for an expect since answered)
// is re-armed for a pause's end or a later deadline, which still times out.
func TestScriptTimerRearm(t *testing.T) {
	addr := (&appServer{}).start(t)
	// The echoes' 50 ms timeouts are what arms the early timers; a loaded
	// host can answer an echo later than that, a timing miss, not a fault.
	testenv.RetryTiming(t, func() string {
		start := time.Now()
		r := runScript(t, addr, 1, Params{Users: 3, Iterations: 1, Steps: steps(t, `
steps:
  - send: '{"op":"echo","id":1}'
  - expect: {correlate: $.id, timeout: 50ms, as: first}
  - think: 150ms
  - send: '{"op":"echo","id":2}'
  - expect: {correlate: $.id, timeout: 50ms, as: second}
  - send: '{"op":"nothing"}'
  - expect: {json: {$.op: never}, timeout: 250ms, as: never}
`)})
		took := time.Since(start)
		first, second, never := r.Exchanges["first"], r.Exchanges["second"], r.Exchanges["never"]
		if first.Timeouts+second.Timeouts > 0 {
			return fmt.Sprintf("an echo came later than its 50 ms timeout: first %+v second %+v", first, second)
		}
		if first.Count != 3 || second.Count != 3 || never.Timeouts != 3 || r.Aborted != 3 {
			t.Fatalf("first %+v second %+v never %+v aborted %d", first, second, never, r.Aborted)
		}
		if took < 400*time.Millisecond || took > 5*time.Second {
			t.Errorf("took %v, want the 150 ms pause and the 250 ms timeout (the early wake-ups re-armed, not taken for them)", took)
		}
		return ""
	})
}

// TestScriptOpenFailed: a user whose connection cannot open is counted
// with its reason.
func TestScriptOpenFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	r := runScript(t, addr, 1, Params{Users: 4, Iterations: 1, Steps: steps(t, `
steps:
  - send: hi
  - expect: {as: reply}
`)})
	if r.OpenFailed != 4 || r.Users != 0 || len(r.OpenErrors) == 0 || r.Peak != 0 {
		t.Fatalf("open failed %d users %d errors %v peak %d", r.OpenFailed, r.Users, r.OpenErrors, r.Peak)
	}
	for reason := range r.OpenErrors {
		if !strings.Contains(string(reason), "refused") {
			t.Errorf("reason %q, want the connection refused", reason)
		}
	}
}

// TestScriptOpenArrivals: users arrive on a timetable, each on a new
// connection, and their exchanges count from the arrival's scheduled time.
func TestScriptOpenArrivals(t *testing.T) {
	addr := (&appServer{}).start(t)
	start := time.Now()
	r := runScript(t, addr, 2, Params{ArrivalRate: 200, Duration: units.Duration(500 * time.Millisecond), MaxUsers: 1000, Steps: steps(t, `
steps:
  - send: '{"op":"echo","id":{{.conn}}}'
  - expect: {correlate: $.id, as: echo}
  - loop:
      count: 3
      steps:
        - think: 20ms
        - send: '{"op":"echo","id":{{.seq}}}'
        - expect: {correlate: $.id, as: more}
  - close: true
`)})
	// The last arrivals, due just before the 500 ms end, still run every
	// step: the duration is when users arrive.
	if r.Arrivals != 100 || r.Users != 100 || r.Finished != 100 || r.Dropped != 0 || r.Exchanges["echo"].Count != 100 || r.Exchanges["more"].Count != 300 {
		t.Fatalf("arrivals %d users %d finished %d dropped %d echo %+v more %+v", r.Arrivals, r.Users, r.Finished, r.Dropped, r.Exchanges["echo"], r.Exchanges["more"])
	}
	if took := time.Since(start); took < 450*time.Millisecond || took > 3*time.Second {
		t.Errorf("100 arrivals at 200/s took %v", took)
	}
}

// TestScriptSplitRows: each part gets the rows its users take.
func TestScriptSplitRows(t *testing.T) {
	p := &Params{Users: 10, Rows: userRows(10), Order: lang.OrderUnique, Concurrency: 4}
	parts := p.Split([]int{0, 0, 0})
	first := int64(0)
	for _, q := range parts {
		s := q.(*Params)
		if s.First != first || s.Rows.First != int(first) || len(s.Rows.Values) != s.Users {
			t.Fatalf("part %+v rows first %d n %d", s, s.Rows.First, len(s.Rows.Values))
		}
		first += int64(s.Users)
	}
	if first != 10 {
		t.Fatalf("split users %d", first)
	}
	o := (&Params{ArrivalRate: 100, Duration: units.Duration(time.Second), MaxUsers: 9}).Split([]int{1, 1, 1})
	n := int64(0)
	for _, q := range o {
		n += q.(*Params).arrivals()
	}
	if n != 100 {
		t.Fatalf("open arrivals split into %d, want 100", n)
	}
}

// scriptRig runs a script's user on one connection of a loop driven
// synchronously (as pathRig does for echoes): the test is the server.
type scriptRig struct {
	l     *client.Loop
	c     *client.Conn
	r     *scriptRun
	peer  int
	in    []byte
	frame []byte
}

func newScriptRig(tb testing.TB, body string) *scriptRig {
	tb.Helper()
	return newScriptRigWith(tb, body, nil)
}

// newScriptRigWith is newScriptRig whose connection speaks o's protocol
// (nil: raw messages), its greeting done.
func newScriptRigWith(tb testing.TB, body string, o *client.ProtocolOptions) *scriptRig {
	tb.Helper()
	l, c, peer := clienttest.DrivenLoop(tb)
	if o != nil {
		if err := l.SpeakDriven(c, *o, 0); err != nil {
			tb.Fatal(err)
		}
	}
	var v struct {
		Steps []lang.Step `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatal(err)
	}
	p := &Params{Steps: v.Steps, Users: 1, Iterations: 1, Timeout: units.Duration(time.Hour), ConnectTimeout: units.Duration(time.Second)}
	prog, errs := p.compile(nil)
	if errs != nil {
		tb.Fatal(errs)
	}
	job := &scriptJob{phase: 1, prog: prog, start: time.Now(), verbs: make([]uint8, len(prog.Instrs))}
	for i, in := range prog.Instrs {
		if in.Verb != "" {
			job.verbs[i] = proto.VerbCodes[in.Verb]
		}
	}
	r := &scriptRun{BaseRun: client.NewBaseRun(1), cl: l.Client(), job: job, p: p, byNum: map[int64]int32{}, exch: make([]Exchange, len(prog.Exchanges)), dialled: 1, active: 1}
	for i := range r.exch {
		r.exch[i].Latency = client.NewHist()
	}
	r.vars.Rand = l.Rand()
	r.users = []user{{c: c, state: uRunning, gen: 1, ready: l.Now()}}
	c.Slot = 0
	l.SetRun(r) // StopDriven finishes it when the test ends
	r.advance(l, &r.users[0], l.Now())
	return &scriptRig{l: l, c: c, r: r, peer: peer, in: make([]byte, 4096)}
}

// reply reads what the client sent and answers with msg.
func (g *scriptRig) reply(tb testing.TB, msg []byte) {
	if _, err := unix.Read(g.peer, g.in); err != nil {
		tb.Fatal(err)
	}
	g.frame = append(append(g.frame[:0], 0x80|client.OpText, byte(len(msg))), msg...) // short messages only
	if _, err := unix.Write(g.peer, g.frame); err != nil {
		tb.Fatal(err)
	}
	g.l.ReadFrames(g.c)
}

// TestScriptExchangeAllocs: a request matched to its reply by id costs
// no allocation in steady state (render, send, read, match, record).
func TestScriptExchangeAllocs(t *testing.T) {
	g := newScriptRig(t, `
steps:
  - loop:
      count: 100000000
      steps:
        - send: '{"id":{{.seq}},"op":"echo","data":"0123456789abcdef0123456789abcdef"}'
        - expect: {correlate: $.id, json: {$.op: reply}, as: echo}
`)
	seq := 1
	msg := make([]byte, 0, 64)
	round := func() {
		msg = append(msg[:0], `{"op":"reply","id":`...)
		msg = strconv.AppendInt(msg, int64(seq), 10)
		msg = append(msg, '}')
		g.reply(t, msg)
		seq++
	}
	for range 100 {
		round()
	}
	if n := testing.AllocsPerRun(2000, round); n > 0 {
		t.Fatalf("%.2f allocations per exchange, want 0", n)
	}
	if e := g.r.exch[0]; e.Count != 2101 || e.Mismatched != 0 {
		t.Fatalf("exchanges %+v", e)
	}
	// One wake-up stays armed for the user, not one left per exchange
	// until its (hour-long) deadline.
	if n := len(g.r.timers); n > 1 {
		t.Errorf("%d timers after 2101 exchanges, want at most 1", n)
	}
}

func BenchmarkScriptExchange(b *testing.B) {
	g := newScriptRig(b, `
steps:
  - loop:
      count: 100000000
      steps:
        - send: '{"id":{{.seq}},"op":"echo","data":"0123456789abcdef0123456789abcdef"}'
        - expect: {correlate: $.id, json: {$.op: reply}, as: echo}
`)
	msg := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := 1; i <= b.N; i++ {
		msg = append(msg[:0], `{"op":"reply","id":`...)
		msg = strconv.AppendInt(msg, int64(i), 10)
		msg = append(msg, '}')
		g.reply(b, msg)
	}
}

// TestScriptLiveLatency: with live metrics, every exchange's latency
// reaches Live's histogram (once a second while it runs, the rest when
// the phase ends), as many as the phase's own exchanges.
func TestScriptLiveLatency(t *testing.T) {
	addr := (&appServer{outOfOrder: true}).start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	pr := &client.Progress{Live: &client.Live{}}
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, loginScript), Users: 20, Iterations: 1, Concurrency: 10,
		Rows: userRows(20), Order: lang.OrderUnique, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second)}, pr)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	var want int64
	for _, e := range r.Exchanges {
		want += e.Count
	}
	s := pr.Live.Snapshot()
	if want != 20*(1+50+1) || s.Latency.Count != uint64(want) || s.Exchanges != want {
		t.Errorf("live latencies %d, exchanges %d; the phase completed %d (want %d)", s.Latency.Count, s.Exchanges, want, 20*52)
	}
}
