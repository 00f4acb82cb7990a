package frameworks

// BroadcastPath is the path a server started for a broadcast plan serves
// (the plan's servers[].path): a connection upgraded on
// /broadcast?room=N joins room N, and every message received on it is
// sent to every connection in the room, the sender included unless the
// query says include_sender=false. Users' own servers measured with the
// broadcast phase follow the same convention.
const BroadcastPath = "/broadcast"

// Broadcast declares that an adapter serves BroadcastPath, and how; its
// server is the Impl.Broadcast attached with Implement.
type Broadcast struct {
	// Doc says how the library fans a message out (`wsplan frameworks`).
	Doc string
}

// NoBroadcastWhy is why a serves no broadcast endpoint: its declared
// limit, or that its handler is not written yet.
func (a Adapter) NoBroadcastWhy() string {
	if a.Limits.NoBroadcast != "" {
		return a.Limits.NoBroadcast
	}
	return "its broadcast handler is not written yet"
}
