package autobahn

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/lxzan/gws"
	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
)

// echoServer is an echo server on gorilla/websocket. With correct set it
// is the conformant server of gorilla's own Autobahn setup: it checks
// UTF-8 of whole text messages (gorilla does not) and answers pings with
// gorilla's default handler. With correct unset it has two injected bugs:
// it echoes invalid UTF-8 and answers a ping with a wrong payload.
func echoServer(t *testing.T, correct bool) *httptest.Server {
	return echoServerOpts(t, correct, false)
}

// echoServerOpts is echoServer, with permessage-deflate when compress is
// set (gorilla negotiates it without context takeover both ways). Its
// Close stops the listener; the test's cleanup ends the connections left.
func echoServerOpts(t *testing.T, correct, compress bool) *httptest.Server {
	t.Helper()
	opts := testserver.Options{CheckUTF8: correct, Compression: compress}
	if !correct {
		opts.Pong = func([]byte) []byte { return []byte("wrong") }
	}
	return testserver.Start(t, opts).Server
}

var big = flag.Bool("autobahn.big", false, "also run the big permessage-deflate cases (12.x.5-18, 13.x.5-18: minutes)")

// testExclude leaves out big cases: those of 12.x and 13.x (1000
// compressed messages of 4 KiB-128 KiB each: minutes in all), and unless
// WSPLAN_SLOW=1 also 9.x's (1-16 MiB messages: well under a second each
// against an in-process server, but seconds of CPU in all, and on a loaded
// host past their timeouts); -autobahn.big keeps them all.
func testExclude() []string {
	if *big {
		return nil
	}
	var ex []string
	for _, c := range Cases() {
		if c.Big && (!testenv.SlowEnabled() || len(c.offers) > 0) {
			ex = append(ex, c.ID)
		}
	}
	return ex
}

func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") }

func idsWith(rep Report, v Verdict) []string {
	var ids []string
	for _, r := range rep.Results {
		if r.Verdict == v {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// pingCases expect a pong with the ping's payload.
var pingCases = []string{"2.1", "2.2", "2.3", "2.4", "2.6", "2.9", "2.10", "2.11", "5.6", "5.7", "5.8", "5.19", "5.20"}

// invalidUTF8Cases are the cases whose text is not valid UTF-8: 6.3.x,
// 6.4.x and the invalid payloads of 6.5-6.23.
func invalidUTF8Cases() []string {
	ids := []string{"6.3.1", "6.3.2", "6.4.1", "6.4.2", "6.4.3", "6.4.4"}
	for gi, g := range utf8Groups() {
		for pi, p := range g.payloads {
			if !utf8.ValidString(p) {
				ids = append(ids, fmt.Sprintf("6.%d.%d", gi+5, pi+1))
			}
		}
	}
	return ids
}

func sorted(ids []string) []string {
	loadCases()
	var cs []*Case
	for _, id := range ids {
		cs = append(cs, registry[id])
	}
	slices.SortFunc(cs, func(a, b *Case) int { return slices.Compare(a.key, b.key) })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func checkOrder(t *testing.T, rep Report) {
	t.Helper()
	want, err := Select(nil, testExclude())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(want))
	}
	for i, r := range rep.Results {
		if r.ID != want[i].ID {
			t.Fatalf("result %d is %s, want %s (case-id order)", i, r.ID, want[i].ID)
		}
	}
}

// TestCorrectServer runs every case against a conformant echo server.
// What it does not get OK is data about that server, asserted exactly:
// it validates UTF-8 per message, not per frame, so the fail-fast cases
// 6.4.x are NON-STRICT; 7.1.6 and 7.13.x are INFORMATIONAL by definition.
func TestCorrectServer(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := echoServer(t, true)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)},
		Options{Exclude: testExclude(), Parallel: 8, Behavior: Lenient})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	checkOrder(t, rep)
	for _, r := range rep.Results {
		if r.Verdict != OK && r.Verdict != Unimplemented {
			t.Logf("%s %s: %s", r.ID, r.Verdict, r.Observed)
		}
	}
	if got, want := idsWith(rep, NonStrict), []string{"6.4.1", "6.4.2", "6.4.3", "6.4.4"}; !slices.Equal(got, want) {
		t.Errorf("NON-STRICT %v, want %v", got, want)
	}
	if got, want := idsWith(rep, Informational), []string{"7.1.6", "7.13.1", "7.13.2"}; !slices.Equal(got, want) {
		t.Errorf("INFORMATIONAL %v, want %v", got, want)
	}
	if got := idsWith(rep, Failed); len(got) != 0 {
		t.Errorf("FAILED %v, want none", got)
	}
	// Without compression enabled, 12.x and 13.x are UNIMPLEMENTED.
	deflate, err := Select([]string{"12.*", "13.*"}, testExclude())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range deflate {
		want = append(want, c.ID)
	}
	if got := idsWith(rep, Unimplemented); !slices.Equal(got, want) {
		t.Errorf("UNIMPLEMENTED %v, want %v", got, want)
	}
	if rep.OK != rep.Cases-7-len(want) || rep.Failing != 0 || !rep.Pass() {
		t.Errorf("counts %+v failing %d: want all OK but 7 and 12.x/13.x, none failing under lenient", rep.Counts, rep.Failing)
	}
	b, _ := json.Marshal(rep.Counts)
	t.Logf("counts %s in %v", b, rep.Duration)
}

