// Package broadcast is the broadcast phase kind, whole: its keys, steps
// and result (params.go), what an event loop runs for it (loop.go; join.go
// for rooms a protocol carries) and its plan side (this file: its
// metrics, charts, report table, faults and Run). It registers itself
// with the client and with the scenarios in init; scenarios/all imports
// it.
package broadcast

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// The broadcast phase's key and the metrics only it reports.
const (
	Name                  = "broadcast"
	broadcastRooms        = "rooms"
	broadcastRoomSize     = "room_size"
	broadcastPublishers   = "publishers"
	broadcastPublished    = "published"
	broadcastPublishLag   = "publish_lag_max"
	broadcastDeliveries   = "deliveries"
	broadcastDelivered    = "delivered"
	broadcastDuplicated   = "duplicated"
	broadcastOutOfOrder   = "out_of_order"
	broadcastDeliveryRate = "delivery_rate"
	broadcastFanoutP50    = "fanout_p50"
	broadcastFanoutP99    = "fanout_p99"
	broadcastJoinP50      = "join_p50"
	broadcastJoinP99      = "join_p99"
	broadcastFanoutMax    = "fanout_max"
	broadcastIncomplete   = "incomplete"
	broadcastSlow         = "slow"
	broadcastSlowLost     = "slow_lost"
	broadcastSlowDropped  = "slow_dropped"
	broadcastMissed       = "missed"
	broadcastOpenFailed   = "open_failed"
	broadcastReadersLost  = "readers_dropped"
	broadcastSlowP50      = "slow_p50"
	broadcastSlowP99      = "slow_p99"
	broadcastStartedLate  = "started_late"
)

// RunLead is how long after the run step is sent publishing begins
// (Params.StartAt): time for every shard to receive the step and every
// loop to start reading its subscribers. A loop that starts later says
// so (started_late).
const RunLead = 250 * time.Millisecond

// Phase is fan-out: the phase opens Rooms × RoomSize connections of
// its own, each to the server's path with "?room=N" (the convention in
// docs/kinds/broadcast.md), and Publishers members of every room
// publish Rate messages per second for Duration on the rate phase's
// timetable. The server sends each message to every connection in its
// room; every subscriber records the latency of each delivery from the
// message's scheduled publish time (a 24-byte marker: number, Unix time,
// room, publisher). The connections are closed at the end of the phase.
type Phase struct {
	Params `yaml:",inline"`
}

// The scenarios' contract, checked at compile time (KindOf checks the
// client's).
var (
	_ scenarios.Phase           = (*Phase)(nil)
	_ scenarios.ContextDefaults = (*Phase)(nil)
)

func init() {
	k := client.KindOf[Params, Result](Name)
	k.Forget = dropSets
	client.Register(k)
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Paced:      true,
		Throughput: scenarios.Throughput{Metric: broadcastDeliveryRate, Unit: "deliveries/s", Messages: true, Count: broadcastDelivered},
		Doc:        "fan-out: rooms of subscribers, publishers at rate msgs/s on a timetable; latency of every delivery from the scheduled publish",
		New:        func() scenarios.Phase { return &Phase{} },
		Title:      "[BenchBroadcast] Report",
		Charts:     broadcastCharts,
		Columns:    columns,
		Faults:     faults,
		Metrics:    defs,
		Efficiency: &scenarios.Efficiency{Rate: broadcastDeliveryRate, EER: metrics.EER, Count: broadcastDelivered},
	})
}

