package broadcast

import (
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
	"github.com/wsplan/wsplan/scenarios/scenariotest"
)

func TestBroadcastValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Phase
		field string // "" = valid
		want  string
	}{
		{name: "rooms", p: Phase{Params: Params{Rooms: 20, RoomSize: 100, Rate: 10, Duration: units.Duration(time.Second)}}},
		{name: "connections", p: Phase{Params: Params{Connections: 2000, RoomSize: 100, Rate: 10, Duration: units.Duration(time.Second)}}},
		{name: "no rooms", p: Phase{Params: Params{Connections: 50, RoomSize: 100, Rate: 10, Duration: units.Duration(time.Second)}}, field: "rooms", want: "give rooms"},
		{name: "both disagree", p: Phase{Params: Params{Rooms: 3, Connections: 200, RoomSize: 100, Rate: 10, Duration: units.Duration(time.Second)}}, field: "connections", want: "rooms × room_size = 300"},
		{name: "publishers", p: Phase{Params: Params{Rooms: 1, RoomSize: 4, Publishers: 5, Rate: 10, Duration: units.Duration(time.Second)}}, field: "publishers", want: "<= room_size (4)"},
		{name: "slow fraction", p: Phase{Params: Params{Rooms: 1, RoomSize: 10, Rate: 10, Duration: units.Duration(time.Second), Slow: &Slow{Fraction: 1, ReadPause: units.Duration(time.Second)}}}, field: "slow.fraction", want: "(0, 1)"},
		{name: "slow pause", p: Phase{Params: Params{Rooms: 1, RoomSize: 10, Rate: 10, Duration: units.Duration(time.Second), Slow: &Slow{Fraction: 0.1}}}, field: "slow.read_pause", want: "> 0"},
		{name: "slow publishers", p: Phase{Params: Params{Rooms: 1, RoomSize: 10, Publishers: 3, Rate: 10, Duration: units.Duration(time.Second), Slow: &Slow{Fraction: 0.8, ReadPause: units.Duration(time.Second)}}}, field: "slow.fraction", want: "no room for 3 publishers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			scenarios.Defaults(&p, scenarios.Context{})
			errs := scenarios.Check(&p, scenarios.Context{})
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("errors %v", errs)
				}
				if c, _ := p.Opens(); c != 2000 {
					t.Errorf("opens %d, want 2000", c)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Msg, tc.want) {
					return
				}
			}
			t.Errorf("errors %v, want %s: …%s…", errs, tc.field, tc.want)
		})
	}
}