// TestBrokenServer injects two bugs (invalid UTF-8 echoed, pings answered
// with a wrong payload): exactly the UTF-8 cases and the ping cases fail.
func TestBrokenServer(t *testing.T) {
	testenv.Slow(t, "4 s: the conformance suite against a broken server")
	defer goleak.VerifyNone(t)
	srv := echoServer(t, false)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)},
		Options{Exclude: testExclude(), Parallel: 8})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	checkOrder(t, rep)
	want := sorted(append(slices.Clone(pingCases), invalidUTF8Cases()...))
	if got := idsWith(rep, Failed); !slices.Equal(got, want) {
		t.Errorf("FAILED\n got %v\nwant %v", got, want)
	}
	if rep.Failed != len(want) || rep.Failing != len(want) || rep.Pass() || len(rep.Failures()) != len(want) {
		t.Errorf("counts %+v failing %d, want %d failed", rep.Counts, rep.Failing, len(want))
	}
	// The report is data: its JSON reads back to the same value.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, rep) {
		t.Errorf("JSON round trip: %v, equal %v", err, reflect.DeepEqual(back, rep))
	}
	byID := map[string]Result{}
	for _, r := range rep.Results {
		byID[r.ID] = r
	}
	for id, sub := range map[string]string{
		"2.2":   `got [pong "wrong"], expected [pong "Hello, world!"] (OK)`,
		"6.3.1": "client started the closing handshake",
		"6.8.1": `got nothing, expected nothing (OK)`,
	} {
		if r := byID[id]; !strings.Contains(r.Observed, sub) {
			t.Errorf("%s observed %q, want it to contain %q", id, r.Observed, sub)
		}
	}
	if r := byID["6.3.1"]; !strings.Contains(r.Observed, "server sent a bad frame: encountered invalid UTF-8") {
		t.Errorf("6.3.1 observed %q: want the echoed invalid text reported", r.Observed)
	}
}

func TestUnreachable(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rep, err := Run(context.Background(), Target{Addr: addr}, Options{Cases: []string{"1.1.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 8 || rep.Failed != 8 {
		t.Fatalf("counts %+v, want 8 failed", rep.Counts)
	}
	if o := rep.Results[0].Observed; !strings.Contains(o, "opening handshake failed: dial "+addr) {
		t.Errorf("observed %q", o)
	}
}

func TestRunBadOptions(t *testing.T) {
	for _, c := range []struct {
		t    Target
		o    Options
		want string
	}{
		{Target{URL: "http://x/"}, Options{}, `target url "http://x/": scheme must be ws or wss`},
		{Target{}, Options{}, "target: neither url nor addr given"},
		{Target{Addr: "x:1"}, Options{Behavior: "loose"}, `behavior "loose": must be "strict" or "lenient"`},
		{Target{Addr: "x:1"}, Options{Cases: []string{"8.*"}}, `case pattern "8.*" matches no implemented case`},
		{Target{Addr: "x:1"}, Options{CaseTimeout: -time.Second}, "case timeout: must be >= 0, got -1s"},
		{Target{Addr: "x:1"}, Options{Parallel: -2}, "parallel: must be >= 0, got -2"},
	} {
		if _, err := Run(context.Background(), c.t, c.o); err == nil || err.Error() != c.want {
			t.Errorf("%+v %+v: error %v, want %q", c.t, c.o, err, c.want)
		}
	}
}

// deflateCases keeps the deflate tests short (1000 messages per case add
// up on a shared 2-core host): the given patterns, or every 12.x and 13.x
// case with -autobahn.big.
func deflateCases(patterns ...string) []string {
	if *big {
		return []string{"12.*", "13.*"}
	}
	return patterns
}

// TestDeflateGorilla runs 12.x and 13.x against gorilla, which negotiates
// permessage-deflate without context takeover whatever the offer.
func TestDeflateGorilla(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := echoServerOpts(t, true, true)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)},
		Options{Cases: deflateCases("12.*.1", "13.*.1"), Exclude: testExclude(), Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	for _, r := range rep.Results {
		if r.Verdict != OK {
			t.Errorf("%s %s: %s", r.ID, r.Verdict, r.Observed)
		}
	}
	t.Logf("counts %+v in %v", rep.Counts, rep.Duration)
}

type gwsEcho struct{ gws.BuiltinEventHandler }

func (gwsEcho) OnPing(c *gws.Conn, p []byte) { _ = c.WritePong(p) } // a write error ends ReadLoop anyway

func (gwsEcho) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	_ = c.WriteMessage(m.Opcode, m.Bytes()) // a write error ends ReadLoop anyway
}

