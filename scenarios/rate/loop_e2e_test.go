package rate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// checkRateSums checks what must hold in any rate result: the timeline
// adds up to the totals, and the histogram holds exactly the intact echoes.
func checkRateSums(t *testing.T, res Result) {
	t.Helper()
	var sent, recv, late int64
	for _, s := range res.Seconds {
		sent += s.Sent
		recv += s.Recv
		late += s.Late
		if s.Recv > 0 && (s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max) {
			t.Errorf("a second with %d echoes has p50 %v p99 %v max %v", s.Recv, s.P50, s.P99, s.Max)
		}
		if s.Max > time.Duration(res.Latency.Max()) {
			t.Errorf("a second's max %v above the phase's %v", s.Max, time.Duration(res.Latency.Max()))
		}
	}
	if sent != res.Sent || recv != res.Recv || late != res.Late {
		t.Errorf("timeline sums sent %d recv %d late %d; totals %d, %d, %d", sent, recv, late, res.Sent, res.Recv, res.Late)
	}
	if got := res.Latency.TotalCount(); got != res.Recv {
		t.Errorf("latency count %d, want recv %d", got, res.Recv)
	}
	if res.Unsent != res.Scheduled-res.Sent || res.Unsent < 0 {
		t.Errorf("unsent %d, scheduled %d, sent %d", res.Unsent, res.Scheduled, res.Sent)
	}
	if res.Recv+res.Failed > res.Sent {
		t.Errorf("recv %d + failed %d > sent %d", res.Recv, res.Failed, res.Sent)
	}
}

func TestRate(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: loops, NoDelay: true})
			clienttest.MustConnect(t, c, 50)
			testenv.RetryTiming(t, func() string {
				before := s.Msgs.Load()
				var pr client.Progress
				start := time.Now()
				res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 40, Send: Send{Payload: new(units.Size(1024)), Verify: new(true)}}, &pr)
				used := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				checkRateSums(t, res)
				// 50 connections × 40/s × 0.5 s: exactly 1000 on the timetable.
				if res.Conns != 50 || res.Scheduled != 1000 || res.Sent != 1000 || res.Recv != 1000 || res.Failed != 0 || res.Lost() != 0 || res.Unsent != 0 {
					t.Fatalf("result %+v, errors %v", res, res.Errors)
				}
				if got := s.Msgs.Load() - before; got != 1000 {
					t.Errorf("server saw %d messages, want 1000", got)
				}
				if res.BytesSent != 1000*1024 || res.BytesRecv != 1000*1024 {
					t.Errorf("bytes sent %d recv %d, want %d", res.BytesSent, res.BytesRecv, 1000*1024)
				}
				if res.Slack != client.DefaultSlack || res.SendLate.TotalCount() != 1000 || res.Wakeups <= 0 {
					t.Errorf("slack %v, send_late count %d, wakeups %d; want %v, 1000, > 0", res.Slack, res.SendLate.TotalCount(), res.Wakeups, client.DefaultSlack)
				}
				if pr.Total.Load() != 1000 || pr.Done.Load() != 1000 {
					t.Errorf("progress %d/%d, want 1000/1000", pr.Done.Load(), pr.Total.Load())
				}
				if res.Stopped != "" {
					t.Errorf("stopped %q", res.Stopped)
				}
				// Batched reads are the default (prompt only where the kernel
				// refuses receive timestamps: then every loop says so).
				if res.Reads != client.ReadsBatched && res.Reads != client.ReadsPrompt {
					t.Errorf("reads %q", res.Reads)
				}
				if res.Used != 500*time.Millisecond || res.Drain > 200*time.Millisecond || used > time.Second {
					return fmt.Sprintf("used %v drain %v wall %v; want 500ms, a short drain", res.Used, res.Drain, used)
				}
				if len(res.Seconds) < 1 || len(res.Seconds) > 2 || res.Seconds[0].Sent != 1000 {
					return fmt.Sprintf("timeline %+v, want 1000 sent in second 0", res.Seconds)
				}
				if p99 := time.Duration(res.Latency.ValueAtQuantile(99)); p99 <= 0 || p99 > 200*time.Millisecond {
					return fmt.Sprintf("p99 %v", p99)
				}
				return ""
			})
		})
	}
}

