package broadcast

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// roomServer is a gorilla broadcast server following the /broadcast
// convention (?room=N, include_sender), whose behaviour tests can bend.
type roomServer struct {
	dupEvery  int64 // every n-th delivery (over the server) is sent twice; 0 = none
	dropEvery int64 // every n-th delivery is not sent; 0 = none
}

func (s *roomServer) start(t testing.TB) string {
	t.Helper()
	return testserver.Start(t, testserver.Options{Rooms: true, Copies: func(k int64) int {
		switch {
		case s.dropEvery > 0 && k%s.dropEvery == 0:
			return 0
		case s.dupEvery > 0 && k%s.dupEvery == 0:
			return 2
		}
		return 1
	}}).Addr()
}

// runBroadcast runs the three steps and returns the run's result.
func runBroadcast(t *testing.T, c *client.Client, p Params) Result {
	t.Helper()
	return runBroadcastWith(t, c, p, nil)
}

// runBroadcastWith is runBroadcast whose run step reports to pr.
func runBroadcastWith(t *testing.T, c *client.Client, p Params, pr *client.Progress) Result {
	t.Helper()
	p.Step = StepOpen
	open, err := client.RunAs[Result](c, t.Context(), &p, nil)
	if err != nil || open.Opened != int64(p.Rooms*p.RoomSize) {
		t.Fatalf("open: %v, opened %d (errors %v)", err, open.Opened, open.OpenErrors)
	}
	if got := c.Conns(); got != p.Rooms*p.RoomSize {
		t.Fatalf("after open: %d connections, want %d", got, p.Rooms*p.RoomSize)
	}
	p.Step = StepRun
	res, err := client.RunAs[Result](c, t.Context(), &p, pr)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	p.Step = StepClose
	if _, err := client.RunAs[Result](c, t.Context(), &p, nil); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := c.Conns(); got != 0 {
		t.Errorf("after close: %d connections open, want 0", got)
	}
	return res
}

func TestBroadcast(t *testing.T) {
	base := Params{Rooms: 3, RoomSize: 5, Publishers: 2, Rate: 20, Duration: units.Duration(500 * time.Millisecond), Payload: new(units.Size(64)),
		Drain: units.Duration(time.Second), Verify: new(true), IncludeSender: new(true), Concurrency: 8, Timeout: units.Duration(5 * time.Second)}
	// 3 rooms × 2 publishers × 20/s × 0.5 s = 60 messages.
	for _, tc := range []struct {
		name                  string
		dupEvery, dropEvery   int64
		change                func(*Params)
		deliveries, delivered int64
		dup                   bool
	}{
		{name: "every delivery", deliveries: 60 * 5, delivered: 60 * 5},
		{name: "without the sender", change: func(p *Params) { p.IncludeSender = new(false) }, deliveries: 60 * 4, delivered: 60 * 4},
		{name: "server drops every 10th", dropEvery: 10, deliveries: 300, delivered: 270},
		{name: "server duplicates every 10th", dupEvery: 10, deliveries: 300, delivered: 300, dup: true},
		{name: "prompt reads", change: func(p *Params) { p.Reads = client.ReadsPrompt }, deliveries: 300, delivered: 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own server and client; most of its time is the phase's and the drain's
			srv := &roomServer{dupEvery: tc.dupEvery, dropEvery: tc.dropEvery}
			addr := srv.start(t)
			c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Path: "/broadcast", Loops: 2})
			p := base
			if tc.change != nil {
				tc.change(&p)
			}
			pr := &client.Progress{Live: &client.Live{}}
			r := runBroadcastWith(t, c, p, pr)
			if n := pr.Live.Snapshot().Latency.Count; n != uint64(tc.delivered) {
				t.Errorf("live latencies %d, want every delivery's (%d)", n, tc.delivered)
			}
			if r.Published != 60 || r.Deliveries != tc.deliveries || r.Delivered != tc.delivered || r.Lost() != tc.deliveries-tc.delivered {
				t.Errorf("published %d deliveries %d delivered %d lost %d, want 60 %d %d %d", r.Published, r.Deliveries, r.Delivered, r.Lost(), tc.deliveries, tc.delivered, tc.deliveries-tc.delivered)
			}
			if r.Failed != 0 || r.Subscribers != 15 || r.Dropped != 0 {
				t.Errorf("failed %d subscribers %d dropped %d (errors %v)", r.Failed, r.Subscribers, r.Dropped, r.Errors)
			}
			if want := cmp.Or(p.Reads, client.ReadsBatched); r.Reads != want {
				t.Errorf("reads %q, want %q", r.Reads, want)
			}
			if tc.dup != (r.Duplicated > 0) || (!tc.dup && r.OutOfOrder != 0) {
				t.Errorf("duplicated %d out of order %d", r.Duplicated, r.OutOfOrder)
			}
			if n := r.Latency.TotalCount(); n != tc.delivered {
				t.Errorf("latency count %d, want %d", n, tc.delivered)
			}
			all, _ := p.Receivers()
			fan, incomplete := r.Fanout.Last(int32(all))
			if tc.dropEvery == 0 && (fan.TotalCount() != 60 || incomplete != 0) {
				t.Errorf("fanout over %d messages (%d incomplete), want 60", fan.TotalCount(), incomplete)
			}
			if tc.dropEvery > 0 && incomplete == 0 {
				t.Errorf("no incomplete message with drops")
			}
			if fan.TotalCount() > 0 && fan.Max() < r.Latency.Min() {
				t.Errorf("fanout max %d below the fastest delivery %d", fan.Max(), r.Latency.Min())
			}
		})
	}
}

