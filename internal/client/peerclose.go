package client

import (
	"strings"
	"sync"
	"time"
)

// A server that dies takes its connections with it: the kernel resets or
// ends every one at once. The client counts, for any kind and any
// protocol, the open connections the server closed or reset — an end of
// stream, a reset, a close frame the client had not asked for — with
// when, so that the engine can tell a server's death from the client's
// side when it cannot watch the server's process (a url: server without
// pid:). The count costs nothing per message: a loop records a
// connection's loss, once, where it drops it (loop.lost).

// PeerTick is the resolution of PeerCloses.Recent, and PeerWindow the span
// it keeps: the closes of the last PeerWindow before the latest one.
const (
	PeerTick   = 10 * time.Millisecond
	PeerWindow = 2 * time.Second
)

// peerTicks is PeerWindow in ticks; peerRing the ring holding them.
const (
	peerTicks = int64(PeerWindow / PeerTick)
	peerRing  = 256
)

// PeerCloses are the open connections the server closed or reset since
// the client started (a close the client asked for, in a close or churn
// phase, is not one). JSON on the shard protocol's run replies; a
// shard's counts merge into the group's with Merge.
type PeerCloses struct {
	N     int64 `json:"n"`               // connections closed or reset by the server
	First int64 `json:"first,omitempty"` // wall clock of the first (Unix ns; 0 = none)
	Last  int64 `json:"last,omitempty"`  // wall clock of the latest (Unix ns)
	// Recent counts those of the PeerWindow ending at Last, per PeerTick
	// of the wall clock (Unix ns / PeerTick): older ticks are dropped.
	Recent map[int64]int64 `json:"recent,omitempty"`
}

// Merge adds o into p (another loop's or shard's): counts summed, the
// window moved to the later of the two latest closes.
func (p *PeerCloses) Merge(o PeerCloses) {
	if o.N == 0 {
		return
	}
	p.N += o.N
	p.First = minSet(p.First, o.First)
	p.Last = max(p.Last, o.Last)
	for k, v := range o.Recent {
		if p.Recent == nil {
			p.Recent = map[int64]int64{}
		}
		p.Recent[k] += v
	}
	last := p.Last / int64(PeerTick)
	for k := range p.Recent {
		if !inWindow(k, last) {
			delete(p.Recent, k)
		}
	}
}

// Burst is how many connections the server closed or reset in the
// PeerWindow ending at the latest, and the time from the first of them to
// the latest (to the PeerTick).
func (p PeerCloses) Burst() (n int64, span time.Duration) {
	last := p.Last / int64(PeerTick)
	first := last
	for k, v := range p.Recent {
		if v > 0 && inWindow(k, last) {
			n += v
			first = min(first, k)
		}
	}
	return n, time.Duration(last-first+1) * PeerTick
}

// inWindow reports whether tick k is in the PeerWindow ending at tick
// last (a wall clock's: last >= 0).
func inWindow(k, last int64) bool { return k > last-peerTicks && k <= last }

// peerLog is one loop's PeerCloses as it records them: a ring of the last
// PeerWindow's ticks, written by the loop and read by Client.PeerCloses
// from any goroutine.
type peerLog struct {
	mu          sync.Mutex
	n           int64
	first, last int64
	ring        [peerRing]struct{ tick, n int64 }
}

// add records a close at wall clock at (Unix ns). It allocates nothing.
func (g *peerLog) add(at int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	g.first = minSet(g.first, at)
	g.last = max(g.last, at)
	k := at / int64(PeerTick)
	s := &g.ring[k%peerRing]
	if s.tick != k {
		s.tick, s.n = k, 0
	}
	s.n++
}

// snapshot is what g recorded so far.
func (g *peerLog) snapshot() PeerCloses {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := PeerCloses{N: g.n, First: g.first, Last: g.last}
	if g.n == 0 {
		return p
	}
	last := g.last / int64(PeerTick)
	for _, s := range g.ring {
		if s.n > 0 && inWindow(s.tick, last) {
			if p.Recent == nil {
				p.Recent = map[int64]int64{}
			}
			p.Recent[s.tick] += s.n
		}
	}
	return p
}

// PeerCloses returns the connections the server closed or reset since
// the client started, over its loops. A phase's are the difference of
// the counts before and after it.
func (c *Client) PeerCloses() PeerCloses {
	var p PeerCloses
	for _, l := range c.loops {
		p.Merge(l.counts.peer.snapshot())
	}
	return p
}

// byPeer reports whether reason, why an open connection was lost, is the
// server's doing: the end of its stream, a reset, a close frame. A
// protocol's own words for a server's close frame (proto.CloseNamer) are
// recorded where the frame is read (onControl). It allocates nothing.
func byPeer(reason Reason) bool {
	if strings.HasPrefix(string(reason), string(ReasonServerClose)) {
		return true
	}
	switch connectReasonOf(reason, StateOpen) {
	case ConnectReset, ConnectClosed:
		return true
	}
	return false
}
