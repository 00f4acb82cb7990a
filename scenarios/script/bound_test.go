package script

import (
	"runtime"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/client"
	lang "github.com/wsplan/wsplan/internal/script"
)

// TestScriptCaptureDoubles: a capture sent back twice each iteration
// doubles until its send would render more than lang.MaxRenderBytes;
// that send fails as an error (ReasonTooLong, on its step), its user
// ends, and the run's allocations stay a small multiple of the bound
// (without it, 40 doublings would ask for terabytes).
func TestScriptCaptureDoubles(t *testing.T) {
	addr := (&appServer{}).start(t)
	const send = `{"op":"echo","id":{{.seq}},"token":"{{.t}}{{.t}}"}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := runScript(t, addr, 1, Params{Users: 1, Iterations: 1, Steps: steps(t, `
steps:
  - send: '{"op":"echo","id":0,"token":"ab"}'
  - expect: {json: {$.op: reply}, capture: {t: $.token}}
  - loop:
      count: 40
      steps:
        - send: '`+send+`'
        - expect: {json: {$.op: reply}, capture: {t: $.token}, as: echo}
`)})
	runtime.ReadMemStats(&after)
	// Iteration i sends a token of 2^(i+1) bytes: the last that fits.
	want, fixed := int64(0), len(send)-len("{{.seq}}{{.t}}{{.t}}")+2
	for n := 4; n+fixed <= lang.MaxRenderBytes; n *= 2 {
		want++
	}
	if got := r.Exchanges["echo"].Count; got != want {
		t.Errorf("echo exchanges %d, want %d (the last token that fits the bound)", got, want)
	}
	if r.Errors[client.ReasonTooLong] != 1 || r.UsersFailed != 1 {
		t.Errorf("errors %v, users failed %d: want one %q", r.Errors, r.UsersFailed, client.ReasonTooLong)
	}
	if got := r.Failures["steps[2].loop.steps[0].send"][client.ReasonTooLong]; got != 1 {
		t.Errorf("failures %v: want the send step's", r.Failures)
	}
	if !strings.Contains(string(client.ReasonTooLong), "4 MiB") || lang.MaxRenderBytes != 4<<20 {
		t.Errorf("reason %q does not state the bound %d", client.ReasonTooLong, lang.MaxRenderBytes)
	}
	// Client and server (a JSON round trip per message) together.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*lang.MaxRenderBytes {
		t.Errorf("allocated %d MiB, want under %d MiB", alloc>>20, 64*lang.MaxRenderBytes>>20)
	} else {
		t.Logf("allocated %d MiB for %d doublings", alloc>>20, want)
	}
}

// TestScriptRequestTooLong: an upgrade header rendered past the bound (a
// data column repeated) fails the connection attempt as ReasonTooLong.
func TestScriptRequestTooLong(t *testing.T) {
	addr := (&appServer{}).start(t)
	rows := &lang.Rows{Columns: []string{"user"}, Total: 1, Values: [][]string{{strings.Repeat("u", lang.MaxRenderBytes/2+1)}}}
	r := runScript(t, addr, 1, Params{Users: 1, Iterations: 1, Rows: rows,
		HeaderList: [][2]string{{"X-User", "{{.row.user}}{{.row.user}}"}},
		Steps:      steps(t, "steps:\n  - send: x\n")})
	if r.OpenErrors[client.ReasonTooLong] != 1 || r.OpenFailed != 1 || r.Users != 0 {
		t.Errorf("open errors %v, open failed %d, users %d: want the attempt failed as %q", r.OpenErrors, r.OpenFailed, r.Users, client.ReasonTooLong)
	}
}