// TestBroadcastSlow: slow subscribers that stop reading 200 ms at a time
// get every message, late, measured apart from the others. (Whether the
// others wait for them is a timing, measured by plans/broadcast-slow.yaml,
// not asserted here.)
func TestBroadcastSlow(t *testing.T) {
	testenv.Slow(t, "1 s: a slow subscriber over a second")
	var srv roomServer
	addr := srv.start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Path: "/broadcast", Loops: 1})
	p := Params{Rooms: 2, RoomSize: 10, Publishers: 1, Rate: 50, Duration: units.Duration(time.Second), Payload: new(units.Size(64)),
		Drain: units.Duration(2 * time.Second), IncludeSender: new(true), Slow: &Slow{Fraction: 0.2, ReadPause: units.Duration(200 * time.Millisecond)}, Concurrency: 8, Timeout: units.Duration(5 * time.Second)}
	r := runBroadcast(t, c, p)
	if r.Slow != 4 || r.SlowDeliveries != r.Published*2 || r.SlowDelivered != r.SlowDeliveries || r.Lost() != 0 {
		t.Fatalf("slow %d slow deliveries %d delivered %d lost %d", r.Slow, r.SlowDeliveries, r.SlowDelivered, r.Lost())
	}
	if p99 := time.Duration(r.SlowLatency.ValueAtQuantile(99)); p99 < 100*time.Millisecond {
		t.Errorf("slow p99 %v, want >= 100ms (they paused 200 ms at a time)", p99)
	}
	if n, slow := r.Latency.TotalCount(), r.SlowLatency.TotalCount(); n != r.Delivered-r.SlowDelivered || slow != r.SlowDelivered {
		t.Errorf("latencies %d + slow %d, want %d + %d", n, slow, r.Delivered-r.SlowDelivered, r.SlowDelivered)
	}
}

func TestParamsValidate(t *testing.T) {
	ok := Params{Step: StepRun, Rooms: 2, RoomSize: 10, Publishers: 1, Rate: 1, Duration: units.Duration(time.Second), Payload: new(units.Size(24)), IncludeSender: new(true)}
	decl.Defaults(&ok)
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	for _, tc := range []struct {
		change func(*Params)
		want   string
	}{
		{func(p *Params) { p.Step = "x" }, "step must be"},
		{func(p *Params) { p.Publishers = 11 }, "publishers must be in [1, room size 10]"},
		{func(p *Params) { p.Payload = new(units.Size(23)) }, "payload: must be >= 24 (the marker"},
		{func(p *Params) { p.Slow = &Slow{Fraction: 0.95} }, "must not include publishers"},
		{func(p *Params) { p.Slow = &Slow{Fraction: 0.1} }, "read pause must be > 0"},
		{func(p *Params) { p.First, p.Count = 15, 10 }, "within the 20 subscribers"},
		{func(p *Params) { p.RoomSize, p.IncludeSender = 1, new(false) }, "at least 2 members"},
	} {
		p := ok
		tc.change(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", p, err, tc.want)
		}
	}
}

