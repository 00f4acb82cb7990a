package client

import (
	"math/rand/v2"
	"time"

	"github.com/wsplan/wsplan/internal/proto"
)

// The accessors below are the part of a loop, a connection and a client
// that kinds read but do not own. Each one inlines (they are on the
// per-message path of some kinds), so they cost what a field read costs.

// Client returns the client l belongs to.
func (l *Loop) Client() *Client { return l.cl }

// Run returns the phase running on l; nil = none.
func (l *Loop) Run() LoopRun { return l.ph }

// SetRun makes r the phase running on l (a kind's start does it, on the
// loop's goroutine); Finished clears it.
func (l *Loop) SetRun(r LoopRun) { l.ph = r }

// Open returns l's open WebSocket connections; a kind may read it and
// slice it, never append to it.
func (l *Loop) Open() []*Conn { return l.open }

// Epoch is the wall time of l's clock zero (Now counts from it).
func (l *Loop) Epoch() time.Time { return l.epoch }

// Rand is l's random source (masking keys, jitter); loop goroutine only.
func (l *Loop) Rand() *rand.ChaCha8 { return l.rng }

// Wakes is how many times l's epoll wait has returned so far.
func (l *Loop) Wakes() int64 { return l.wakes }

// WireIn is how many data bytes l has read as the frames carried them
// (compressed or not).
func (l *Loop) WireIn() int64 { return l.wireIn }

// PayloadIn is how many data payload bytes l has received (inflated).
func (l *Loop) PayloadIn() int64 { return l.payloadIn }

// State is c's life-cycle state; StateOpen = a WebSocket ready for
// messages.
func (c *Conn) State() uint8 { return c.state }

// FD is c's socket.
func (c *Conn) FD() int32 { return c.fd }

// Gen is c's loop-unique number, carried in its epoll event data.
func (c *Conn) Gen() uint32 { return c.gen }

// Loops returns the client's event loops.
func (c *Client) Loops() []*Loop { return c.loops }

// Proto is the protocol spoken over the messages; nil = raw messages.
func (c *Client) Proto() proto.Protocol { return c.proto }

// Targets are the client's resolved targets, in Options.Targets order.
func (c *Client) Targets() []target { return c.targets }