// TestRateSpread: sends follow the timetable, spread over the period,
// not in bursts: the server sees the messages arrive evenly.
func TestRateSpread(t *testing.T) {
	testenv.Slow(t, "a 1 s phase whose arrivals' spread is timing: the pacer's spread is table-tested (TestCursor*), TestRate runs the pacing")
	var mu sync.Mutex
	var arrivals []time.Time
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		for {
			_, op, p, err := testserver.ReadClientFrame(r)
			if err != nil {
				return
			}
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			mu.Unlock()
			if _, err := c.Write(testserver.ServerFrame(true, op, p)); err != nil {
				return
			}
		}
	}}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, NoDelay: true})
	clienttest.MustConnect(t, c, 10)
	testenv.RetryTiming(t, func() string {
		mu.Lock()
		arrivals = arrivals[:0]
		mu.Unlock()
		// 10 connections × 10/s: one message every 10 ms over all of them.
		res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(time.Second), Rate: 10, Send: Send{Payload: new(units.Size(64))}}, nil)
		if err != nil || res.Sent != 100 || res.Recv != 100 {
			t.Fatalf("%+v, %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		// In each 10 ms slot of the second, about one message: never a burst.
		slots := map[int]int{}
		for _, a := range arrivals {
			slots[int(a.Sub(arrivals[0])/(10*time.Millisecond))]++
		}
		crowded := 0
		for _, n := range slots {
			if n > 2 {
				crowded++
			}
		}
		if crowded > 5 {
			return fmt.Sprintf("%d of 100 10-ms slots got more than 2 messages: sends are bunched (%v)", crowded, slots)
		}
		return ""
	})
}

func TestRateFractionalAndRamp(t *testing.T) {
	t.Parallel() // counts only, no timing: runs after the timing tests, beside the others like it
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 40)
	// 2.5/s for 200 ms: each connection has half a period (400 ms):
	// phases 0…0.5 send once, the others never.
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(200 * time.Millisecond), Rate: 2.5, Send: Send{Payload: new(units.Size(16))}}, nil)
	if err != nil || res.Scheduled != 20 || res.Sent != 20 || res.Recv != 20 {
		t.Errorf("2.5/s: %+v, %v; want 20 messages", res, err)
	}
	// A ramp over the whole phase: half the messages of the full rate
	// (40 × 100/s × 0.5 s / 2).
	res, err = client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Ramp: units.Duration(500 * time.Millisecond), Rate: 100, Send: Send{Payload: new(units.Size(16))}}, nil)
	if err != nil || res.Scheduled < 990 || res.Scheduled > 1010 || res.Sent != res.Scheduled || res.Recv != res.Sent {
		t.Errorf("ramp: %+v, %v; want about 1000 messages", res, err)
	}
	checkRateSums(t, res)
}

// stallServer echoes every message, but every n-th message over all
// connections holds a server-wide lock for stall before its echo, as a
// single-threaded server that stops now and then would.
func stallServer(t *testing.T, n int64, stall time.Duration) string {
	var mu sync.Mutex
	var count atomic.Int64
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		w := bufio.NewWriter(c)
		for {
			_, op, p, err := testserver.ReadClientFrame(r)
			if err != nil {
				return
			}
			mu.Lock()
			if count.Add(1)%n == 0 {
				time.Sleep(stall)
			}
			mu.Unlock()
			w.Write(testserver.ServerFrame(true, op, p))
			if r.Buffered() == 0 {
				if err := w.Flush(); err != nil {
					return
				}
			}
		}
	}}
	return s.Start(t)
}