// TestBroadcastSplit: the subscribers split in contiguous ranges, alike
// for every step whatever the weights.
func TestBroadcastSplit(t *testing.T) {
	p := Params{Rooms: 3, RoomSize: 5, First: 2, Count: 11, Concurrency: 3}
	parts := p.Split([]int{0, 7, 1})
	next := 2
	for i, q := range parts {
		b := q.(*Params)
		if b.First != next || b.Count == 0 || b.Concurrency < 1 {
			t.Fatalf("part %d: first %d count %d conc %d, want first %d", i, b.First, b.Count, b.Concurrency, next)
		}
		next += b.Count
	}
	if next != 13 {
		t.Errorf("parts end at %d, want 13", next)
	}
}

func TestFanoutTableJSON(t *testing.T) {
	a := FanoutTable{Stride: 1, PerPub: 2, Max: []int64{5, 0, 7, 1 << 40}, Count: []int32{3, 0, 1, 2}}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back FanoutTable
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.merge(FanoutTable{Stride: 1, PerPub: 2, Max: []int64{9, 0, 1, 0}, Count: []int32{1, 0, 1, 0}})
	want := FanoutTable{Stride: 1, PerPub: 2, Max: []int64{9, 0, 7, 1 << 40}, Count: []int32{4, 0, 2, 2}}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(back)
	if string(wb) != string(gb) {
		t.Errorf("merged %+v, want %+v", back, want)
	}
	h, incomplete := back.Last(4)
	if h.TotalCount() != 1 || h.Max() < 9 || incomplete != 2 {
		t.Errorf("last(4): %d messages, max %d, %d incomplete; want 1, 9, 2", h.TotalCount(), h.Max(), incomplete)
	}
}

// bcFrame is a server frame of one broadcast message.
func bcFrame(payload []byte, seq uint64, atUnix int64, room, member uint32) []byte {
	m := append([]byte(nil), payload...)
	client.PutMarker(m, seq, atUnix)
	binary.LittleEndian.PutUint32(m[16:], room)
	binary.LittleEndian.PutUint32(m[20:], member)
	return testserver.ServerFrame(true, client.OpBinary, m)
}

// TestBroadcastDeliveryAllocs: the per-delivery path (decode, marker,
// window, verification, histogram, fanout table) allocates nothing.
func TestBroadcastDeliveryAllocs(t *testing.T) {
	l, c, _ := clienttest.DrivenLoop(t)
	payload := client.MakePayload(256, false)
	p := &Params{Rooms: 1, RoomSize: 2, Publishers: 1, Rate: 1000, Duration: units.Duration(time.Hour), Payload: new(units.Size(256)), Verify: new(true), IncludeSender: new(true)}
	set := &subscriberSet{first: 1, conns: []*client.Conn{c}} // member 1: a subscriber only
	// The tags' defaults, as Client.Run applies them.
	decl.Defaults(p)
	broadcastStart(l, 1, l.Epoch().Add(time.Hour), p, set, client.AppendClientHeader(nil, client.OpBinary, 256, 0), payload, nil)
	r := l.Run().(*run)
	frames := make([][]byte, 4000)
	for i := range frames {
		frames[i] = bcFrame(payload, uint64(i), r.epochUnix+r.start+int64(i)*int64(time.Millisecond), 0, 0)
	}
	i := 0
	clienttest.ZeroAllocs(t, "delivery", 3000, func() {
		l.Feed(c, frames[i], l.Now())
		i++
	})
	if r.part.Delivered != int64(i) || r.part.Failed != 0 {
		t.Errorf("delivered %d failed %d (errors %v), want %d", r.part.Delivered, r.part.Failed, r.part.Errors, i)
	}
	l.Run().Finish(l, true, l.Now())
	l.TakeShare()
}

