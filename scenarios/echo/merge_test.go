package echo

import (
	"reflect"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestSplitParams: Split keeps the phase's totals, follows the weights,
// and never gives a part more connections than it has.
func TestSplitParams(t *testing.T) {
	w := []int{6, 0, 4}
	echo := (&Params{Total: 1001, Concurrency: 10, Warmup: 11, Payload: new(units.Size(8))}).Split(w)
	if echo[1] != nil || echo[0].(*Params).Concurrency != 6 || echo[2].(*Params).Concurrency != 4 ||
		echo[0].(*Params).Total+echo[2].(*Params).Total != 1001 || echo[0].(*Params).Warmup+echo[2].(*Params).Warmup != 11 {
		t.Errorf("echo split %+v %+v %+v", echo[0], echo[1], echo[2])
	}
	// A part never gets more concurrency than it has connections.
	if e := (&Params{Total: 100, Concurrency: 12}).Split([]int{1, 20}); e[0].(*Params).Concurrency != 1 || e[1].(*Params).Concurrency != 11 {
		t.Errorf("echo split capped %+v %+v", e[0], e[1])
	}
	clienttest.PartsReady(t, echo)
}

// TestMergeResults: Merge, on parts straight from loops and on parts
// after the shard wire, sums counts, merges histograms and timelines
// exactly, adds failure reasons and merges stop reasons.
func TestMergeResults(t *testing.T) {
	for _, viaWire := range []bool{false, true} {
		all := client.NewHist()
		a := &Result{Total: 10, Success: 8, Failed: 2, Used: time.Second, Latency: clienttest.Hist(all, 1000, 2000, 3000), Errors: client.Reasons{client.ReasonTimeout: 2}, Ended: client.Ended{Stopped: client.StopNoConnections},
			Seconds: []client.PacedSecond{{Sent: 10, Recv: 8, P50: 2000, P99: 3000, Max: 3000}}}
		b := &Result{Total: 5, Success: 5, Used: 2 * time.Second, Latency: clienttest.Hist(all, 5000, 7_000_000), Errors: client.Reasons{client.ReasonTimeout: 1, client.ReasonWrongLength: 1},
			Seconds: []client.PacedSecond{{Sent: 3, Recv: 3, P50: 5000, P99: 5000, Max: 5000}, {Sent: 2, Recv: 2, P50: 7_000_000, P99: 7_000_000, Max: 7_000_000}}}
		if viaWire {
			a, b = clienttest.Wire(t, a), clienttest.Wire(t, b)
		}
		a.Merge(b)
		if a.Total != 15 || a.Success != 13 || a.Failed != 2 || a.Used != 2*time.Second || a.Errors[client.ReasonTimeout] != 3 || a.Errors[client.ReasonWrongLength] != 1 || a.Stopped != "" {
			t.Errorf("echo merge (wire %v): %+v", viaWire, a)
		}
		if want := []client.PacedSecond{{Sent: 13, Recv: 11, P50: 5000, P99: 5000, Max: 5000}, {Sent: 2, Recv: 2, P50: 7_000_000, P99: 7_000_000, Max: 7_000_000}}; !reflect.DeepEqual(a.Seconds, want) {
			t.Errorf("echo timeline merge (wire %v): %+v, want %+v", viaWire, a.Seconds, want)
		}
		clienttest.SameHist(t, "echo", a.Latency, all)
	}
}