// columns are the broadcast table's, in order.
var columns = []scenarios.Column{
	{Metric: scenarios.ColFramework},
	{Header: "Conns", Metric: metrics.Conns, Format: scenarios.FormatInt},
	{Header: "Rooms", Metric: broadcastRooms, Format: scenarios.FormatInt},
	{Header: "Published", Metric: broadcastPublished, Format: scenarios.FormatInt},
	{Header: "Deliveries", Metric: broadcastDeliveries, Format: scenarios.FormatInt},
	{Header: "Delivered", Metric: broadcastDelivered, Delta: true, Format: scenarios.FormatInt},
	{Header: "Lost", Metric: metrics.Lost, Delta: true, Format: scenarios.FormatInt},
	{Header: "Deliv/s", Metric: broadcastDeliveryRate, Delta: true, Format: scenarios.FormatRate},
	{Header: "TP50", Metric: metrics.P50, Delta: true},
	{Header: "TP99", Metric: metrics.P99, Delta: true},
	{Header: "Fanout P50", Metric: broadcastFanoutP50, Delta: true},
	{Header: "Fanout P99", Metric: broadcastFanoutP99, Delta: true},
	{Header: "Slow P99", Metric: broadcastSlowP99},
	{Header: "Mem/Sub", Metric: metrics.MemPerConn, Optional: true},
	{Header: "Srv CPU-s/1M", Metric: metrics.ServerCPUPer1M, Delta: true, Format: scenarios.FormatFloat2},
	{Header: "Cli CPU-s/1M", Metric: metrics.ClientCPUPer1M, Format: scenarios.FormatFloat2},
	{Metric: scenarios.ColServer},
	{Metric: scenarios.ColClientCPU},
	{Metric: scenarios.ColVerdict},
}

// faults are what fails a broadcast phase. Slow subscribers are the
// plan's own test of what the server does with a reader that lags: what
// they miss is their verdict, not a fault.
var faults = []scenarios.Fault{
	{Metric: broadcastOpenFailed, Of: metrics.Conns, What: "connections failed to open (the rooms were not measured)"},
	{Metric: metrics.Failed, Of: broadcastDeliveries, What: "deliveries were corrupt"},
	{Metric: broadcastMissed, Of: broadcastDeliveries, What: "deliveries to subscribers that read never came"},
	{Metric: broadcastDuplicated, Of: broadcastDeliveries, What: "deliveries were duplicated"},
	{Metric: broadcastOutOfOrder, Of: broadcastDeliveries, What: "deliveries came out of order"},
	{Metric: broadcastReadersLost, Of: metrics.Conns, What: "subscribers that read were disconnected"},
}

