// Package client is wsplan's load-generating WebSocket client: an event-driven
// engine (epoll loops on locked OS threads, no goroutine per connection) that
// opens connections, drives closed-loop echoes and open-loop rates, and records
// latencies into HDR histograms. It is designed for 1M connections across
// several processes: per connection it keeps only a small struct while idle.
//
// The handshake carries the Options' headers, subprotocols and origin; a
// connection may speak TLS (internal/wstls: crypto/tls's handshake stepped
// on the loop, an allocation-free record layer after it; secure.go) and
// permessage-deflate (internal/pmdeflate: a deflater and an inflater per
// loop, only the history per connection), with the same allocation-free
// per-message path. A protocol spoken over the messages (Socket.IO, MQTT,
// …) is a package of its own under internal/proto; protocol.go is the one
// adapter between it and the loop.
//
// Phases call it through Client.Run (phase.go) with a kind's Params
// (kind.go and the contract below describe what a phase kind fulfils); shards (separate
// processes) run the same kinds and send their results back as JSON, which
// merge exactly through the kind's Result.Merge (histograms merged, counts
// summed).
//
// # Layers
//
// From the socket up, each layer knows only the one below it:
//
//   - transport: a conn is one TCP socket (fd) in one loop's epoll set,
//     with its TLS session when the target is wss:// (sys.go, dialer.go,
//     secure.go); write and read move bytes, nothing else;
//   - WebSocket: the upgrade (handshake.go), frames in and out (frame.go,
//     wsio.go), permessage-deflate, control frames, the close handshake;
//   - protocol: the greeting and the messages of a protocol over the
//     WebSocket's messages (protocol.go → internal/proto);
//   - runs: what a phase kind does with whole messages (a LoopRun: its
//     hooks get a conn and a message, and send through the loop).
//
// # The contract kinds use
//
// A phase kind is a package of its own (scenarios/K/: ping, close, churn,
// broadcast, hold, echo, rate, search and script: every kind the loops
// run but connect, whose dial every kind's connections come from) that
// imports this one and uses only its exported surface, which is small
// on purpose and is this contract:
//
//   - Registration and the phase: Register(KindOf[Params, Result](name))
//     from init (a Kind: Name, and Forget for what a kind keeps for a
//     client beyond one phase); KindName(p) reads the name back. Params
//     write Validate (CheckParams: the decl tags' bounds plus the kind's
//     own rules), Split and Start; Result embeds Ended (its stop reason)
//     and writes Merge (MergeStop merges stop reasons). Start gets a
//     PhaseEnv (Client, ID, Open per loop and OpenTotal, Need: the one
//     error for asking more connections than are open, Progress: Begin)
//     and returns a PhasePlan: Starts, one func per loop (StartParts runs
//     each loop's part of Split), a Deadline, and Done to complete the
//     merged result (EnsureHists for the histograms no part recorded
//     into); Run then settles the stop reason, the run's own (canceled,
//     deadline, closed) over the one the parts left. Parts makes Split's
//     copies of the params; Distribute, SplitInt64 and Share split counts
//     by weight; RunAs runs a phase and returns its typed result.
//   - The run on a loop: a LoopRun, whose hooks the loop calls through
//     that one interface (one call per event, as before kinds moved out):
//     OnData, OnPong, OnMessage, Lost, Tick, WakeAt/Pump, Resume, Frame,
//     Finish. BaseRun (NewBaseRun) gives no-op hooks for all but Lost and
//     Finish, which every run writes. Optional: Adopt (a
//     reconnected connection in place of a dropped one), Dialed/GaveUp
//     (a Dialer's owner), DueAt (a paced run's next due message).
//   - The loop and its connections, read through accessors that inline
//     (surface.go; go build -gcflags=-m lists them): Loop.Run, SetRun,
//     Open, Now, Epoch, Rand, Wakes, Client; Conn.State, FD, Gen, and
//     Conn.Slot, the one field a run owns. Loop.SetTick arms the tick,
//     Finished hands the loop's share back.
//   - Sending and dropping: SendControl, WriteOrQueue, SendProto,
//     AppendClientHeader, MakePayload, MaskCopy, PutMarker/ReadMarker;
//     Drop (with a Reason) and CloseFD, CloseConn. A run that frames
//     messages itself (script) writes them in Loop.WriteBuf, compresses
//     with Loop.Deflater when Conn.Sec says the connection deflates, and
//     queues behind GetExt(c).Out while c waits for EPOLLOUT (FlagWantOut).
//   - Protocols: Client.Proto is the protocol spoken (nil = raw
//     messages); a run encodes its verbs' messages with it, reads a
//     connection's protocol state (ProtoOf: the server's quota) and gets
//     what the protocol decoded through OnMessage.
//   - Dialing connections of a run's own: Dialer, DialJob, DialStart,
//     Dial, UpgradeRequest, ConnectResult.
//   - Pacing: Pacer and Cursor (the timetable), PacedWake (timer slack,
//     send lateness; Begin/End switch a phase's reads to batched ones,
//     StampReads for a connection adopted meanwhile), the paced kinds'
//     shared defaults (DefaultSlack, DefaultPacedBatch, DefaultLateAfter,
//     PumpBytes; scenarios/rate ties them to its tags), the read modes
//     (ReadsBatched, ReadsPrompt, CheckReads, MergeReads), Timeline and
//     PacedSecond (a phase's per-second summaries), Timer and TimerHeap.
//   - Measuring: Hist (NewHist, Record), Reasons and the Reason
//     constants, StopReason, Progress (ProgressBatch), LiveCounts and
//     LiveHist for the live metrics.
//   - Tests: NewDrivenLoop, Loop.Feed, StopDriven and TakeShare drive a
//     loop without its goroutine, so a kind's package proves its
//     per-message path allocates nothing (internal/clienttest wraps them:
//     DrivenLoop, ZeroAllocs, EchoPeer);
//     SpeakDriven makes its connection one of a protocol, greeted, so
//     that a protocol's exchanges are proved the same way.
//
// Nothing in this package's loop, conn, frame, dial or timer code names a
// kind: the one kind still here (connect, whose dial every kind's
// connections come from) keeps to its own files (internal/layering's TestKindFilesApart), and the moved ones to
// their packages (TestKindPackagesApart).
//
// # Design note: a multiplexed transport (RFC 8441), not built
//
// WebSocket over HTTP/2 (RFC 8441, extended CONNECT) carries many
// WebSockets as streams of one TCP connection. It must fit without a
// change to any kind, and it can, because kinds see a conn only as "a
// WebSocket that takes messages and hands them back", never as a socket:
//
//   - The conn stays the unit kinds hold (one per WebSocket), but its fd
//     becomes the id of a stream; a new shared object, the session (one per
//     TCP connection, owned by one loop like today's conns), holds the
//     socket, the TLS session, HPACK state and the streams' flow-control
//     windows. epoll reports the session's socket; the session demultiplexes
//     DATA frames to its streams' conns and calls the same onData path.
//   - Writes go through the one place that writes today (loop.write /
//     writeOrQueue): for a stream conn it wraps the WebSocket frame in an
//     HTTP/2 DATA frame on the session's socket and queues it when the
//     stream's or the connection's window is closed — the same "queued
//     output, resume when writable" contract kinds already honour (resume).
//   - The upgrade becomes an extended CONNECT on a new stream
//     (:protocol = websocket) instead of a GET with Upgrade; the dialer
//     opens a session on demand and streams on it up to the server's
//     SETTINGS_MAX_CONCURRENT_STREAMS; connect latency splits into the
//     session's TCP + TLS (paid once) and the stream's CONNECT round trip.
//   - A dropped session drops every stream conn on it with the same
//     Reason, through the same lost hook; the reconnector redials streams,
//     opening a session first when none is left.
//   - Options gain a transport choice (http1, h2) and a streams-per-session
//     bound; the plan a `transport:` key beside `tls:`. No kind, protocol
//     or result type changes; per-connection memory then splits into the
//     session's (shared) and the stream's (a conn plus its window counters).
package client
