package broadcast

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/proto"
	"github.com/wsplan/wsplan/internal/units"
)

// A broadcast phase runs in three steps, each one Client.Run of
// Params (the scenario runs them in turn, so every loop and shard
// has opened its subscribers before any publisher starts):
//
//   - StepOpen opens Rooms × RoomSize connections of its own, each to
//     the server's path with "?room=N" (the convention every preset
//     serves; "&include_sender=false" when IncludeSender is off);
//   - StepRun publishes on the timetable and measures every delivery;
//   - StepClose closes the connections the open step opened.
//
// Subscriber s (of Rooms × RoomSize, numbered over every loop and shard)
// is member s % RoomSize of room s / RoomSize; members 0 … Publishers-1
// publish, the last round(SlowFraction × RoomSize) are slow.
const (
	StepOpen  = "open"
	StepRun   = "run"
	StepClose = "close"
)

// MarkerLen is the marker at the start of every broadcast
// message: bytes 0–7 its number on its publisher, 8–15 its scheduled
// publish time (Unix ns, so that subscribers in other shards read it on
// the same clock), 16–19 its room, 20–23 the publisher's member number in
// the room; all little-endian.
const MarkerLen = 24

// Broadcast bounds.
const (
	// MaxFanoutTracked bounds the messages whose last delivery is tracked
	// (12 bytes each per event loop); beyond it every k-th message of a
	// publisher is tracked (FanoutTable.Stride).
	MaxFanoutTracked = 1 << 20
)

// Params configure one step of a broadcast phase. They are the
// phase's plan keys too (Phase holds them inline), declared
// once in their tags; the scenario sets Step, Split sets First and Count.
type Params struct {
	Step        string `yaml:"-" json:"step"` // StepOpen, StepRun or StepClose
	Rooms       int    `yaml:"rooms" json:"rooms" min:"0" doc:"rooms; default: connections / room_size"`
	RoomSize    int    `yaml:"room_size" json:"room_size" required:"true" min:"1" doc:"connections per room, publishers included"`
	Connections int    `yaml:"connections" json:"-" min:"0" doc:"connections in all (rooms × room_size); give rooms or connections"`
	Publishers  int    `yaml:"publishers" json:"publishers" default:"1" min:"1" doc:"publishers per room (the room's first members)"`
	// Rate is a publisher's, on the rate phase's timetable (Pacer).
	Rate      units.Rate     `yaml:"rate" json:"rate" required:"true" doc:"messages per publisher per second, > 0; fractions allowed"`
	Duration  units.Duration `yaml:"duration" json:"duration" required:"true" min:"1ns" doc:"publishing time"`
	Payload   *units.Size    `yaml:"payload" json:"payload" default:"256" min:"24" max:"64MiB" hint:"the marker: number, scheduled time, room and publisher" doc:"bytes per message, the 24-byte marker included"`
	Drain     units.Duration `yaml:"drain" json:"drain" default:"2s" min:"0s" doc:"wait after duration for deliveries still due"`
	LateAfter units.Duration `yaml:"late_after" json:"late_after" default:"1ms" min:"0s" doc:"a message published later than this after its schedule is late"`
	// Slack is the publishers', as rate's slack key: each message's latency
	// still counts from its own schedule; send_late_* say how late
	// messages left (Result.SendLate).
	Slack *units.Duration `yaml:"slack" json:"slack" default:"200us" min:"0s" doc:"timer slack: sends due within it share one wake-up (at most this late); 0 = a wake-up per message"`
	// Reads is as rate's reads key; slow subscribers are always read
	// promptly (their latency is when they read).
	Reads         string `yaml:"reads" json:"reads,omitempty" default:"batched" doc:"when the client reads what arrives: batched (it sleeps through arrivals until its next send window, latency ends at the kernel's receive timestamp) or prompt (it wakes for each arrival); slow subscribers always read promptly"`
	IncludeSender *bool  `yaml:"include_sender" json:"include" default:"true" doc:"the server sends a message to its publisher too; false adds include_sender=false to the URL"`
	Verify        *bool  `yaml:"verify" json:"verify" default:"true" doc:"compare every delivered payload byte (the marker is always checked)"`
	Slow          *Slow  `yaml:"slow,flow" json:"slow,omitempty" doc:"slow subscribers: some members stop reading now and then"`
	// Concurrency, Timeout and Retries are the open step's handshakes, as
	// ConnectParams' (whose tags' defaults these repeat).
	Concurrency int            `yaml:"concurrency" json:"concurrency" min:"0" doc:"handshakes in progress at once while opening; default min(1000, connections)"`
	Timeout     units.Duration `yaml:"timeout" json:"timeout" default:"5s" min:"1ns" doc:"time allowed for one handshake attempt"`
	Retries     int            `yaml:"retries" json:"retries" default:"3" doc:"extra attempts per connection; negative = none"`
	// First and Count are this part's subscribers: [First, First+Count);
	// Count 0 = every one from First on. Split sets them.
	First int `yaml:"-" json:"first"`
	Count int `yaml:"-" json:"count"`
	// StartAt is when publishing begins on every part of the run step,
	// Unix ns: the scenario sets it RunLead after it sends the step, so
	// that every loop of every shard reads its subscribers before the
	// first message can reach them (a loop outside a phase ignores what
	// arrives). 0 = the phase's start in this client.
	StartAt int64 `yaml:"-" json:"start_at,omitempty"`
}