// defs are the broadcast phase's metrics.
var defs = metrics.Join([]metrics.Def{
	{Name: metrics.Conns, Kind: metrics.Count, Doc: "connections the phase opened (rooms × room_size)"},
	{Name: broadcastOpenFailed, Kind: metrics.Count, Doc: "connections that failed to open (after their retries), or to join their room: the rooms are then not measured"},
	{Name: metrics.MemPerConn, Kind: metrics.Bytes, Doc: "server memory per subscriber: its RSS once every subscriber joined, less its RSS before the first phase, / subscribers; absent when the server's memory is not measured"},
	{Name: broadcastJoinP50, Kind: metrics.Duration, Doc: "joining a room through a protocol (its subscribe to its answer), median; absent on raw connections"},
	{Name: broadcastJoinP99, Kind: metrics.Duration, Doc: "joining a room through a protocol, 99th percentile; absent on raw connections"},
	{Name: broadcastRooms, Kind: metrics.Count, Doc: "rooms"},
	{Name: broadcastRoomSize, Kind: metrics.Count, Doc: "connections per room"},
	{Name: broadcastPublishers, Kind: metrics.Count, Doc: "publishers per room"},
	{Name: broadcastPublished, Kind: metrics.Count, Doc: "messages published"},
	{Name: metrics.Late, Kind: metrics.Count, Doc: "messages published more than late_after after their schedule, or never (unsent)"},
	{Name: broadcastPublishLag, Kind: metrics.Duration, Doc: "the most a message was published after its schedule: how far the client itself fell behind (its deliveries carry it); the same figure as send_late_max"},
	{Name: broadcastDeliveries, Kind: metrics.Count, Doc: "deliveries expected: each message published × its room's receivers"},
	{Name: broadcastDelivered, Kind: metrics.Count, Doc: "distinct messages received intact, over every subscriber"},
	{Name: metrics.Lost, Kind: metrics.Count, Doc: "deliveries − delivered: never received by the end of the drain"},
	{Name: broadcastDuplicated, Kind: metrics.Count, Doc: "a message received again by the same subscriber"},
	{Name: broadcastOutOfOrder, Kind: metrics.Count, Doc: "a message received after a later one of the same publisher, per subscriber"},
	{Name: metrics.Failed, Kind: metrics.Count, Doc: "deliveries received corrupt (marker, length, opcode or payload)"},
	{Name: broadcastDeliveryRate, Kind: metrics.Float, Doc: "delivered / (duration + drain)"},
	{Name: metrics.EER, Kind: metrics.Float, Doc: "delivery_rate / server cpu_avg: deliveries per second per percent of a core"},
	{Name: metrics.DurationName, Kind: metrics.Duration, Doc: "publishing time"},
	{Name: metrics.Drain, Kind: metrics.Duration, Doc: "time after duration spent waiting for deliveries"},
}, scenarios.PacedDefs("wakeups / (published + delivered): client wake-ups per message published or delivered"), metrics.BehindDefs, metrics.Latency, []metrics.Def{
	{Name: broadcastFanoutP50, Kind: metrics.Duration, Doc: "latency of the last delivery of a message to the room (slow subscribers excepted), median"},
	{Name: broadcastFanoutP99, Kind: metrics.Duration, Doc: "latency of the last delivery of a message to the room (slow subscribers excepted): time until the whole room has it"},
	{Name: broadcastFanoutMax, Kind: metrics.Duration, Doc: "fanout, the slowest message"},
	{Name: broadcastIncomplete, Kind: metrics.Count, Doc: "tracked messages that reached only part of their room (not in the fanout figures)"},
	{Name: broadcastSlow, Kind: metrics.Count, Doc: "slow subscribers"},
	{Name: broadcastSlowLost, Kind: metrics.Count, Doc: "deliveries slow subscribers were due and never received"},
	{Name: broadcastSlowDropped, Kind: metrics.Count, Doc: "slow subscribers whose connection was lost (closed by the server) during the phase"},
	{Name: metrics.Dropped, Kind: metrics.Count, Doc: "subscribers whose connection was lost during the phase, slow ones included"},
	{Name: broadcastMissed, Kind: metrics.Count, Doc: "deliveries to subscribers that read (not slow) never received by the end of the drain: lost − slow_lost − failed (a corrupt delivery is failed, not missed)"},
	{Name: broadcastReadersLost, Kind: metrics.Count, Doc: "subscribers that read (not slow) whose connection was lost: dropped − slow_dropped"},
	{Name: broadcastSlowP50, Kind: metrics.Duration, Doc: "delivery latency to slow subscribers, median"},
	{Name: broadcastSlowP99, Kind: metrics.Duration, Doc: "delivery latency to slow subscribers, 99th percentile"},
	{Name: broadcastStartedLate, Kind: metrics.Duration, Doc: "the most a client loop began the run after publishing began (" + RunLead.String() + " after the step was sent): what reached its subscribers before was not counted; 0 when every loop began in time"},
}, scenarios.CPUPer1MDefs("deliveries", "deliveries"))

// broadcastCharts is the fan-out chart: the fan-out latency (time until a
// whole room has a message) next to the p99 of single deliveries (the
// deliveries per second are the headline's chart).
var broadcastCharts = []scenarios.Chart{
	{ID: "fanout-lat", Title: "Fan-out latency: the whole room vs one delivery", Unit: "ms",
		Note:   "fan-out: from the scheduled publish until the last (not slow) subscriber of the room has the message",
		Series: []scenarios.ChartSeries{{Name: "fan-out p50", Metric: broadcastFanoutP50}, {Name: "fan-out p99", Metric: broadcastFanoutP99}, {Name: "delivery p99", Metric: metrics.P99}},
		Needs:  broadcastFanoutP99},
}

// Defaults implements scenarios.ContextDefaults: rooms from connections, and the
// handshake concurrency.
func (p *Phase) Defaults(scenarios.Context) {
	if p.Rooms == 0 && p.RoomSize > 0 {
		p.Rooms = p.Connections / p.RoomSize
	}
	if p.Connections == 0 {
		p.Connections = p.Rooms * p.RoomSize
	}
	if p.Concurrency == 0 {
		p.Concurrency = scenarios.OpenConcurrency(p.Connections)
	}
}

// Opens implements Opener: the phase opens its own connections (and
// closes them at its end).
func (p *Phase) Opens() (conns, concurrency int) { return p.Rooms * p.RoomSize, p.Concurrency }

// Message implements Messenger: broadcast messages are binary.
func (p *Phase) Message() (int, bool) { return p.Bytes(), false }

// Bytes returns the payload size (its tag default before Defaults ran).
func (p *Phase) Bytes() int { return scenarios.SizeOr(p, "payload", p.Payload) }