// BenchmarkBroadcastDelivery measures the client's cost per delivery.
func BenchmarkBroadcastDelivery(b *testing.B) {
	l, c, _ := clienttest.DrivenLoop(b)
	payload := client.MakePayload(256, false)
	p := &Params{Rooms: 1, RoomSize: 2, Publishers: 1, Rate: 1e6, Duration: units.Duration(time.Hour), Payload: new(units.Size(256)), Verify: new(true), IncludeSender: new(true)}
	set := &subscriberSet{first: 1, conns: []*client.Conn{c}}
	// The tags' defaults, as Client.Run applies them.
	decl.Defaults(p)
	broadcastStart(l, 1, l.Epoch().Add(time.Hour), p, set, client.AppendClientHeader(nil, client.OpBinary, 256, 0), payload, nil)
	r := l.Run().(*run)
	const n = 1 << 16
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = bcFrame(payload, uint64(i), r.epochUnix+r.start, 0, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Feed(c, frames[i%n], l.Now())
	}
	b.StopTimer()
	l.Run().Finish(l, true, l.Now())
	l.TakeShare()
}

// TestBroadcastCloseDropsSets: a client closed between the open and close
// steps leaves nothing in the package's table of sets.
func TestBroadcastCloseDropsSets(t *testing.T) {
	var srv roomServer
	addr := srv.start(t)
	c, err := client.New(client.Options{Targets: []string{addr}, Path: "/broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Step: StepOpen, Rooms: 1, RoomSize: 3, Publishers: 1, Rate: 1, Duration: units.Duration(time.Second), Payload: new(units.Size(24)),
		IncludeSender: new(true), Concurrency: 3, Timeout: units.Duration(5 * time.Second)}
	if _, err := client.RunAs[Result](c, t.Context(), &p, nil); err != nil {
		t.Fatal(err)
	}
	if setsOf(c, false) == nil {
		t.Fatal("no sets after the open step")
	}
	c.Close()
	if setsOf(c, false) != nil {
		t.Errorf("sets left after Close")
	}
}

// TestBroadcastMerge: a run's parts from loops and shards merge exactly,
// straight or after the shard wire: counts sum, the slack is the phase's,
// the send-lateness histogram is the one of every message.
func TestBroadcastMerge(t *testing.T) {
	for _, viaWire := range []bool{false, true} {
		lat, all := client.NewHist(), client.NewHist()
		a := &Result{Subscribers: 10, Published: 5, Late: 1, Deliveries: 50, Delivered: 49, Slack: client.DefaultSlack, Wakeups: 30,
			SendLate: clienttest.Hist(all, 10_000, 150_000, 2_000_000), Latency: clienttest.Hist(lat, 1_000_000), Used: time.Second, Errors: client.Reasons{client.ReasonEOF: 1}}
		b := &Result{Subscribers: 6, Published: 3, Unsent: 2, Deliveries: 30, Delivered: 30, Slack: client.DefaultSlack, Wakeups: 12,
			SendLate: clienttest.Hist(all, 5_000, 90_000_000), Latency: clienttest.Hist(lat, 2_000_000), Used: time.Second, Drain: time.Millisecond, Ended: client.Ended{Stopped: client.StopNoConnections}}
		if viaWire {
			a, b = clienttest.Wire(t, a), clienttest.Wire(t, b)
		}
		a.Merge(b)
		if a.Subscribers != 16 || a.Published != 8 || a.Late != 1 || a.Unsent != 2 || a.Deliveries != 80 || a.Delivered != 79 ||
			a.Slack != client.DefaultSlack || a.Wakeups != 42 || a.Used != time.Second || a.Drain != time.Millisecond || a.Errors[client.ReasonEOF] != 1 || a.Stopped != "" {
			t.Errorf("merge (wire %v): %+v", viaWire, a)
		}
		clienttest.SameHist(t, "broadcast send_late", a.SendLate, all)
		clienttest.SameHist(t, "broadcast latency", a.Latency, lat)
	}
}

// declSlack is the declared slack of a sender's slack: 0 (the default)
// is none given, client.NoSlack is 0s.
func declSlack(d time.Duration) *units.Duration {
	switch d {
	case 0:
		return nil
	case client.NoSlack:
		return new(units.Duration(0))
	}
	return new(units.Duration(d))
}

// bcPublisher starts a run step on a loop whose one connection is member
// 0 of a room of 2 (the publisher), publishing rate messages per second
// with slack from t = 0 an hour in the loop clock's future; the test plays
// the server on peer and pumps the run on a fake clock.
func bcPublisher(tb testing.TB, rate float64, slack time.Duration) (*client.Loop, *run, int) {
	tb.Helper()
	l, c, peer := clienttest.DrivenLoop(tb)
	payload := client.MakePayload(256, false)
	p := &Params{Rooms: 1, RoomSize: 2, Publishers: 1, Rate: units.Rate(rate), Duration: units.Duration(time.Hour), Payload: new(units.Size(256)), IncludeSender: new(true), Slack: declSlack(slack)}
	set := &subscriberSet{first: 0, conns: []*client.Conn{c}}
	// The tags' defaults, as Client.Run applies them.
	decl.Defaults(p)
	broadcastStart(l, 1, l.Epoch().Add(time.Hour), p, set, client.AppendClientHeader(nil, client.OpBinary, 256, 0), payload, nil)
	r := l.Run().(*run)
	if r.part.Published != 0 {
		tb.Fatal("broadcastStart published before t = 0")
	}
	return l, r, peer
}

// TestBroadcastPublishAllocs: the publish path (pacing, marker, masking,
// write, send lateness) allocates nothing per message, and every message
// published is in the send-lateness histogram.
func TestBroadcastPublishAllocs(t *testing.T) {
	l, r, peer := bcPublisher(t, 1000, 0)
	flen := r.flen
	in := make([]byte, 2*flen)
	now := r.start - int64(time.Millisecond)
	step := func() {
		now += int64(time.Millisecond) // one message due
		r.Pump(l, now)
		if n, err := unix.Read(peer, in); err != nil || n != flen {
			t.Fatalf("peer read %d bytes (%v), want one frame of %d", n, err, flen)
		}
	}
	step()
	clienttest.ZeroAllocs(t, "published message", 1000, step)
	// Message k is due at k ms: at each pump one is due, the last one
	// exactly on time, and the next 1 ms later (beyond the slack).
	// (An HDR histogram's 0 reads back as at most 1.)
	if r.part.Published != 1002 || r.part.Late != 0 || r.gate.Late.TotalCount() != r.part.Published || r.gate.Late.Max() > 1 {
		t.Errorf("published %d late %d, send_late count %d max %d; want 1002, 0, 1002, 0", r.part.Published, r.part.Late, r.gate.Late.TotalCount(), r.gate.Late.Max())
	}
	if next := now + int64(time.Millisecond); r.WakeAt() != next || r.DueAt() != next {
		t.Errorf("next wake %d due %d, want both at the next message %d", r.WakeAt(), r.DueAt(), next)
	}
}

// TestBroadcastSlackBatches: publishers use the rate phase's timer slack:
// after a pump the next wake-up is not before the slack, the pump then
// publishes every message due by then in one write, each one's lateness
// recorded from its own schedule; client.NoSlack wakes for each message.
func TestBroadcastSlackBatches(t *testing.T) {
	us := int64(time.Microsecond)
	for _, tc := range []struct {
		name      string
		slack     time.Duration
		wake      int64 // after the first pump at t = 0, from t = 0
		published int64 // by the second pump, at the wake
	}{
		{"default slack", 0, int64(client.DefaultSlack), 5},
		{"1ms", time.Millisecond, 1000 * us, 21},
		{"no slack", client.NoSlack, 50 * us, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, r, peer := bcPublisher(t, 20_000, tc.slack) // a message every 50 µs
			r.Pump(l, r.start)
			if r.part.Published != 1 || r.WakeAt() != r.start+tc.wake || r.DueAt() != r.start+50*us {
				t.Fatalf("first pump: published %d, wake at +%d due at +%d; want 1, +%d, +%d", r.part.Published, r.WakeAt()-r.start, r.DueAt()-r.start, tc.wake, 50*us)
			}
			r.Pump(l, r.WakeAt())
			if r.part.Published != tc.published {
				t.Errorf("second pump: published %d, want %d", r.part.Published, tc.published)
			}
			h := r.gate.Late
			if wantMax := tc.wake - 50*us; h.TotalCount() != tc.published || (h.Max() < wantMax*999/1000 || h.Max() > wantMax*1001/1000) {
				t.Errorf("send_late: %d values up to %d ns, want %d up to %d (the first message after t = 0 waited the longest)", h.TotalCount(), h.Max(), tc.published, wantMax)
			}
			in := make([]byte, 64*r.flen)
			if n, err := unix.Read(peer, in); err != nil || n != int(tc.published)*r.flen {
				t.Errorf("peer read %d bytes (%v), want %d frames", n, err, tc.published)
			}
		})
	}
}

