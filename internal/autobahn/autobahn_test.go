package autobahn

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

var big = flag.Bool("autobahn.big", false, "also run the cases that move 1 MiB or more (9.1.3-9.1.6, 9.2.3-9.2.6)")

// echoServer is an echo server on gorilla/websocket. With correct set it
// is the conformant server of gorilla's own Autobahn setup: it checks
// UTF-8 of whole text messages (gorilla does not) and answers pings with
// gorilla's default handler. With correct unset it has two injected bugs:
// it echoes invalid UTF-8 and answers a ping with a wrong payload.
func echoServer(t *testing.T, correct bool) *httptest.Server {
	t.Helper()
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade already answered the request
		}
		defer c.Close()
		if !correct {
			c.SetPingHandler(func(p string) error {
				return c.WriteControl(websocket.PongMessage, []byte("wrong"), time.Now().Add(time.Second))
			})
		}
		for {
			mt, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if correct && mt == websocket.TextMessage && !utf8.Valid(data) {
				msg := websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, "")
				_ = c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)) // closing anyway
				return
			}
			if err := c.WriteMessage(mt, data); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// testCases is every case unless -autobahn.big, then all but the big ones.
func testExclude() []string {
	if *big {
		return nil
	}
	var ex []string
	for _, c := range Cases() {
		if c.Big {
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

func TestGorillaEcho(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := echoServer(t, true)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)}, Options{Exclude: testExclude(), Parallel: 8, CaseTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	for _, r := range rep.Results {
		if r.Verdict != OK {
			t.Logf("%s %s: %s", r.ID, r.Verdict, r.Observed)
		}
	}
	b, _ := json.Marshal(rep.Counts)
	t.Logf("counts %s failing %d in %v", b, rep.Failing, rep.Duration)
}

func TestBrokenEcho(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := echoServer(t, false)
	rep, err := Run(context.Background(), Target{URL: wsURL(srv)}, Options{Exclude: testExclude(), Parallel: 8, CaseTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	t.Logf("failed: %v", idsWith(rep, Failed))
	t.Logf("non-strict: %v", idsWith(rep, NonStrict))
	_ = slices.Contains[[]string]
}