// Slow configures slow subscribers: the last round(fraction ×
// room_size) members of each room (never a publisher) stop reading for
// read_pause, read for read_pause, and so on while messages are
// published.
type Slow struct {
	Fraction  float64        `yaml:"fraction" json:"fraction" doc:"share of each room's members that are slow, in (0, 1)"`
	ReadPause units.Duration `yaml:"read_pause" json:"read_pause" doc:"how long a slow subscriber stops reading each time, > 0"`
	RcvBuf    units.Size     `yaml:"rcvbuf" json:"rcvbuf" doc:"SO_RCVBUF of the slow subscribers' sockets; small values move their backlog into the server (on loopback keep it >= 128KiB: below two 64 KiB segments TCP stalls); default: the kernel's (autotuned, megabytes)"`
}

// slow is the slow subscribers' settings; the zero value without any.
func (p *Params) slow() Slow {
	if p.Slow == nil {
		return Slow{}
	}
	return *p.Slow
}

// include reports whether a publisher receives its own messages
// (include_sender; Client.Run applied its default).
func (p *Params) include() bool { return p.IncludeSender != nil && *p.IncludeSender }

// Result is what a broadcast step measured. Latency runs from a
// message's scheduled publish time to its complete delivery, on each
// subscriber.
type Result struct {
	// Open step.
	Opened     int64       `json:"opened"`      // connections opened
	OpenFailed int64       `json:"open_failed"` // connections given up after all retries
	Connect    client.Hist `json:"connect"`     // handshake latency, ns
	// Join is the latency of a room's join through a protocol (its send
	// to the protocol's answer: SUBACK, receipt, ack), ns; empty on raw
	// connections, whose room is in their URL.
	Join       client.Hist    `json:"join"`
	OpenErrors client.Reasons `json:"open_errors"`

	// Run step.
	Subscribers int64 `json:"subscribers"` // open at the start of the run
	Slow        int64 `json:"slow"`        // of which slow
	Published   int64 `json:"published"`   // messages written by publishers
	Late        int64 `json:"late"`        // published more than LateAfter after their time
	Unsent      int64 `json:"unsent"`      // due before Duration but never written
	// Slack is the timer slack the run published with (Params.Slack).
	Slack time.Duration `json:"slack"`
	// SendLate is how late each message was published: its write minus
	// its scheduled time, ns; exact over loops and shards. Its Max is how
	// far the client itself fell behind (its loop busy, or not scheduled
	// by the kernel); every delivery of that message carries it.
	SendLate client.Hist `json:"send_late"`
	// Wakeups counts the loop wake-ups (epoll_pwait2 returns) during the
	// run, over every loop: publishing and delivery alike.
	Wakeups int64 `json:"wakeups"`
	// Reads is how deliveries were read: ReadsBatched or ReadsPrompt.
	Reads      string `json:"reads,omitempty"`
	Deliveries int64  `json:"deliveries"` // expected: each published message × its room's receivers
	Delivered  int64  `json:"delivered"`  // distinct messages received intact, over every subscriber
	Duplicated int64  `json:"duplicated"` // a message received again by the same subscriber
	OutOfOrder int64  `json:"out_of_order"`
	Failed     int64  `json:"failed"` // deliveries received but wrong (marker, length, opcode, payload)
	// SlowDeliveries and SlowDelivered are the part of Deliveries and
	// Delivered that slow subscribers were due and got.
	SlowDeliveries int64 `json:"slow_deliveries"`
	SlowDelivered  int64 `json:"slow_delivered"`
	Dropped        int64 `json:"dropped"`      // subscribers whose connection was lost during the run
	SlowDropped    int64 `json:"slow_dropped"` // of which slow
	// StartedLate is the most a loop began the run after StartAt: the
	// deliveries that reached its subscribers before were not counted.
	StartedLate time.Duration  `json:"started_late,omitempty"`
	Used        time.Duration  `json:"used"`
	Drain       time.Duration  `json:"drain"`
	Latency     client.Hist    `json:"latency"`      // ns, deliveries to the other (not slow) subscribers
	SlowLatency client.Hist    `json:"slow_latency"` // ns, deliveries to slow subscribers
	Fanout      FanoutTable    `json:"fanout"`       // last delivery of each message, to the other subscribers
	Errors      client.Reasons `json:"errors"`
	client.Ended
}