// TestBroadcastSlackWakeups: on the same timetable (50 publishers × 400/s:
// a message due every 50 µs), the default slack wakes the loop less often
// than client.NoSlack (about a third as often here), at most once per slack; every message published is
// in the send-lateness histogram. The server takes the messages and
// delivers none, so the loop wakes only to publish.
func TestBroadcastSlackWakeups(t *testing.T) {
	testenv.Slow(t, "1 s: broadcast wakeups counted over a second")
	srv := &roomServer{dropEvery: 1}
	addr := srv.start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Path: "/broadcast", Loops: 1})
	p := Params{Rooms: 50, RoomSize: 2, Publishers: 1, Rate: 400, Duration: units.Duration(500 * time.Millisecond), Payload: new(units.Size(64)),
		Drain: units.Duration(10 * time.Millisecond), Concurrency: 16, Timeout: units.Duration(5 * time.Second)}
	const scheduled = 50 * 400 / 2
	run := func(slack time.Duration) Result {
		q := p
		q.Slack = declSlack(slack)
		r := runBroadcast(t, c, q)
		if r.Published+r.Unsent != scheduled || r.SendLate.TotalCount() != r.Published || r.Delivered != 0 {
			t.Fatalf("slack %v: published %d + unsent %d, send_late count %d, delivered %d; want %d, every one published, 0",
				slack, r.Published, r.Unsent, r.SendLate.TotalCount(), r.Delivered, scheduled)
		}
		if want := map[time.Duration]time.Duration{0: client.DefaultSlack, client.NoSlack: 0}[slack]; r.Slack != want {
			t.Errorf("slack %v: result says %v, want %v", slack, r.Slack, want)
		}
		return r
	}
	testenv.RetryTiming(t, func() string {
		def, none := run(0), run(client.NoSlack)
		// At most one wake-up per slack while publishing and draining, plus
		// the loop's ticks and commands.
		bound := int64((p.Duration+p.Drain).D()/client.DefaultSlack) + 50
		if def.Unsent != 0 || none.Unsent != 0 || def.Wakeups > bound || def.Wakeups >= none.Wakeups {
			return fmt.Sprintf("wake-ups: %d with the default slack (bound %d), %d without; unsent %d and %d",
				def.Wakeups, bound, none.Wakeups, def.Unsent, none.Unsent)
		}
		t.Logf("wake-ups for %d messages: %d with the default slack, %d without", scheduled, def.Wakeups, none.Wakeups)
		return ""
	})
}

