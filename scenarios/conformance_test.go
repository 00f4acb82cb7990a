package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/autobahn"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// bug is a protocol bug injected into the test echo server.
type bug int

const (
	noBug        bug = iota
	acceptsUTF8      // echoes text that is not valid UTF-8 instead of closing 1007
	wrongPongBug     // answers a ping with a pong of another payload
)

// echoServer is an echo server on gorilla/websocket, conformant as in
// gorilla's own Autobahn setup (UTF-8 of whole text messages checked, pings
// answered by gorilla's default handler) unless b injects a bug. It
// refuses requests without the header X-Test: conformance.
func echoServer(t *testing.T, b bug) *testserver.Server {
	t.Helper()
	opts := testserver.Options{CheckUTF8: b != acceptsUTF8, Check: func(r *http.Request) error {
		if r.Header.Get("X-Test") != "conformance" {
			return errors.New("missing X-Test header")
		}
		return nil
	}}
	if b == wrongPongBug {
		opts.Pong = func([]byte) []byte { return []byte("wrong") }
	}
	return testserver.Start(t, opts)
}

// The expected failing cases, from Autobahn's case definitions: the cases
// that expect a pong with the ping's payload, and those whose text is not
// valid UTF-8 (6.3.x, 6.4.x, and the invalid payloads of 6.5-6.21).
const (
	pingCaseIDs = "2.1-2.4 (4), 2.6, 2.9-2.11 (3), 5.6-5.8 (3), 5.19-5.20 (2)"
	utf8CaseIDs = "6.3.1-6.3.2 (2), 6.4.1-6.4.4 (4), 6.6.1, 6.6.3-6.6.4 (2), 6.6.6, 6.6.8, 6.6.10, 6.8.1-6.8.2 (2), " +
		"6.10.1-6.10.3 (3), 6.11.5, 6.12.1-6.12.8 (8), 6.13.1-6.13.5 (5), 6.14.1-6.14.10 (10), 6.15.1, 6.16.1-6.16.3 (3), " +
		"6.17.1-6.17.5 (5), 6.18.1-6.18.5 (5), 6.19.1-6.19.5 (5), 6.20.1-6.20.7 (7), 6.21.1-6.21.8 (8)"
	// A conformant server that checks UTF-8 once the message is complete
	// is NON-STRICT on the fail-fast cases.
	failFastIDs = "6.4.1-6.4.4 (4)"
)

// TestConformancePhase runs the phase against a conformant server and two
// servers with one injected bug each: exactly the expected cases fail,
// through the phase's metrics, warnings, detail and table. Most of each
// run is cases waiting out their timeouts (6.4.x: 2 s each), so the four
// run side by side; no goroutine is left once all have ended.
func TestConformancePhase(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, c := range []struct {
		name     string
		bug      bug
		behavior string
		failing  string // CaseRanges of the failing cases
		failed   int64
		nonStr   int64
		observed map[string]string // case id -> part of its Observed
	}{
		{"conformant strict", noBug, "strict", failFastIDs, 0, 4, nil},
		{"conformant lenient", noBug, "lenient", "", 0, 4, nil},
		{"accepts invalid UTF-8", acceptsUTF8, "strict", utf8CaseIDs, 75, 0, map[string]string{
			"6.3.1": "server sent a bad frame: encountered invalid UTF-8",
			"6.8.1": "expected the server to fail the connection: close 1007 or drop",
		}},
		{"wrong pong payload", wrongPongBug, "lenient", pingCaseIDs, 13, 4, map[string]string{
			"2.2": `got [pong "wrong"], expected [pong "Hello, world!"] (OK)`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := echoServer(t, c.bug)
			p := &Conformance{Cases: []string{"1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*"}, Behavior: Behavior(c.behavior)}
			Defaults(p, Context{})
			p.Parallel = 32 // the cases mostly wait out Autobahn's own timers
			if errs := Check(p, Context{}); len(errs) != 0 {
				t.Fatal(errs)
			}
			env := &Env{Target: Target{
				URL:    "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws",
				Header: http.Header{"X-Test": {"conformance"}},
			}}
			out, err := p.Run(t.Context(), env)
			if err != nil {
				t.Fatal(err)
			}
			srv.Close()
			var rep ConformanceDetail
			if err := json.Unmarshal(out.Detail, &rep); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range rep.Results {
				if !r.Pass {
					ids = append(ids, r.ID)
				}
			}
			t.Logf("%d cases in %v: %d OK, %d NON-STRICT, %d FAILED; failing (%s): %s",
				rep.Cases, rep.Duration.Round(time.Millisecond), rep.OK, rep.NonStrict, rep.Failed, rep.Behavior, CaseRanges(ids))
			if got := CaseRanges(ids); got != c.failing {
				t.Errorf("failing cases\n got %s\nwant %s", got, c.failing)
			}
			m := out.Metrics
			cases, _ := autobahn.Select(p.Cases, nil)
			if m.Int("cases") != int64(len(cases)) || m.Int("failed") != c.failed || m.Int("non_strict") != c.nonStr ||
				m.Int("failing") != int64(len(ids)) || m.Int("informational") != 3 || m.Int("unimplemented") != 0 ||
				m.Int("ok")+m.Int("non_strict")+m.Int("informational")+m.Int("failed") != m.Int("cases") {
				t.Errorf("metrics %v, want %d cases, %d failed, %d non-strict, %d failing, 3 informational", m, len(cases), c.failed, c.nonStr, len(ids))
			}
			if out.Failed {
				t.Errorf("phase failed (%s): failing cases are for assertions, not a failed phase", out.Error)
			}
			if len(ids) == 0 && len(out.Warnings) != 0 || len(ids) > 0 && (len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], c.failing)) {
				t.Errorf("warnings %q, want one naming %s", out.Warnings, c.failing)
			}
			byID := map[string]autobahn.Result{}
			for _, r := range rep.Results {
				byID[r.ID] = r
			}
			for id, sub := range c.observed {
				if o := byID[id].Observed; !strings.Contains(o, sub) {
					t.Errorf("%s observed %q, want it to contain %q", id, o, sub)
				}
			}
			// The report's table of cases not OK: the failing ones, and
			// NON-STRICT ones also when they pass under lenient.
			tables := conformanceTables(&result.Result{Server: "srv", Detail: out.Detail})
			rows := len(ids)
			if c.behavior == "lenient" {
				rows += int(c.nonStr)
			}
			switch {
			case rows == 0 && len(tables) != 0:
				t.Errorf("tables %+v, want none", tables)
			case rows > 0 && (len(tables) != 1 || len(tables[0].Rows) != rows || tables[0].Title != fmt.Sprintf("srv: %d cases not OK", rows)):
				t.Errorf("tables %+v, want one of %d rows", tables, rows)
			}
		})
	}
}

