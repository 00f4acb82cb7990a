package client

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"
)

// roomServer is a gorilla broadcast server following the /broadcast
// convention (?room=N, include_sender), whose behaviour tests can bend.
type roomServer struct {
	dupEvery  int64 // every n-th delivery (over the server) is sent twice; 0 = none
	dropEvery int64 // every n-th delivery is not sent; 0 = none
	n         atomic.Int64
	mu        sync.Mutex
	rooms     map[string][]*roomMember
	srv       *httptest.Server
}

type roomMember struct {
	mu sync.Mutex
	c  *websocket.Conn
}

func (s *roomServer) start(t testing.TB) string {
	t.Helper()
	s.rooms = map[string][]*roomMember{}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room := r.URL.Query().Get("room")
		include := r.URL.Query().Get("include_sender") != "false"
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		me := &roomMember{c: ws}
		s.mu.Lock()
		s.rooms[room] = append(s.rooms[room], me)
		s.mu.Unlock()
		for {
			op, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			s.mu.Lock()
			to := append([]*roomMember(nil), s.rooms[room]...)
			s.mu.Unlock()
			for _, m := range to {
				if m == me && !include {
					continue
				}
				k := s.n.Add(1)
				times := 1
				if s.dupEvery > 0 && k%s.dupEvery == 0 {
					times = 2
				}
				if s.dropEvery > 0 && k%s.dropEvery == 0 {
					times = 0
				}
				m.mu.Lock()
				for range times {
					_ = m.c.WriteMessage(op, msg)
				}
				m.mu.Unlock()
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	return strings.TrimPrefix(s.srv.URL, "http://")
}

// runBroadcast runs the three steps and returns the run's result.
func runBroadcast(t *testing.T, c *Client, p BroadcastParams) BroadcastResult {
	t.Helper()
	p.Step = BroadcastOpen
	open, err := runAs[BroadcastResult](c, t.Context(), &p, nil)
	if err != nil || open.Opened != int64(p.Rooms*p.RoomSize) {
		t.Fatalf("open: %v, opened %d (errors %v)", err, open.Opened, open.OpenErrors)
	}
	if got := c.Conns(); got != p.Rooms*p.RoomSize {
		t.Fatalf("after open: %d connections, want %d", got, p.Rooms*p.RoomSize)
	}
	p.Step = BroadcastRun
	res, err := runAs[BroadcastResult](c, t.Context(), &p, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	p.Step = BroadcastClose
	if _, err := runAs[BroadcastResult](c, t.Context(), &p, nil); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := c.Conns(); got != 0 {
		t.Errorf("after close: %d connections open, want 0", got)
	}
	return res
}

func TestBroadcast(t *testing.T) {
	base := BroadcastParams{Rooms: 3, RoomSize: 5, Publishers: 2, Rate: 20, Duration: 500 * time.Millisecond, Payload: 64,
		Drain: time.Second, Verify: true, Include: true, Conc: 8, Timeout: 5 * time.Second}
	// 3 rooms × 2 publishers × 20/s × 0.5 s = 60 messages.
	for _, tc := range []struct {
		name                  string
		dupEvery, dropEvery   int64
		change                func(*BroadcastParams)
		deliveries, delivered int64
		dup                   bool
	}{
		{name: "every delivery", deliveries: 60 * 5, delivered: 60 * 5},
		{name: "without the sender", change: func(p *BroadcastParams) { p.Include = false }, deliveries: 60 * 4, delivered: 60 * 4},
		{name: "server drops every 10th", dropEvery: 10, deliveries: 300, delivered: 270},
		{name: "server duplicates every 10th", dupEvery: 10, deliveries: 300, delivered: 300, dup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &roomServer{dupEvery: tc.dupEvery, dropEvery: tc.dropEvery}
			addr := srv.start(t)
			c := newClient(t, Options{Targets: []string{addr}, Path: "/broadcast", Loops: 2})
			p := base
			if tc.change != nil {
				tc.change(&p)
			}
			r := runBroadcast(t, c, p)
			if r.Published != 60 || r.Deliveries != tc.deliveries || r.Delivered != tc.delivered || r.Lost() != tc.deliveries-tc.delivered {
				t.Errorf("published %d deliveries %d delivered %d lost %d, want 60 %d %d %d", r.Published, r.Deliveries, r.Delivered, r.Lost(), tc.deliveries, tc.delivered, tc.deliveries-tc.delivered)
			}
			if r.Failed != 0 || r.Subscribers != 15 || r.Dropped != 0 {
				t.Errorf("failed %d subscribers %d dropped %d (errors %v)", r.Failed, r.Subscribers, r.Dropped, r.Errors)
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
	var srv roomServer
	addr := srv.start(t)
	c := newClient(t, Options{Targets: []string{addr}, Path: "/broadcast", Loops: 1})
	p := BroadcastParams{Rooms: 2, RoomSize: 10, Publishers: 1, Rate: 50, Duration: time.Second, Payload: 64,
		Drain: 2 * time.Second, Include: true, Slow: 0.2, ReadPause: 200 * time.Millisecond, Conc: 8, Timeout: 5 * time.Second}
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

func TestBroadcastValidate(t *testing.T) {
	ok := BroadcastParams{Step: BroadcastRun, Rooms: 2, RoomSize: 10, Publishers: 1, Rate: 1, Duration: time.Second, Payload: 24, Include: true}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	for _, tc := range []struct {
		change func(*BroadcastParams)
		want   string
	}{
		{func(p *BroadcastParams) { p.Step = "x" }, "step must be"},
		{func(p *BroadcastParams) { p.Publishers = 11 }, "publishers must be in [1, room size 10]"},
		{func(p *BroadcastParams) { p.Payload = 23 }, "payload must be in [24,"},
		{func(p *BroadcastParams) { p.Slow = 0.95 }, "must not include publishers"},
		{func(p *BroadcastParams) { p.Slow = 0.1 }, "read pause must be > 0"},
		{func(p *BroadcastParams) { p.First, p.Count = 15, 10 }, "within the 20 subscribers"},
		{func(p *BroadcastParams) { p.RoomSize, p.Include = 1, false }, "at least 2 members"},
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
	p := BroadcastParams{Rooms: 3, RoomSize: 5, First: 2, Count: 11, Conc: 3}
	parts := p.Split([]int{0, 7, 1})
	next := 2
	for i, q := range parts {
		b := q.(*BroadcastParams)
		if b.First != next || b.Count == 0 || b.Conc < 1 {
			t.Fatalf("part %d: first %d count %d conc %d, want first %d", i, b.First, b.Count, b.Conc, next)
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
	putMarker(m, seq, atUnix)
	binary.LittleEndian.PutUint32(m[16:], room)
	binary.LittleEndian.PutUint32(m[20:], member)
	return serverFrame(true, opBinary, m)
}

// TestBroadcastDeliveryAllocs: the per-delivery path (decode, marker,
// window, verification, histogram, fanout table) allocates nothing.
func TestBroadcastDeliveryAllocs(t *testing.T) {
	l, c, peer := loopPair(t)
	defer unix.Close(peer)
	payload := makePayload(256, false)
	p := &BroadcastParams{Rooms: 1, RoomSize: 2, Publishers: 1, Rate: 1000, Duration: time.Hour, Payload: 256, Verify: true, Include: true}
	set := &bcSet{first: 1, conns: []*conn{c}} // member 1: a subscriber only
	l.bcRun(1, l.epoch.Add(time.Hour), p, set, appendClientHeader(nil, opBinary, 256, 0), payload, nil)
	r := l.ph.(*bcastRun)
	frames := make([][]byte, 4000)
	for i := range frames {
		frames[i] = bcFrame(payload, uint64(i), r.epochUnix+r.start+int64(i)*int64(time.Millisecond), 0, 0)
	}
	i := 0
	allocs := testing.AllocsPerRun(3000, func() {
		l.feed(c, frames[i], l.now())
		i++
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per delivery, want 0", allocs)
	}
	if r.part.Delivered != int64(i) || r.part.Failed != 0 {
		t.Errorf("delivered %d failed %d (errors %v), want %d", r.part.Delivered, r.part.Failed, r.part.Errors, i)
	}
	l.ph.finish(l, true, l.now())
	<-l.results
}

// BenchmarkBroadcastDelivery measures the client's cost per delivery.
func BenchmarkBroadcastDelivery(b *testing.B) {
	l, c, peer := loopPair(b)
	defer unix.Close(peer)
	payload := makePayload(256, false)
	p := &BroadcastParams{Rooms: 1, RoomSize: 2, Publishers: 1, Rate: 1e6, Duration: time.Hour, Payload: 256, Verify: true, Include: true}
	set := &bcSet{first: 1, conns: []*conn{c}}
	l.bcRun(1, l.epoch.Add(time.Hour), p, set, appendClientHeader(nil, opBinary, 256, 0), payload, nil)
	r := l.ph.(*bcastRun)
	const n = 1 << 16
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = bcFrame(payload, uint64(i), r.epochUnix+r.start, 0, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.feed(c, frames[i%n], l.now())
	}
	b.StopTimer()
	l.ph.finish(l, true, l.now())
	<-l.results
}

// TestBroadcastCloseDropsSets: a client closed between the open and close
// steps leaves nothing in the package's table of sets.
func TestBroadcastCloseDropsSets(t *testing.T) {
	var srv roomServer
	addr := srv.start(t)
	c, err := New(Options{Targets: []string{addr}, Path: "/broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	p := BroadcastParams{Step: BroadcastOpen, Rooms: 1, RoomSize: 3, Publishers: 1, Rate: 1, Duration: time.Second, Payload: 24,
		Include: true, Conc: 3, Timeout: 5 * time.Second}
	if _, err := runAs[BroadcastResult](c, t.Context(), &p, nil); err != nil {
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