// TestBroadcastStartAt: every loop starts the timetable at StartAt. Ahead
// of the run, no loop is late and every delivery arrives; 80 ms behind
// it, each loop says it began at least that late (started_late), and the
// whole timetable still runs.
func TestBroadcastStartAt(t *testing.T) {
	addr := (&roomServer{}).start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Path: "/broadcast", Loops: 2})
	p := Params{Rooms: 2, RoomSize: 4, Publishers: 1, Rate: 20, Duration: units.Duration(300 * time.Millisecond), Payload: new(units.Size(64)),
		Drain: units.Duration(time.Second), Verify: new(true), IncludeSender: new(true), Concurrency: 8, Timeout: units.Duration(5 * time.Second)}
	for _, lead := range []time.Duration{100 * time.Millisecond, -80 * time.Millisecond} {
		q := p
		q.StartAt = time.Now().Add(lead).UnixNano()
		r := runBroadcast(t, c, q)
		if lead > 0 && (r.StartedLate != 0 || r.Delivered != r.Deliveries || r.Deliveries == 0) {
			t.Errorf("lead %v: started late %v, delivered %d of %d; want 0 and all", lead, r.StartedLate, r.Delivered, r.Deliveries)
		}
		if lead < 0 && (r.StartedLate < -lead || r.Published == 0) {
			t.Errorf("lead %v: started late %v, published %d; want at least %v late, and messages published", lead, r.StartedLate, r.Published, -lead)
		}
	}
}