// TestRateCoordinatedOmission: a server that stalls 100 ms every 100th
// message. A closed-loop client would wait out each stall and record it
// once; the open loop keeps sending on schedule, so every message that
// queued behind a stall is recorded with its wait, and p99 shows the
// stalls.
func TestRateCoordinatedOmission(t *testing.T) {
	addr := stallServer(t, 100, 100*time.Millisecond)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, NoDelay: true})
	clienttest.MustConnect(t, c, 20)
	// 20 × 10/s = 200 messages/s: two stalls a second, 1 s.
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(time.Second), Rate: 10, Send: Send{Payload: new(units.Size(256)), Verify: new(true)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	if res.Sent != 200 || res.Recv != 200 || res.Lost() != 0 {
		t.Fatalf("sent %d recv %d lost %d; want 200, 200, 0 (errors %v)", res.Sent, res.Recv, res.Lost(), res.Errors)
	}
	p50 := time.Duration(res.Latency.ValueAtQuantile(50))
	p99 := time.Duration(res.Latency.ValueAtQuantile(99))
	max := time.Duration(res.Latency.Max())
	t.Logf("p50 %v p99 %v max %v late %d", p50, p99, max, res.Late)
	if p99 < 90*time.Millisecond {
		t.Errorf("p99 %v: the 100 ms stalls do not show", p99)
	}
	if max < 100*time.Millisecond || max > time.Second {
		t.Errorf("max %v, want about 100 ms", max)
	}
	if p50 > 50*time.Millisecond {
		t.Errorf("p50 %v: most messages do not meet a stall", p50)
	}
}

// TestRateCorruptEchoes: a wrong payload byte, a wrong marker and a
// wrong length each fail their echo, with their reason.
func TestRateCorruptEchoes(t *testing.T) {
	t.Parallel() // counts only, no timing: runs after the timing tests, beside the others like it
	var n atomic.Int64
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		for {
			_, op, p, err := testserver.ReadClientFrame(r)
			if err != nil {
				return
			}
			switch n.Add(1) {
			case 10:
				p[100] ^= 1 // payload
			case 20:
				p[3] ^= 1 // marker: sequence
			case 30:
				p[12] ^= 1 // marker: scheduled time
			case 40:
				p = p[:len(p)-1]
			}
			if _, err := c.Write(testserver.ServerFrame(true, op, p)); err != nil {
				return
			}
		}
	}}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 5)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 40, Send: Send{Payload: new(units.Size(512)), Verify: new(true)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	if res.Sent != 100 || res.Failed != 4 || res.Recv != 96 || res.Lost() != 0 {
		t.Errorf("sent %d recv %d failed %d lost %d; want 100, 96, 4, 0", res.Sent, res.Recv, res.Failed, res.Lost())
	}
	want := map[string]int64{"payload mismatch": 1, "marker mismatch": 2, "wrong length": 1}
	if fmt.Sprint(res.Errors) != fmt.Sprint(want) {
		t.Errorf("errors %v, want %v", res.Errors, want)
	}
}

// TestRateBackpressure: a server that never answers. Each connection stops
// at MaxInflight messages; the rest of the timetable is late and unsent,
// never queued without bound, and the phase ends at duration + drain.
func TestRateBackpressure(t *testing.T) {
	testenv.Slow(t, "1 s: a second of rate against a slow reader")
	s := &testserver.EchoServer{SilentFrom: 1}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 10)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 200, Send: Send{Payload: new(units.Size(64)), MaxInflight: 10, Drain: units.Duration(200 * time.Millisecond)}}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	if res.Scheduled != 1000 || res.Sent != 100 || res.Unsent != 900 || res.Recv != 0 || res.Lost() != 100 {
		t.Errorf("scheduled %d sent %d unsent %d recv %d lost %d; want 1000, 100, 900, 0, 100", res.Scheduled, res.Sent, res.Unsent, res.Recv, res.Lost())
	}
	if used < 700*time.Millisecond || used > 1100*time.Millisecond || res.Drain < 200*time.Millisecond {
		t.Errorf("phase took %v (drain %v), want 500 ms + 200 ms", used, res.Drain)
	}
	// The bound over every connection: 25 messages' worth of bytes.
	res, err = client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(300 * time.Millisecond), Rate: 100, Send: Send{Payload: new(units.Size(64)), MaxInflight: 10, MaxInflightBytes: 25 * 64, Drain: units.Duration(50 * time.Millisecond)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	if res.Scheduled != 300 || res.Sent != 25 || res.Unsent != 275 || res.Lost() != 25 {
		t.Errorf("byte bound: scheduled %d sent %d unsent %d lost %d; want 300, 25, 275, 25", res.Scheduled, res.Sent, res.Unsent, res.Lost())
	}
}

