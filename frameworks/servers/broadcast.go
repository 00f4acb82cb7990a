package servers

import (
	"net/http"
	"strconv"
	"sync"
)

// roomOf reads the room and include_sender of a broadcast upgrade request.
func roomOf(r *http.Request) (room string, include bool) {
	return roomQuery(r.URL.Query().Get)
}

// roomQuery reads the room and include_sender of a broadcast upgrade
// request through get, which returns a query parameter's value ("" when
// absent): adapters whose HTTP stack is not net/http (fasthttp, hertz)
// pass their own query reader. include_sender is true unless it parses as
// false (strconv.ParseBool: false, 0, f, ...).
func roomQuery(get func(key string) string) (room string, include bool) {
	include = true
	if v := get("include_sender"); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			include = b
		}
	}
	return get("room"), include
}

// hub is the rooms of a broadcast server: connections of type C by room.
// Publishers copy a room's members under the read lock into their own
// reused slice and write outside it, so a slow member blocks only the
// publisher writing to it, never the hub.
type hub[C comparable] struct {
	mu    sync.RWMutex
	rooms map[string][]C
}

// join adds c to room.
func (h *hub[C]) join(room string, c C) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rooms == nil {
		h.rooms = map[string][]C{}
	}
	h.rooms[room] = append(h.rooms[room], c)
}

// leave removes c from room.
func (h *hub[C]) leave(room string, c C) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.rooms[room]
	for i, x := range m {
		if x == c {
			m[i] = m[len(m)-1]
			var zero C
			m[len(m)-1] = zero
			m = m[:len(m)-1]
			break
		}
	}
	if len(m) == 0 {
		delete(h.rooms, room)
	} else {
		h.rooms[room] = m
	}
}

// members appends room's members except skip (when !include) to dst.
func (h *hub[C]) members(dst []C, room string, skip C, include bool) []C {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, c := range h.rooms[room] {
		if include || c != skip {
			dst = append(dst, c)
		}
	}
	return dst
}

// preparedConn is a connection of the gorilla/websocket API (gorilla and
// its forks fasthttp/websocket and hertz-contrib/websocket), with P that
// fork's PreparedMessage.
type preparedConn[P any] interface {
	comparable
	ReadMessage() (int, []byte, error)
	WritePreparedMessage(P) error
}

// preparedMember is a room member of a gorilla-API server: the library
// allows one writer at a time.
type preparedMember[C any] struct {
	mu sync.Mutex
	c  C
	// gone is set once the member's loop has returned: its library may
	// then release c (fasthttp puts the hijacked connection back in its
	// pool, and a write on it dereferences nil), so publishers that
	// listed the member before it left must not write to it.
	gone bool
}

// preparedLoop is the broadcast loop of the gorilla-API forks: it joins c to
// room, and sends every message c reads, prepared once (framed once per
// compression setting), to each member in turn, without a write deadline
// (a member that does not read blocks its publisher). It returns when c
// fails; a member whose write failed ends in its own loop, and a member
// whose loop has returned is written no more.
func preparedLoop[C preparedConn[P], P any](rooms *hub[*preparedMember[C]], c C, room string, include bool, prepare func(int, []byte) (P, error)) {
	me := &preparedMember[C]{c: c}
	rooms.join(room, me)
	defer func() {
		rooms.leave(room, me)
		me.mu.Lock()
		me.gone = true
		me.mu.Unlock()
	}()
	var to []*preparedMember[C]
	for {
		mt, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		pm, err := prepare(mt, data)
		if err != nil {
			return
		}
		to = rooms.members(to[:0], room, me, include)
		for _, m := range to {
			m.mu.Lock()
			if !m.gone {
				_ = m.c.WritePreparedMessage(pm) // reported by the member's own loop
			}
			m.mu.Unlock()
		}
	}
}