// TestDeflateContextTakeover runs 12.x and 13.x against gws with context
// takeover both ways and full 32 KiB windows, so both the client's
// compressor and its inflate window carry over from message to message.
func TestDeflateContextTakeover(t *testing.T) {
	testenv.Slow(t, "3 s: deflate context takeover, per server")
	defer goleak.VerifyNone(t)
	up := gws.NewUpgrader(gwsEcho{}, &gws.ServerOption{
		CheckUtf8Enabled: true,
		PermessageDeflate: gws.PermessageDeflate{Enabled: true, ServerContextTakeover: true, ClientContextTakeover: true,
			ServerMaxWindowBits: 15, ClientMaxWindowBits: 15},
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r)
		if err != nil {
			return // gws answered the request
		}
		c.ReadLoop()
	}))
	defer srv.Close()
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)},
		Options{Cases: deflateCases("12.*.1", "12.*.4", "13.*.1", "13.*.4"), Exclude: testExclude(), Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	for _, r := range rep.Results {
		if r.Verdict != OK {
			t.Errorf("%s %s: %s", r.ID, r.Verdict, r.Observed)
		}
	}
	t.Logf("counts %+v in %v", rep.Counts, rep.Duration)
}

// TestInterrupted cancels a run in the middle: finished cases are
// reported, the rest are left out, and nothing leaks.
func TestInterrupted(t *testing.T) {
	testenv.Slow(t, "2 s: the conformance suite interrupted")
	defer goleak.VerifyNone(t)
	srv := echoServer(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	// 6.4.x take 2 s each against this server; 1.1.1 a few ms.
	rep, err := Run(ctx, Target{URL: wsURL(srv)}, Options{Cases: []string{"1.1.1", "6.4.*"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if !rep.Interrupted || rep.Cases != 1 || rep.Results[0].ID != "1.1.1" || rep.OK != 1 {
		t.Errorf("interrupted %v, %d cases %+v", rep.Interrupted, rep.Cases, rep.Results)
	}
}

// TestCaseTimeout: a server that never answers is cut by CaseTimeout
// when that is shorter than the case's own timers.
func TestCaseTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		<-stop // never reads: the case's frames go unanswered
	}))
	defer srv.Close()
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)}, Options{Cases: []string{"9.1.1"}, CaseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	srv.Close()
	r := rep.Results[0]
	if r.Verdict != Failed || !strings.HasPrefix(r.Observed, "case timeout") || r.Duration > 5*time.Second {
		t.Errorf("%s %s after %v: %s", r.ID, r.Verdict, r.Duration, r.Observed)
	}
}