// TestRateSocketFull: a server that reads nothing. The sockets fill up,
// the messages due wait for a writable socket that never comes, count as
// late or unsent, and the phase still ends on time.
func TestRateSocketFull(t *testing.T) {
	s := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		<-t.Context().Done() // hold the connection, read nothing
	}}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 4)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 2000, Send: Send{Payload: new(units.Size(64 << 10)), MaxInflight: 100000, Drain: units.Duration(100 * time.Millisecond)}}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	t.Logf("scheduled %d sent %d late %d unsent %d", res.Scheduled, res.Sent, res.Late, res.Unsent)
	if res.Unsent < res.Scheduled/2 || res.Recv != 0 {
		t.Errorf("scheduled %d sent %d unsent %d recv %d: want most unsent", res.Scheduled, res.Sent, res.Unsent, res.Recv)
	}
	if used > time.Second {
		t.Errorf("phase took %v, want about 600 ms", used)
	}
}

// TestRateLateSends: a loop that cannot keep up (a server that answers
// with a stall per message keeps the client's reads short, but here the
// timetable itself is too dense to write on time) counts late messages
// and still measures their latency from the schedule.
func TestRateLateSends(t *testing.T) {
	addr := stallServer(t, 1<<62, 0)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 50)
	// A short drain: what is asserted is the sending, not the echoes.
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(250 * time.Millisecond), Rate: 4000, Send: Send{Payload: new(units.Size(4096)), LateAfter: units.Duration(100 * time.Microsecond), Drain: units.Duration(100 * time.Millisecond)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	t.Logf("scheduled %d sent %d late %d unsent %d recv %d p99 %v", res.Scheduled, res.Sent, res.Late, res.Unsent, res.Recv, time.Duration(res.Latency.ValueAtQuantile(99)))
	if res.Late+res.Unsent == 0 {
		t.Errorf("50,000 messages of 4 KiB in 0.25 s, none late")
	}
}

func TestRateCancelAndNextPhase(t *testing.T) {
	s := &testserver.EchoServer{Delay: 5 * time.Millisecond}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	clienttest.MustConnect(t, c, 10)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, err := client.RunAs[Result](c, ctx, &Params{Duration: units.Duration(time.Hour), Rate: 100, Send: Send{Payload: new(units.Size(100))}}, nil)
	if !errors.Is(err, context.Canceled) || res.Stopped != client.StopCanceled {
		t.Fatalf("err %v, stopped %q; want a canceled phase", err, res.Stopped)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("returned after %v, want soon after the cancel at 300ms", d)
	}
	if res.Sent < 200 || res.Scheduled > 400 || res.Unsent < 0 {
		t.Errorf("canceled result %+v", res)
	}
	// The echoes still due must not be taken for the next phase's: the
	// next phase's echoes are all intact and its own.
	res, err = client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(200 * time.Millisecond), Rate: 50, Send: Send{Payload: new(units.Size(64)), Verify: new(true)}}, nil)
	if err != nil || res.Sent != 100 || res.Recv != 100 || res.Failed != 0 {
		t.Fatalf("rate after the canceled one: %+v, %v (errors %v)", res, err, res.Errors)
	}
}

func TestRateServerCloses(t *testing.T) {
	s := &testserver.EchoServer{DropAfter: 5}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 4)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(5 * time.Second), Rate: 100, Send: Send{Payload: new(units.Size(64))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != client.StopNoConnections || time.Since(start) > 2*time.Second {
		t.Errorf("stopped %q after %v; want %q soon", res.Stopped, time.Since(start), client.StopNoConnections)
	}
	// A server that closes with the client's next message unread sends a
	// reset instead of a FIN: the client then sees that, on read or write.
	lost := res.Errors["eof"] + res.Errors["read: connection reset by peer"] + res.Errors["write: connection reset by peer"]
	if res.Recv != 20 || lost != 4 || len(res.Errors) > 3 {
		t.Errorf("recv %d errors %v; want 20 and 4 x eof (or connection reset)", res.Recv, res.Errors)
	}
}