func TestConformanceValidate(t *testing.T) {
	for _, c := range []struct {
		p    Conformance
		want []string
	}{
		{Conformance{}, nil},
		{Conformance{Cases: []string{"*"}, Behavior: "lenient"}, nil},
		{Conformance{Behavior: "loose"}, []string{`behavior: must be strict or lenient, got "loose"`}},
		{Conformance{Cases: []string{"8.*", "2.10"}, Exclude: []string{"2.99"}}, []string{
			`cases: "8.*" matches no case (ids look like 1.1.1, 2.10, 6.4.*)`,
			`exclude: "2.99" matches no case (ids look like 1.1.1, 2.10, 6.4.*)`,
		}},
		{Conformance{Cases: []string{"2.*"}, Exclude: []string{"2.*"}}, []string{"exclude: leaves no case to run"}},
		{Conformance{Parallel: 65, CaseTimeout: units.Duration(time.Millisecond)}, []string{
			"case_timeout: must be >= 1s, got 1ms", "parallel: must be <= 64, got 65",
		}},
	} {
		p := c.p
		Defaults(&p, Context{})
		var got []string
		for _, e := range Check(&p, Context{}) {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%+v:\n got %q\nwant %q", c.p, got, c.want)
		}
	}
	// Defaults: every case but the big ones, strict, one at a time, 30 s.
	p := &Conformance{}
	Defaults(p, Context{})
	if p.Behavior != "strict" || p.Parallel != 1 || p.CaseTimeout.D() != 30*time.Second {
		t.Errorf("defaults %+v", p)
	}
	ids := p.include()
	all := autobahn.Cases()
	big := 0
	for _, c := range all {
		if c.Big {
			big++
		}
	}
	if len(ids) != len(all)-big || big == 0 || !slices.Contains(ids, "9.1.2") || slices.Contains(ids, "9.1.3") {
		t.Errorf("default cases: %d of %d (%d big)", len(ids), len(all), big)
	}
}

func TestCaseRanges(t *testing.T) {
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{nil, ""},
		{[]string{"2.10"}, "2.10"},
		{[]string{"1.1.1", "1.1.2", "1.2.1"}, "1.1.1-1.1.2 (2), 1.2.1"},
		{[]string{"2.9", "2.10", "2.11", "3.1"}, "2.9-2.11 (3), 3.1"},
		{[]string{"6.6.1", "6.6.3"}, "6.6.1, 6.6.3"},
	} {
		if got := CaseRanges(c.ids); got != c.want {
			t.Errorf("CaseRanges(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
}