// Validate implements scenarios.Phase.
func (p *Phase) Validate(scenarios.Context) []scenarios.FieldError {
	errs := scenarios.CheckReads(p.Reads)
	if p.Rooms <= 0 {
		errs = append(errs, scenarios.FieldError{Field: "rooms", Msg: fmt.Sprintf("give rooms, or connections >= room_size (%d)", p.RoomSize)})
	}
	if p.Connections > 0 && p.Rooms > 0 && p.Connections != p.Rooms*p.RoomSize {
		errs = append(errs, scenarios.FieldError{Field: "connections", Msg: fmt.Sprintf("must be rooms × room_size = %d, got %d (give one of rooms and connections)", p.Rooms*p.RoomSize, p.Connections)})
	}
	if p.Publishers > p.RoomSize {
		errs = append(errs, scenarios.FieldError{Field: "publishers", Msg: fmt.Sprintf("must be <= room_size (%d), got %d", p.RoomSize, p.Publishers)})
	}
	if !(p.Rate > 0) {
		errs = append(errs, scenarios.FieldError{Field: "rate", Msg: fmt.Sprintf("must be > 0 messages per publisher per second, got %s", p.Rate)})
	}
	if p.IncludeSender != nil && !*p.IncludeSender && p.RoomSize < 2 {
		errs = append(errs, scenarios.FieldError{Field: "room_size", Msg: "must be >= 2 without include_sender"})
	}
	if s := p.Slow; s != nil {
		if !(s.Fraction > 0 && s.Fraction < 1) {
			errs = append(errs, scenarios.FieldError{Field: "slow.fraction", Msg: fmt.Sprintf("must be in (0, 1), got %v", s.Fraction)})
		} else if n := int(s.Fraction*float64(p.RoomSize) + 0.5); n > p.RoomSize-p.Publishers {
			errs = append(errs, scenarios.FieldError{Field: "slow.fraction", Msg: fmt.Sprintf("%d slow members per room leave no room for %d publishers in rooms of %d", n, p.Publishers, p.RoomSize)})
		}
		if s.RcvBuf < 0 || s.RcvBuf > 1<<30 {
			errs = append(errs, scenarios.FieldError{Field: "slow.rcvbuf", Msg: fmt.Sprintf("must be in [0, 1GiB], got %d", int64(s.RcvBuf))})
		}
		if s.ReadPause <= 0 {
			errs = append(errs, scenarios.FieldError{Field: "slow.read_pause", Msg: fmt.Sprintf("must be > 0, got %s", s.ReadPause)})
		}
	}
	return errs
}

// params returns the client parameters of one step.
func (p *Phase) params(step string) *Params {
	q := p.Params
	q.Step = step
	return &q
}