func TestRateParamErrors(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 2)
	for _, tt := range []struct {
		p    Params
		want string
	}{
		{Params{Rate: 1, Send: Send{Payload: new(units.Size(16))}}, "duration: must be > 0"},
		{Params{Duration: units.Duration(time.Second), Send: Send{Payload: new(units.Size(16))}}, "rate must be > 0"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Send: Send{Payload: new(units.Size(15))}}, "payload: must be >= 16 (the latency marker"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Send: Send{Payload: new(units.Size(64<<20 + 1))}}, "payload: must be <= 64MiB"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Ramp: units.Duration(2 * time.Second), Send: Send{Payload: new(units.Size(16))}}, "ramp must be in [0, duration 1s]"},
		{Params{Duration: units.Duration(time.Second), Rate: 1, Connections: 3, Send: Send{Payload: new(units.Size(16))}}, "connections 3 exceeds the 2 open connections"},
	} {
		_, err := client.RunAs[Result](c, t.Context(), &tt.p, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err %v, want %q", tt.p, err, tt.want)
		}
	}
}

// TestRateLatencyFromSchedule: messages held back by MaxInflight leave
// late, and their latency counts from their scheduled time, not from when
// they were finally written: it grows with the backlog although every echo
// takes about 50 ms from its write.
func TestRateLatencyFromSchedule(t *testing.T) {
	s := &testserver.EchoServer{Delay: 50 * time.Millisecond}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 2)
	// 100/s per connection, one in flight: one message per ~50 ms leaves.
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 100, Send: Send{Payload: new(units.Size(64)), MaxInflight: 1, Drain: units.Duration(time.Second)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRateSums(t, res)
	min := time.Duration(res.Latency.Min())
	max := time.Duration(res.Latency.Max())
	t.Logf("scheduled %d sent %d late %d unsent %d; latency min %v max %v", res.Scheduled, res.Sent, res.Late, res.Unsent, min, max)
	if res.Scheduled != 100 || res.Sent < 12 || res.Sent > 24 || res.Recv != res.Sent || res.Unsent != res.Scheduled-res.Sent {
		t.Errorf("scheduled %d sent %d recv %d unsent %d; want 100, about 20 sent and echoed, the rest unsent", res.Scheduled, res.Sent, res.Recv, res.Unsent)
	}
	if res.Late < res.Sent-4 {
		t.Errorf("late %d of %d sent: all but the first few leave late", res.Late, res.Sent)
	}
	if min < 50*time.Millisecond || min > 150*time.Millisecond {
		t.Errorf("min latency %v, want about 50 ms (the first message, on time)", min)
	}
	if max < 300*time.Millisecond {
		t.Errorf("max latency %v: the last messages waited ~400 ms after their schedule, latency must show it", max)
	}
}

// TestRateSkippedEchoes: a server that drops every fifth echo. A
// connection's echoes come in order, so the echo after a dropped one
// shows the gap: the dropped ones are lost, the rest intact — not every
// later echo a "marker mismatch".
func TestRateSkippedEchoes(t *testing.T) {
	testenv.Slow(t, "2 s: a second of rate with skipped echoes")
	srv := testserver.Start(t, testserver.Options{Copies: func(k int64) int {
		if k%5 == 0 {
			return 0
		}
		return 1
	}})
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.Addr()}, Loops: 1})
	clienttest.MustConnect(t, c, 10)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Duration: units.Duration(500 * time.Millisecond), Rate: 100, Send: Send{Payload: new(units.Size(64)), Verify: new(true), Drain: units.Duration(time.Second)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent < 100 || res.Failed != 0 || len(res.Errors) != 0 {
		t.Fatalf("sent %d, failed %d %v: want no echo taken for corrupt", res.Sent, res.Failed, res.Errors)
	}
	if res.Lost() != res.Sent/5 || res.Recv != res.Sent-res.Sent/5 {
		t.Errorf("sent %d, received %d, lost %d: want every fifth lost (%d)", res.Sent, res.Recv, res.Lost(), res.Sent/5)
	}
}