// TestBroadcastMetrics: lost, slow_lost and the fanout come from the
// result as documented; the verdict says what the server did.
func TestBroadcastMetrics(t *testing.T) {
	q := &Params{Rooms: 1, RoomSize: 4, Publishers: 1, IncludeSender: new(true), Slow: &Slow{Fraction: 0.25, ReadPause: units.Duration(time.Second)}}
	r := Result{Published: 10, Late: 2, Deliveries: 40, Delivered: 37, SlowDeliveries: 10, SlowDelivered: 8, Slow: 1,
		Latency: client.NewHist(), SlowLatency: client.NewHist(),
		Fanout: FanoutTable{Stride: 1, PerPub: 2, Max: []int64{int64(time.Millisecond), int64(3 * time.Millisecond)}, Count: []int32{3, 2}}}
	r.SlowLatency.RecordValue(int64(2 * time.Second))
	r.Slack, r.Wakeups, r.SendLate = client.DefaultSlack, 94, client.NewHist()
	for _, d := range []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 150 * time.Microsecond, 3 * time.Millisecond} {
		r.SendLate.RecordValue(int64(d))
	}
	v := BroadcastMetrics(r, q)
	if v.Int("lost") != 3 || v.Int("slow_lost") != 2 || v.Int("incomplete") != 1 || v.Dur("fanout_max") > 2*time.Millisecond || v.Dur("fanout_p99") < time.Millisecond {
		t.Errorf("metrics %v", v)
	}
	// The pacing figures, as the rate phase's: wake-ups per message
	// published or delivered (94 / (10 + 37)), send lateness from its
	// histogram, whose max is publish_lag_max.
	if v.Dur("slack") != client.DefaultSlack || v.Int("wakeups") != 94 || v.Float("wakeups_per_msg") != 2 ||
		!scenariotest.Near(v.Dur("send_late_p50"), 20*time.Microsecond) || !scenariotest.Near(v.Dur("send_late_p99"), 3*time.Millisecond) ||
		!scenariotest.Near(v.Dur("send_late_max"), 3*time.Millisecond) || v.Dur("publish_lag_max") != v.Dur("send_late_max") {
		t.Errorf("slack %v wakeups %d (%v per message), send_late p50 %v p99 %v max %v, publish_lag_max %v; want 200µs, 94 (2), 20µs, 3ms, 3ms, 3ms",
			v.Dur("slack"), v.Int("wakeups"), v.Float("wakeups_per_msg"), v.Dur("send_late_p50"), v.Dur("send_late_p99"), v.Dur("send_late_max"), v.Dur("publish_lag_max"))
	}
	scenariotest.CheckDeclaredSet(t, "broadcast", v, metrics.MemPerConn, broadcastJoinP50, broadcastJoinP99, broadcastOpenFailed)
	if v.Int(broadcastMissed) != 1 {
		t.Errorf("missed %d, want 1 (3 lost, 2 of them to the slow subscriber)", v.Int(broadcastMissed))
	}
	if failed, msg, _ := scenariotest.Judged(Name, &Phase{}, scenarios.Outcome{Metrics: v}, nil); !failed || !strings.Contains(msg, "1 of 40 deliveries to subscribers that read never came") {
		t.Errorf("verdict %v %q", failed, msg)
	}
	w := strings.Join(Warnings(r, q), "\n")
	for _, want := range []string{"2 of 10 messages published late (0 never; up to 3ms)", "the server held their messages (8 of 10 delivered late", "had not delivered 2 by the end of the drain"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q, want %q", w, want)
		}
	}
}

// TestBroadcastNoFanout: an echo server (the wrong path) sends each
// message back to its publisher only; the warning says where to look.
func TestBroadcastNoFanout(t *testing.T) {
	q := &Params{Rooms: 2, RoomSize: 10, Publishers: 1, IncludeSender: new(true)}
	r := Result{Published: 20, Deliveries: 200, Delivered: 20, Latency: client.NewHist(), SlowLatency: client.NewHist()}
	w := strings.Join(Warnings(r, q), "\n")
	if !strings.Contains(w, "does the server fan out? A preset does on path /broadcast") {
		t.Errorf("warnings %q", w)
	}
	r.Delivered = 200
	if w := strings.Join(Warnings(r, q), "\n"); strings.Contains(w, "fan out") {
		t.Errorf("warned with every delivery in: %q", w)
	}
}

// TestBroadcastSlack: the plan's slack reaches the client's publishers
// (client.slackOf), and a negative one is a load error.
func TestBroadcastSlack(t *testing.T) {
	ms := units.Duration(time.Millisecond)
	p := Phase{Params: Params{Rooms: 1, RoomSize: 2, Rate: 10, Duration: units.Duration(time.Second), Slack: &ms}}
	scenarios.Defaults(&p, scenarios.Context{})
	if errs := scenarios.Check(&p, scenarios.Context{}); len(errs) > 0 {
		t.Fatalf("slack 1ms: errors %v", errs)
	}
	if got := p.params(StepRun).Slack; got == nil || *got != ms {
		t.Errorf("slack 1ms: client gets %v", got)
	}
	neg := units.Duration(-time.Millisecond)
	p = Phase{Params: Params{Rooms: 1, RoomSize: 2, Rate: 10, Duration: units.Duration(time.Second), Slack: &neg}}
	scenarios.Defaults(&p, scenarios.Context{})
	if errs := scenarios.Check(&p, scenarios.Context{}); len(errs) != 1 || errs[0].Field != "slack" {
		t.Errorf("slack -1ms: errors %v, want one on slack", errs)
	}
}