// TestTLSAndHeader runs cases over wss:// with an extra request header the
// server insists on, and shows a handshake refusal as the observed text.
func TestTLSAndHeader(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := testserver.Start(t, testserver.Options{TLS: &tls.Config{}, Check: func(r *http.Request) error {
		if r.Header.Get("Authorization") != "Bearer x" {
			return errors.New("no")
		}
		return nil
	}})
	defer srv.Close()
	url := "wss" + strings.TrimPrefix(srv.URL, "https") + "/echo"
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	rep, err := Run(context.Background(), Target{URL: url, TLS: tlsConf, Header: http.Header{"Authorization": {"Bearer x"}}},
		Options{Cases: []string{"1.1.*", "1.2.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != 16 {
		t.Errorf("counts %+v: %+v", rep.Counts, rep.Results)
	}
	rep, err = Run(context.Background(), Target{URL: url, TLS: tlsConf}, Options{Cases: []string{"1.1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if o := rep.Results[0].Observed; rep.Failed != 1 || o != "opening handshake failed: status 403 Forbidden, want 101" {
		t.Errorf("without the header: %+v", rep.Results[0])
	}
}

// TestRunCallbacks: Selected gets the number of cases before the first one
// runs, and Done every case's result once, with its verdict and Pass set.
func TestRunCallbacks(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := echoServer(t, false)
	var (
		mu       sync.Mutex
		selected = -1
		done     []string
	)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)}, Options{
		Cases:    []string{"1.1.1", "1.1.2", "2.2", "2.3"},
		Parallel: 3,
		Selected: func(n int) {
			mu.Lock()
			defer mu.Unlock()
			if len(done) > 0 {
				t.Error("Selected called after a case finished")
			}
			selected = n
		},
		Done: func(r Result) {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, fmt.Sprintf("%s=%s/%v", r.ID, r.Verdict, r.Pass))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	slices.Sort(done)
	if want := []string{"1.1.1=OK/true", "1.1.2=OK/true", "2.2=FAILED/false", "2.3=FAILED/false"}; selected != 4 || !slices.Equal(done, want) || rep.Cases != 4 {
		t.Errorf("selected %d, done %v, want 4 and %v", selected, done, want)
	}
}

// dyingServer is echoServer(correct) that dies, as a Node server whose
// app did not catch a protocol error did, when it gets a 125-byte ping
// for the second time (case 2.6): its listener closes and every
// connection is reset. gone then answers as the engine's pid check would.
func dyingServer(t *testing.T) (srv *httptest.Server, gone func(time.Duration) string) {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []*net.TCPConn
		pings int
		dead  bool
	)
	die := func() {
		mu.Lock()
		defer mu.Unlock()
		if dead {
			return
		}
		dead = true
		srv.Listener.Close()
		for _, c := range conns {
			_ = c.SetLinger(0) // a reset, as a killed process's sockets
			c.Close()
		}
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		mu.Lock()
		conns = append(conns, c.UnderlyingConn().(*net.TCPConn))
		mu.Unlock()
		c.SetPingHandler(func(p string) error {
			mu.Lock()
			if len(p) == 125 {
				pings++
			}
			n := pings
			mu.Unlock()
			if n == 2 {
				die()
				return nil
			}
			return c.WriteControl(websocket.PongMessage, []byte(p), time.Now().Add(time.Second))
		})
		for {
			mt, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, data); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	gone = func(time.Duration) string {
		mu.Lock()
		defer mu.Unlock()
		if dead {
			return "pid 4242 exited"
		}
		return ""
	}
	return srv, gone
}

// TestServerGone: a server that dies at case 2.6 is not reported as the
// cases after it FAILED: 2.6 keeps its verdict with the death in
// Observed, every case after it is not run, and the report says why;
// with cases in parallel, the first to find the server gone keeps its
// verdict and those cut short beside it are not run.
func TestServerGone(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []string{"1.1.*", "2.*", "3.*", "4.*"}
	selected, err := Select(cases, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprint("parallel ", par), func(t *testing.T) {
			srv, gone := dyingServer(t)
			rep, err := Run(context.Background(), Target{URL: wsURL(srv)}, Options{Cases: cases, Parallel: par, Gone: gone})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ServerGone != "pid 4242 exited" {
				t.Errorf("server gone %q", rep.ServerGone)
			}
			if rep.Cases+rep.NotRun != len(selected) || rep.NotRun < 1 {
				t.Errorf("%d cases, %d not run, of %d", rep.Cases, rep.NotRun, len(selected))
			}
			if rep.Interrupted {
				t.Error("interrupted: a gone server is not an interrupt")
			}
			byID := map[string]Result{}
			failed := 0
			for _, r := range rep.Results {
				byID[r.ID] = r
				if r.Verdict != Failed {
					continue
				}
				// Only the case that found the server gone (2.6 when one
				// runs at a time) may fail, and it says why.
				if failed++; failed > 1 || !strings.Contains(r.Observed, "the server's process exited during this case") || par == 1 && r.ID != "2.6" {
					t.Errorf("%s FAILED after the server died: %s", r.ID, r.Observed)
				}
			}
			if par == 1 {
				r, ok := byID["2.6"]
				if !ok || !strings.Contains(r.Observed, "the server's process exited during this case (pid 4242 exited)") {
					t.Errorf("2.6: %+v", r)
				}
				if rep.Cases != 8+6 {
					t.Errorf("%d cases run, want 1.1.1-1.1.8 and 2.1-2.6", rep.Cases)
				}
			}
		})
	}
}
