package proto

// Conn is a protocol's state on one connection, kept by the loop beside
// the connection and given to every call about it.
type Conn struct {
	// Buf holds a message in pieces; a protocol may append to it while it
	// decodes (an answer's id): reset after the run took the messages.
	Buf []byte
	// Part holds bytes a protocol keeps across messages (MQTT's partial
	// packet, STOMP's partial frame): Part[PartAt:] (Input, Keep).
	Part []byte
	// PartAt is where the kept bytes begin (those before are consumed;
	// compacted by Input).
	PartAt   int
	LastSent int64 // loop clock of the last write (the loop sets it)
	LastRecv int64 // of the last message (the loop sets it)
	Every    int64 // keepalive interval, ns; 0 = none
	Silence  int64 // how long the server may stay silent, ns, where the protocol says; 0 = no limit
	IDs      uint64
	// Quota is how many QoS > 0 publishes the server lets the connection
	// have unanswered at once (MQTT 5's Receive Maximum, from CONNACK); 0
	// = it set none. A script waits rather than send past it.
	Quota uint16
	State uint8 // the protocol's own
}

// Input returns the bytes a protocol decodes: msg, or the partial packet
// or frame kept from earlier messages with msg after it (fromPart).
func (s *Conn) Input(msg []byte) (data []byte, fromPart bool) {
	if len(s.Part) == 0 {
		return msg, false
	}
	if s.PartAt > 0 { // the messages decoded from Part's start were taken
		s.Part = s.Part[:copy(s.Part, s.Part[s.PartAt:])]
		s.PartAt = 0
	}
	s.Part = append(s.Part, msg...)
	return s.Part, true
}

// Keep keeps data[off:] (from Input), a packet's or frame's first part,
// for the next message. The messages decoded from data stay valid until
// the run took them.
func (s *Conn) Keep(data []byte, off int, fromPart bool) {
	switch {
	case off == len(data):
		s.PartAt = 0
		if cap(s.Part) > 64<<10 {
			s.Part = nil // do not keep a large packet's buffer per connection
		} else {
			s.Part = s.Part[:0]
		}
	case fromPart:
		s.PartAt = off // compacted by the next Input
	default:
		s.Part = append(s.Part[:0], data[off:]...)
	}
}

// NextID is the connection's next 16-bit id (1…65535, then again): MQTT
// packet ids.
func (s *Conn) NextID() uint16 {
	s.IDs = s.IDs%65535 + 1
	return uint16(s.IDs)
}