// Run implements scenarios.Phase: open the rooms' connections, publish and measure,
// close them (also when the run failed).
func (p *Phase) Run(ctx context.Context, env *scenarios.Env) (scenarios.Outcome, error) {
	open, err := scenarios.Drive[Result](ctx, env, p.params(StepOpen))
	if open == nil {
		return scenarios.Outcome{}, err
	}
	closeAll := func() error {
		_, cerr := scenarios.Drive[Result](context.WithoutCancel(ctx), env, p.params(StepClose))
		return cerr
	}
	if err != nil || open.OpenFailed > 0 {
		// Rooms with members missing would measure another fan-out than
		// the plan's: the phase stops here, its open failures a fault the
		// plan may allow (it then measured nothing, and says so).
		cerr := closeAll()
		if err == nil {
			err = cerr
		}
		conns := int64(p.Rooms * p.RoomSize)
		return scenarios.Outcome{Metrics: metrics.Values{metrics.Conns: conns, broadcastOpenFailed: open.OpenFailed},
			Reasons:  map[string]string{broadcastOpenFailed: scenarios.ErrorSummary(open.OpenErrors)},
			Warnings: []string{fmt.Sprintf("not measured: %d of %d connections did not open or join their room", open.OpenFailed, conns)}}, err
	}
	var memPerSub int64 = -1 // the server's memory once every subscriber is in
	if env.Mem != nil {
		if m := env.Mem(); !m.NoServer && open.Opened > 0 {
			memPerSub = max(0, m.Server-env.Base.Server) / open.Opened
		}
	}
	q := p.params(StepRun)
	start := time.Now().Add(RunLead)
	q.StartAt = start.UnixNano()
	r, err := scenarios.Drive[Result](ctx, env, q)
	if cerr := closeAll(); err == nil && cerr != nil {
		err = cerr
	}
	if r == nil {
		return scenarios.Outcome{}, err
	}
	out := scenarios.Outcome{Metrics: BroadcastMetrics(*r, q), Histogram: scenarios.HistString(r.Latency)}
	out.Metrics[broadcastOpenFailed] = open.OpenFailed
	if memPerSub >= 0 {
		out.Metrics[metrics.MemPerConn] = memPerSub
	}
	if scenarios.HistCount(open.Join) > 0 {
		out.Metrics[broadcastJoinP50] = time.Duration(open.Join.ValueAtQuantile(50))
		out.Metrics[broadcastJoinP99] = time.Duration(open.Join.ValueAtQuantile(99))
	}
	out.Warnings = Warnings(*r, q)
	// Without a timeline, who fell behind is judged over the publishing.
	out.Behind = scenarios.SendingSpan(start, r.Used)
	out.WindowWarnings = func(m metrics.Values) []string {
		if !publishedLate(*r) {
			return nil
		}
		return []string{"publishing fell behind its timetable: " + scenarios.KeptUp(m)}
	}
	if w := scenarios.ReadsWarning(q.Reads, r.Reads); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	out.Reasons = map[string]string{metrics.Failed: scenarios.ErrorSummary(r.Errors)}
	if r.StartedLate > 0 && r.Delivered < r.Deliveries {
		// Deliveries missing while the client was late are not the
		// server's to answer for: the verdict names the client.
		out.Failed, out.Error = true, "client-bound: "+startedLate(*r)
	}
	if r.Stopped != "" {
		out.Failed, out.Error = true, "stopped early: "+string(r.Stopped)
	}
	return out, err
}

// BroadcastMetrics turns a broadcast result into the phase's metrics
// (without eer and the CPU figures, which the engine adds).
func BroadcastMetrics(r Result, q *Params) metrics.Values {
	all, slow := q.Receivers()
	fan, incomplete := r.Fanout.Last(int32(all - slow))
	v := metrics.Values{
		metrics.Conns:         int64(q.Rooms * q.RoomSize),
		broadcastRooms:        int64(q.Rooms),
		broadcastRoomSize:     int64(q.RoomSize),
		broadcastPublishers:   int64(q.Publishers),
		broadcastPublished:    r.Published,
		metrics.Late:          r.Late + r.Unsent,
		broadcastPublishLag:   sendLateMax(r),
		broadcastStartedLate:  r.StartedLate,
		broadcastDeliveries:   r.Deliveries,
		broadcastDelivered:    r.Delivered,
		metrics.Lost:          r.Lost(),
		broadcastDuplicated:   r.Duplicated,
		broadcastOutOfOrder:   r.OutOfOrder,
		metrics.Failed:        r.Failed,
		broadcastDeliveryRate: scenarios.PerSecond(r.Delivered, r.Used+r.Drain),
		metrics.DurationName:  r.Used,
		metrics.Drain:         r.Drain,
		broadcastIncomplete:   incomplete,
		broadcastSlow:         r.Slow,
		broadcastSlowLost:     r.SlowDeliveries - r.SlowDelivered,
		broadcastSlowDropped:  r.SlowDropped,
		metrics.Dropped:       r.Dropped,
		broadcastMissed:       max(r.Lost()-(r.SlowDeliveries-r.SlowDelivered)-r.Failed, 0), // a corrupt delivery came: it is failed, not missed
		broadcastReadersLost:  max(r.Dropped-r.SlowDropped, 0),
	}
	scenarios.PacedValues(v, r.Slack, r.SendLate, r.Wakeups, r.Published+r.Delivered)
	scenarios.LatencyValues(v, r.Latency)
	v[broadcastFanoutP50], v[broadcastFanoutP99], v[broadcastFanoutMax] = time.Duration(0), time.Duration(0), time.Duration(0)
	if h := fan.Histogram; h.TotalCount() > 0 {
		v[broadcastFanoutP50] = time.Duration(h.ValueAtQuantile(50))
		v[broadcastFanoutP99] = time.Duration(h.ValueAtQuantile(99))
		v[broadcastFanoutMax] = time.Duration(h.Max())
	}
	v[broadcastSlowP50], v[broadcastSlowP99] = time.Duration(0), time.Duration(0)
	if h := r.SlowLatency.Histogram; h != nil && h.TotalCount() > 0 {
		v[broadcastSlowP50] = time.Duration(h.ValueAtQuantile(50))
		v[broadcastSlowP99] = time.Duration(h.ValueAtQuantile(99))
	}
	return v
}

