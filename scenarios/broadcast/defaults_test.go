package broadcast

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// TestTagDefaultsMatch: broadcast's keys that other kinds declare too
// (the paced ones, the reads, the dial's) default as theirs do (the paced
// ones as the core's defaults, which scenarios/rate ties to its tags), and the
// docs say the defaults the code applies.
func TestTagDefaultsMatch(t *testing.T) {
	must := func(v any, _ bool) any { return v }
	for _, c := range []struct {
		key  string
		want any
	}{
		{"late_after", units.Duration(client.DefaultLateAfter)},
		{"slack", units.Duration(client.DefaultSlack)},
		{"reads", client.ReadsBatched},
		{"timeout", must(decl.Default(&scenarios.Connect{}, "timeout"))},
		{"retries", must(decl.Default(&scenarios.Connect{}, "retries"))},
	} {
		got, ok := decl.Default(&Phase{}, c.key)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: tag default %v (%T, %v), want %v (%T)", c.key, got, got, ok, c.want, c.want)
		}
	}
	doc := ""
	for _, f := range decl.Fields(reflect.ValueOf(&Phase{})) {
		if f.Key == "concurrency" {
			doc = f.Struct.Tag.Get("doc")
		}
	}
	if want := fmt.Sprintf("min(%d, connections)", scenarios.DefaultConnectConcurrency); !strings.Contains(doc, want) {
		t.Errorf("concurrency: doc %q does not say %q", doc, want)
	}
	if n, _ := (&Phase{}).Message(); n != 256 {
		t.Errorf("payload %d before Defaults, want 256", n)
	}
}

// broadcastDriver opens every connection asked for and publishes late
// messages as late says; with startedLate, a loop began the run that
// long after StartAt and 3 of the deliveries went missing. It keeps the
// run step's StartAt.
type broadcastDriver struct {
	late        int64
	startedLate time.Duration
	startAt     int64
}

func (d *broadcastDriver) Run(_ context.Context, p client.Params, _ *client.Progress) (client.Result, error) {
	q := p.(*Params)
	r := client.NewResult(p).(*Result)
	switch q.Step {
	case StepOpen:
		r.Opened = int64(q.Rooms * q.RoomSize)
	case StepRun:
		r.Published, r.Late, r.Used = 1000, d.late, q.Duration.D()
		r.Deliveries, r.Delivered, r.StartedLate = 3000, 3000, d.startedLate
		if d.startedLate > 0 {
			r.Delivered -= 3
		}
		d.startAt = q.StartAt
	}
	return r, nil
}

func (d *broadcastDriver) Conns() int { return 0 }

// TestBroadcastNamesWhoFellBehind: a broadcast whose publishing fell
// behind its timetable says who could not keep up, over its publishing
// time (it keeps no timeline); one that kept up says nothing of it.
func TestBroadcastNamesWhoFellBehind(t *testing.T) {
	for _, late := range []int64{200, 0} {
		p := &Phase{Params: Params{Rooms: 1, RoomSize: 4, Rate: 10, Duration: units.Duration(time.Second)}}
		scenarios.Defaults(p, scenarios.Context{})
		before := time.Now()
		out, err := p.Run(t.Context(), &scenarios.Env{Driver: &broadcastDriver{late: late}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Behind) != 1 || out.Behind[0].From.Before(before) || out.Behind[0].To.Sub(out.Behind[0].From) != time.Second {
			t.Errorf("late %d: spans %v, want the second of publishing", late, out.Behind)
		}
		m := metrics.Values{metrics.CPUBehind: 97.0, metrics.ClientCPUBehind: 20.0, metrics.ClientCores: int64(1), metrics.ServerCPUs: int64(1)}
		w := strings.Join(out.AllWarnings(m), "\n")
		const want = "publishing fell behind its timetable: the server could not keep up (CPU 97% of 1 core while sending; client 20% of 1 core)"
		if got := strings.Contains(w, want); got != (late > 0) {
			t.Errorf("late %d: warnings %q; want %q in them: %v", late, w, want, late > 0)
		}
	}
}

// TestBroadcastStartedLate: the run step publishes RunLead after it is
// sent, on every loop at once (StartAt); a loop that began after that
// instant and deliveries missing fail the phase naming the client, with
// started_late, not the server.
func TestBroadcastStartedLate(t *testing.T) {
	for _, late := range []time.Duration{0, 30 * time.Millisecond} {
		p := &Phase{Params: Params{Rooms: 1, RoomSize: 4, Rate: 10, Duration: units.Duration(time.Second)}}
		scenarios.Defaults(p, scenarios.Context{})
		d := &broadcastDriver{startedLate: late}
		before := time.Now()
		out, err := p.Run(t.Context(), &scenarios.Env{Driver: d})
		if err != nil {
			t.Fatal(err)
		}
		if at := time.Unix(0, d.startAt); at.Before(before.Add(RunLead)) || at.After(time.Now().Add(RunLead)) {
			t.Errorf("late %v: StartAt %v, want %v after the step was sent (sent after %v)", late, at, RunLead, before)
		}
		if got := out.Metrics.Dur(broadcastStartedLate); got != late {
			t.Errorf("late %v: started_late %v", late, got)
		}
		w := strings.Join(out.Warnings, "\n")
		if late == 0 && (out.Failed || strings.Contains(w, "began the run")) {
			t.Errorf("in time: failed %v %q, warnings %q; want neither", out.Failed, out.Error, w)
		}
		if late > 0 && (!out.Failed || !strings.HasPrefix(out.Error, "client-bound: a client loop began the run 30ms after publishing began") || !strings.Contains(w, "began the run 30ms")) {
			t.Errorf("late: failed %v %q, warnings %q; want a client-bound failure naming 30ms", out.Failed, out.Error, w)
		}
	}
}