// Lost returns the deliveries expected and not received.
func (r Result) Lost() int64 { return r.Deliveries - r.Delivered }

// FanoutTable holds, per tracked message, how many of the subscribers
// that are not slow received it and the latency of the last one. Message
// seq of publisher g (room × Publishers + member) is entry g × PerPub +
// seq / Stride when seq % Stride == 0. It merges entry by entry, so the
// fanout is exact over loops and shards.
type FanoutTable struct {
	Stride int64
	PerPub int64
	Max    []int64 // ns; 0 = no delivery
	Count  []int32
}

type fanoutJSON struct {
	Stride int64  `json:"stride"`
	PerPub int64  `json:"per_pub"`
	Max    []byte `json:"max"`   // little-endian int64s
	Count  []byte `json:"count"` // little-endian int32s
}

// MarshalJSON implements json.Marshaler (binary, base64).
func (t FanoutTable) MarshalJSON() ([]byte, error) {
	j := fanoutJSON{Stride: t.Stride, PerPub: t.PerPub, Max: make([]byte, 8*len(t.Max)), Count: make([]byte, 4*len(t.Count))}
	for i, v := range t.Max {
		binary.LittleEndian.PutUint64(j.Max[8*i:], uint64(v))
	}
	for i, v := range t.Count {
		binary.LittleEndian.PutUint32(j.Count[4*i:], uint32(v))
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *FanoutTable) UnmarshalJSON(b []byte) error {
	var j fanoutJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if len(j.Max)%8 != 0 || len(j.Count)%4 != 0 || len(j.Max)/8 != len(j.Count)/4 {
		return fmt.Errorf("fanout table: %d max bytes and %d count bytes do not match", len(j.Max), len(j.Count))
	}
	t.Stride, t.PerPub = j.Stride, j.PerPub
	t.Max = make([]int64, len(j.Max)/8)
	t.Count = make([]int32, len(j.Count)/4)
	for i := range t.Max {
		t.Max[i] = int64(binary.LittleEndian.Uint64(j.Max[8*i:]))
		t.Count[i] = int32(binary.LittleEndian.Uint32(j.Count[4*i:]))
	}
	return nil
}

// merge adds o entry by entry.
func (t *FanoutTable) merge(o FanoutTable) {
	if len(o.Max) == 0 {
		return
	}
	if len(t.Max) == 0 {
		t.Stride, t.PerPub = o.Stride, o.PerPub
		t.Max = append([]int64(nil), o.Max...)
		t.Count = append([]int32(nil), o.Count...)
		return
	}
	for i := range min(len(t.Max), len(o.Max)) {
		t.Max[i] = max(t.Max[i], o.Max[i])
		t.Count[i] += o.Count[i]
	}
}

// Last returns the fanout latencies (ns) of the tracked messages that
// reached want subscribers (the room's receivers that are not slow), and
// how many tracked messages reached some but fewer (a message that reached
// none is indistinguishable from one never published: Lost counts it).
func (t FanoutTable) Last(want int32) (h client.Hist, incomplete int64) {
	h = client.NewHist()
	for i, c := range t.Count {
		switch {
		case c >= want && want > 0:
			client.Record(h.Histogram, t.Max[i])
		case c > 0:
			incomplete++
		}
	}
	return h, incomplete
}

// Merge implements client.Result.
func (r *Result) Merge(other client.Result) {
	o := other.(*Result)
	r.Opened += o.Opened
	r.OpenFailed += o.OpenFailed
	r.Connect.Add(o.Connect)
	r.Join.Add(o.Join)
	r.OpenErrors.Merge(o.OpenErrors)
	r.Subscribers += o.Subscribers
	r.Slow += o.Slow
	r.Published += o.Published
	r.Late += o.Late
	r.Unsent += o.Unsent
	r.Slack = max(r.Slack, o.Slack)
	r.SendLate.Add(o.SendLate)
	r.Wakeups += o.Wakeups
	r.Reads = client.MergeReads(r.Reads, o.Reads)
	r.Deliveries += o.Deliveries
	r.Delivered += o.Delivered
	r.Duplicated += o.Duplicated
	r.OutOfOrder += o.OutOfOrder
	r.Failed += o.Failed
	r.SlowDeliveries += o.SlowDeliveries
	r.SlowDelivered += o.SlowDelivered
	r.Dropped += o.Dropped
	r.SlowDropped += o.SlowDropped
	r.StartedLate = max(r.StartedLate, o.StartedLate)
	r.Used = max(r.Used, o.Used)
	r.Drain = max(r.Drain, o.Drain)
	r.Latency.Add(o.Latency)
	r.SlowLatency.Add(o.SlowLatency)
	r.Fanout.merge(o.Fanout)
	r.Errors.Merge(o.Errors)
	r.Stopped = client.MergeStop(r.Stopped, o.Stopped)
}

// SlowPerRoom is how many members of each room are slow subscribers.
func (p *Params) SlowPerRoom() int {
	return int(math.Round(p.slow().Fraction * float64(p.RoomSize)))
}

// Receivers is how many subscribers of a room receive each message, and
// how many of them are slow.
func (p *Params) Receivers() (all, slow int) {
	all = p.RoomSize
	if !p.include() {
		all--
	}
	return all, p.SlowPerRoom()
}

// Validate implements client.Params: the declared bounds, and the relations
// between keys.
func (p *Params) Validate() error {
	var errs []error
	switch p.Step {
	case StepOpen, StepRun, StepClose:
	default:
		errs = append(errs, fmt.Errorf("step must be open, run or close, got %q", p.Step))
	}
	if p.Rooms <= 0 {
		errs = append(errs, fmt.Errorf("rooms must be > 0, got %d", p.Rooms))
	}
	if p.Publishers > p.RoomSize {
		errs = append(errs, fmt.Errorf("publishers must be in [1, room size %d], got %d", p.RoomSize, p.Publishers))
	}
	if !p.include() && p.RoomSize < 2 {
		errs = append(errs, fmt.Errorf("without include_sender a room needs at least 2 members, got %d", p.RoomSize))
	}
	if !(p.Rate > 0) || math.IsInf(float64(p.Rate), 0) {
		errs = append(errs, fmt.Errorf("rate must be > 0 messages per second, got %v", p.Rate))
	}
	if err := client.CheckReads(p.Reads); err != nil {
		errs = append(errs, fmt.Errorf("reads %w", err))
	}
	s := p.slow()
	if s.Fraction < 0 || s.Fraction >= 1 {
		errs = append(errs, fmt.Errorf("slow fraction must be in [0, 1), got %v", s.Fraction))
	} else if n := p.SlowPerRoom(); n > 0 && n > p.RoomSize-p.Publishers {
		errs = append(errs, fmt.Errorf("slow subscribers (%d per room) must not include publishers: at most room size - publishers = %d", n, p.RoomSize-p.Publishers))
	}
	if s.RcvBuf < 0 {
		errs = append(errs, fmt.Errorf("slow rcvbuf must be >= 0, got %d", s.RcvBuf))
	}
	if s.ReadPause < 0 || (s.Fraction > 0 && s.ReadPause == 0) {
		errs = append(errs, fmt.Errorf("read pause must be > 0 with slow subscribers, got %v", s.ReadPause))
	}
	if p.Step == StepOpen && p.Concurrency <= 0 {
		errs = append(errs, fmt.Errorf("open: concurrency must be > 0, got %d", p.Concurrency))
	}
	if n := p.Rooms * p.RoomSize; p.First < 0 || p.Count < 0 || p.First+p.Count > n {
		errs = append(errs, fmt.Errorf("first %d + count %d must be within the %d subscribers", p.First, p.Count, n))
	}
	return client.CheckParams(p, errs...)
}

// count returns how many subscribers this part has.
func (p *Params) count() int {
	if p.Count > 0 {
		return p.Count
	}
	return p.Rooms*p.RoomSize - p.First
}

// Split implements client.Params: the subscribers in contiguous, nearly equal
// ranges over the parts, whatever their weights, so that each step splits
// them alike (the run and close steps find the connections the open step
// put on each loop and shard).
func (p *Params) Split(weights []int) []client.Params {
	n := p.count()
	m := min(len(weights), n)
	first := p.First
	return client.Parts(p, len(weights), func(j int, q *Params) bool {
		if j >= m {
			return false
		}
		q.First, q.Count = first, client.Share(n, m, j)
		if p.Concurrency > 0 {
			q.Concurrency = max(1, client.Share(p.Concurrency, m, j))
		}
		first += q.Count
		return true
	})
}

// subscriberSet is what a loop's open step opened: connection k is subscriber
// first+k (nil: it did not open).
type subscriberSet struct {
	first int
	conns []*client.Conn
}

// subscriberSets keeps each client's sets from the open step to the close step
// (entry i for loop i; each loop touches only its own).
var subscriberSets struct {
	sync.Mutex
	m map[*client.Client][]*subscriberSet
}

func setsOf(c *client.Client, create bool) []*subscriberSet {
	subscriberSets.Lock()
	defer subscriberSets.Unlock()
	if create {
		if subscriberSets.m == nil {
			subscriberSets.m = map[*client.Client][]*subscriberSet{}
		}
		subscriberSets.m[c] = make([]*subscriberSet, len(c.Loops()))
	}
	return subscriberSets.m[c]
}

func dropSets(c *client.Client) {
	subscriberSets.Lock()
	defer subscriberSets.Unlock()
	delete(subscriberSets.m, c)
}

// Start implements client.Params.
func (p *Params) Start(ph *client.PhaseEnv) (*client.PhasePlan, error) {
	if _, rooms := ph.Client.Proto().(proto.Rooms); ph.Client.Proto() != nil && !rooms {
		return nil, fmt.Errorf("client: broadcast: the server's protocol carries no rooms")
	}
	sets := setsOf(ph.Client, p.Step == StepOpen)
	if sets == nil {
		return nil, fmt.Errorf("client: broadcast: %s step without an open step before it", p.Step)
	}
	if p.Step == StepClose {
		dropSets(ph.Client)
	}
	plan := &client.PhasePlan{Starts: make([]func(*client.Loop), len(ph.Open))}
	parts := p.Split(ph.Open)
	switch p.Step {
	case StepOpen:
		ph.Progress.Begin(int64(p.count()))
		for i, part := range parts {
			if part == nil {
				continue
			}
			q := part.(*Params)
			set := &subscriberSet{first: q.First, conns: make([]*client.Conn, q.Count)}
			sets[i] = set
			if ph.Client.Proto() != nil {
				plan.Starts[i] = func(l *client.Loop) { broadcastJoin(l, ph.ID, q, set, ph.Progress) }
			} else {
				plan.Starts[i] = func(l *client.Loop) { broadcastOpen(l, ph.ID, q, set, ph.Progress) }
			}
		}
		ph.Client.NextConn += int64(p.count())
	case StepRun:
		all, _ := p.Receivers()
		ph.Progress.Begin(int64(math.Ceil(float64(p.Rate)*p.Duration.D().Seconds())) * int64(p.Rooms*p.Publishers*all))
		payload := client.MakePayload(client.SizeOf(p.Payload), false)
		hdr := client.AppendClientHeader(nil, client.OpBinary, len(payload), 0)
		at := ph.Start // the timetable's origin, the same for every loop and shard
		if p.StartAt != 0 {
			at = time.Unix(0, p.StartAt)
		}
		for i, part := range parts {
			if part == nil || sets[i] == nil {
				continue
			}
			q, set := part.(*Params), sets[i]
			plan.Starts[i] = func(l *client.Loop) { broadcastStart(l, ph.ID, at, q, set, hdr, payload, ph.Progress) }
		}
	case StepClose:
		for i := range parts {
			if set := sets[i]; set != nil {
				plan.Starts[i] = func(l *client.Loop) { broadcastClose(l, ph.ID, set) }
			}
		}
	}
	plan.Done = func(res client.Result, _ time.Duration) {
		r := res.(*Result)
		client.EnsureHists(&r.Connect, &r.Join, &r.Latency, &r.SlowLatency, &r.SendLate)
	}
	return plan, nil
}

// broadcastOpen runs the open step here: a connect run whose connections go to
// their room's path and are kept in set.
func broadcastOpen(l *client.Loop, id int64, p *Params, set *subscriberSet, pr *client.Progress) {
	reqs := map[int64]*client.UpgradeRequest{}
	nt := int64(len(l.Client().Targets()))
	job := &client.DialJob{
		Phase:    id,
		N:        p.Count,
		First:    int64(p.First),
		Stride:   1,
		Conc:     p.Concurrency,
		Timeout:  int64(p.Timeout),
		Retries:  max(p.Retries, 0),
		Progress: pr,
		Req: func(idx int64, t int) *client.UpgradeRequest {
			room := idx / int64(p.RoomSize)
			key := room*nt + int64(t)
			if r, ok := reqs[key]; ok {
				return r
			}
			r := roomRequest(l.Client().Targets()[t].Req, room, p.include())
			reqs[key] = &r
			return &r
		},
		Opened: func(c *client.Conn, idx int64) {
			if k := idx - int64(set.first); k >= 0 && k < int64(len(set.conns)) {
				set.conns[k] = c
			}
		},
		Done: func(l *client.Loop, part *client.ConnectResult, stopped bool) {
			res := &Result{Opened: part.Success, OpenFailed: part.Failed, Connect: part.Latency, OpenErrors: part.Errors, Ended: part.Ended}
			l.Finished(id, res, stopped)
		},
	}
	l.DialStart(job)
}

// roomRequest returns base with "room=N" (and "include_sender=false")
// added to its path's query.
func roomRequest(base client.UpgradeRequest, room int64, include bool) client.UpgradeRequest {
	q := "room=" + strconv.FormatInt(room, 10)
	if !include {
		q += "&include_sender=false"
	}
	return base.With(q, nil)
}

// broadcastClose runs the close step here: every connection of the set still
// open gets a close frame (best effort) and is closed.
func broadcastClose(l *client.Loop, id int64, set *subscriberSet) {
	for _, c := range set.conns {
		if c != nil && c.State() == client.StateOpen {
			l.CloseConn(c, client.CloseNormal)
		}
	}
	l.Finished(id, &Result{}, false)
}