// Warnings are what a reader must not miss: lost, duplicated and
// reordered deliveries, late publishing, dropped subscribers, and what the
// server did with slow subscribers, as observed.
func Warnings(r Result, q *Params) []string {
	var w []string
	if all, _ := q.Receivers(); all > 1 && r.Published > 0 && r.Delivered <= r.Published {
		w = append(w, fmt.Sprintf("only %d deliveries of %d messages: does the server fan out? A preset does on path %s (servers[].path), your own server on the same convention (wsplan help broadcast)", r.Delivered, r.Published, "/broadcast"))
	}
	if late := r.Late + r.Unsent; publishedLate(r) {
		w = append(w, fmt.Sprintf("%d of %d messages published late (%d never; up to %v): their latency counts from their schedule", late, r.Published+r.Unsent, r.Unsent, sendLateMax(r).Round(time.Microsecond)))
	}
	if r.Slow > 0 {
		w = append(w, slowVerdict(r, q))
	}
	if r.StartedLate > 0 {
		w = append(w, startedLate(r))
	}
	return w
}

// startedLate says that a client loop began the run after publishing had
// begun, and what that means for the counts.
func startedLate(r Result) string {
	return fmt.Sprintf("a client loop began the run %v after publishing began (which was %v after the step was sent): what reached its subscribers before was not counted; give the client more CPU, or fewer shards per host",
		r.StartedLate.Round(time.Microsecond), RunLead)
}

// publishedLate reports whether more than RateLateShare of the messages
// due were published late or never.
func publishedLate(r Result) bool {
	return r.Published > 0 && float64(r.Late+r.Unsent) > scenarios.RateLateShare*float64(r.Published+r.Unsent)
}

// slowVerdict says what the server did with the slow subscribers, from
// what they received.
func slowVerdict(r Result, q *Params) string {
	lost := r.SlowDeliveries - r.SlowDelivered
	var did []string
	if r.SlowDelivered > 0 {
		did = append(did, fmt.Sprintf("held their messages (%d of %d delivered late", r.SlowDelivered, r.SlowDeliveries))
		if h := r.SlowLatency.Histogram; h != nil && h.TotalCount() > 0 {
			did[0] += fmt.Sprintf(", p99 %v", time.Duration(h.ValueAtQuantile(99)))
		}
		did[0] += ")"
	}
	if lost > 0 && r.SlowDropped < r.Slow {
		did = append(did, fmt.Sprintf("had not delivered %d by the end of the drain (dropped, or still queued)", lost))
	}
	if r.SlowDropped > 0 {
		did = append(did, fmt.Sprintf("disconnected %d of %d", r.SlowDropped, r.Slow))
	}
	if len(did) == 0 {
		did = append(did, "nothing observable")
	}
	var pause Slow
	if q.Slow != nil {
		pause = *q.Slow
	}
	return fmt.Sprintf("slow subscribers (%d, pausing %v): the server %s", r.Slow, pause.ReadPause, strings.Join(did, ", "))
}

// sendLateMax is the latest a message was published after its schedule.
func sendLateMax(r Result) time.Duration {
	if h := r.SendLate.Histogram; h != nil && h.TotalCount() > 0 {
		return time.Duration(h.Max())
	}
	return 0
}

// Speaks implements ProtocolSpeaker: a protocol that carries rooms
// (client.ProtocolRooms) runs the phase: each connection joins its room
// through it, publishers publish through it. The protocol, not a URL,
// decides whether a publisher gets its own messages: include_sender
// must stay true.
func (p *Phase) Speaks(proto string) string {
	switch {
	case !client.ProtocolRooms(proto):
		return proto + " carries no rooms"
	case proto != "" && p.IncludeSender != nil && !*p.IncludeSender:
		return "include_sender: false is a URL parameter of raw /broadcast servers; through a protocol every member of a room gets every message"
	}
	return ""
}
