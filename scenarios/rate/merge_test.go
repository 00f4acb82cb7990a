package rate

import (
	"reflect"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestSplitParams: Split keeps the phase's connections, follows the
// weights, places every part in one shared timetable and shares
// MaxInflightBytes out.
func TestSplitParams(t *testing.T) {
	w := []int{6, 0, 4}
	rate := (&Params{Duration: units.Duration(time.Second), Rate: 1, Connections: 9, Send: Send{Payload: new(units.Size(64))}}).Split(w)
	r0, r2 := rate[0].(*Params), rate[2].(*Params)
	if rate[1] != nil || r0.Connections+r2.Connections != 9 || r0.PhaseFirst != 0 || r2.PhaseFirst != r0.Connections || r0.PhaseTotal != 9 || r2.PhaseTotal != 9 ||
		r0.MaxInflightBytes+r2.MaxInflightBytes > 64<<20 || r0.Batch != units.Size(client.DefaultPacedBatch) {
		t.Errorf("rate split %+v %+v", r0, r2)
	}
	clienttest.PartsReady(t, rate)
}

// TestMergeResults: Merge, on parts straight from loops and on parts
// after the shard wire, sums counts, merges histograms and timelines
// exactly, adds failure reasons and merges stop reasons.
func TestMergeResults(t *testing.T) {
	for _, viaWire := range []bool{false, true} {
		all := client.NewHist()
		late := client.NewHist()
		r := &Result{Slack: time.Millisecond, Wakeups: 7, SendLate: clienttest.Hist(late, 5, 900_000), Conns: 2, Scheduled: 20, Sent: 19, Recv: 18, Failed: 1, Late: 3, Unsent: 1, BytesSent: 190, BytesRecv: 180,
			Used: time.Second, Drain: 100 * time.Millisecond, Latency: clienttest.Hist(all, 10, 20, 30),
			Seconds: []client.PacedSecond{{Sent: 10, Recv: 9, Late: 1, P50: 10, P99: 20, Max: 20}, {Sent: 9, Recv: 9, Late: 2, P50: 30, P99: 30, Max: 30}},
			Errors:  client.Reasons{client.ReasonMarkerMismatch: 1}, Ended: client.Ended{Stopped: client.StopNoConnections}}
		s := &Result{Slack: time.Millisecond, Wakeups: 4, SendLate: clienttest.Hist(late, 3_000_000), Conns: 1, Scheduled: 10, Sent: 10, Recv: 10, BytesSent: 100, BytesRecv: 100,
			Used: time.Second, Drain: 300 * time.Millisecond, Latency: clienttest.Hist(all, 40),
			Seconds: []client.PacedSecond{{Sent: 10, Recv: 10, P50: 40, P99: 40, Max: 40}}, Ended: client.Ended{Stopped: client.StopNoConnections}}
		if viaWire {
			r, s = clienttest.Wire(t, r), clienttest.Wire(t, s)
		}
		r.Merge(s)
		want := []client.PacedSecond{{Sent: 20, Recv: 19, Late: 1, P50: 40, P99: 40, Max: 40}, {Sent: 9, Recv: 9, Late: 2, P50: 30, P99: 30, Max: 30}}
		if r.Conns != 3 || r.Scheduled != 30 || r.Sent != 29 || r.Recv != 28 || r.Failed != 1 || r.Late != 3 || r.Unsent != 1 || r.BytesSent != 290 || r.BytesRecv != 280 ||
			r.Used != time.Second || r.Drain != 300*time.Millisecond || !reflect.DeepEqual(r.Seconds, want) || r.Errors[client.ReasonMarkerMismatch] != 1 || r.Stopped != client.StopNoConnections {
			t.Errorf("rate merge (wire %v): %+v", viaWire, r)
		}
		clienttest.SameHist(t, "rate", r.Latency, all)
		clienttest.SameHist(t, "rate send_late", r.SendLate, late)
		if r.Slack != time.Millisecond || r.Wakeups != 11 {
			t.Errorf("rate merge (wire %v): slack %v wakeups %d, want 1ms, 11", viaWire, r.Slack, r.Wakeups)
		}
	}
}

// TestDefaultMaxInflight: one second of messages at the rate, within
// [MinDefaultInflight, MaxDefaultInflight].
func TestDefaultMaxInflight(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{{0.1, 16}, {16, 16}, {200, 200}, {200.5, 201}, {1000, 1000}, {5000, 1000}} {
		if got := DefaultMaxInflight(c.rate); got != c.want {
			t.Errorf("DefaultMaxInflight(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}
