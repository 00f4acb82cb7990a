package servers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/mempool"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/wsplan/wsplan/frameworks"
)

const (
	// nbioMemPoolExtra is added to the read buffer size to size nbio's
	// message buffer pool, as the published servers did (payload+1024).
	nbioMemPoolExtra = 1024
	// nbioMemPoolFreeSize is the largest buffer the pool keeps (1 GiB, as
	// published): larger ones are allocated and left to the GC.
	nbioMemPoolFreeSize = 1 << 30
	// nbioShutdownTimeout bounds Close: nbhttp closes every connection and
	// waits for the count to reach zero, checking every 200 ms.
	nbioShutdownTimeout = 5 * time.Second
)

func init() {
	frameworks.Implement(frameworks.Nbio, frameworks.Impl{Start: startNbio, Broadcast: startNbioBroadcast})
}

// startNbio serves nbio's websocket on an nbhttp.Engine in the io_mode
// given, or on net/http for io_mode=std. Settings as in the published
// benchmark: ReleaseWebsocketPayload (message buffers go back to the pool
// after OnMessage), upgrader KeepaliveTime 0 (no read deadline),
// BlockingModAsyncWrite false (blocking connections write in the caller),
// and a message buffer pool of read_buffer+1024-byte buffers.
//
// read_buffer sizes that pool. nbio's socket read buffers (64 KiB per poller
// read in nonblocking mode, 4 KiB per blocking connection) keep the
// library's defaults, as published, unless read_buffer is set explicitly:
// then they take that size too. nbio answers pings with pongs and echoes a
// close frame; compression negotiates permessage-deflate.
//
// nbio v1.6.8 never calls OnMessage for a text or binary message without
// payload bytes (websocket.Conn.Parse hands a message on only once it has
// buffered some), so empty messages are not echoed; nothing outside nbio
// sees them.
func startNbio(cfg frameworks.Config) (frameworks.Server, error) {
	return startNbioWith(cfg, func(up *websocket.Upgrader) {
		up.OnMessage(func(c *websocket.Conn, mt websocket.MessageType, data []byte) {
			// A failed write closes the connection inside nbio; nothing to add.
			_ = c.WriteMessage(mt, data)
		})
	}, nil)
}

// startNbioWith runs startNbio's server: nbio's upgrader (nbioUpgrader)
// on an nbhttp engine, or on net/http for io_mode=std. handlers sets the
// upgrader's callbacks, and opened (when not nil) is called with each
// upgraded connection and its request before nbio reads from it.
func startNbioWith(cfg frameworks.Config, handlers func(*websocket.Upgrader), opened func(*websocket.Conn, *http.Request)) (frameworks.Server, error) {
	// nbio logs to stdout by default; a server's stdout is not its log.
	nbioLogOnce.Do(func() { logging.Output = LogOutput })
	pool := mempool.New(cfg.ReadBuffer()+nbioMemPoolExtra, nbioMemPoolFreeSize)
	up := nbioUpgrader(cfg)
	handlers(up)
	if cfg.String("io_mode") == frameworks.NbioStd {
		return startNbioStd(cfg, up, pool, opened)
	}
	return startNbioEngine(cfg, up, pool, opened)
}

// nbioUpgrader is the upgrader of every nbio server: KeepaliveTime 0 (no
// read deadline), BlockingModAsyncWrite false (blocking connections write
// in the caller), origins not checked, compression as the option says,
// and blocking reads of read_buffer bytes when it is set explicitly.
func nbioUpgrader(cfg frameworks.Config) *websocket.Upgrader {
	up := websocket.NewUpgrader()
	up.KeepaliveTime = 0
	up.BlockingModAsyncWrite = false
	up.CheckOrigin = func(*http.Request) bool { return true }
	up.EnableCompression(cfg.Bool("compression"))
	if n := cfg.Int("read_buffer"); n > 0 {
		up.BlockingModReadBufferSize = n
	}
	return up
}

// startNbioStd serves up on net/http (io_mode=std): each connection is
// read in its HTTP handler's goroutine.
func startNbioStd(cfg frameworks.Config, up *websocket.Upgrader, pool mempool.Allocator, opened func(*websocket.Conn, *http.Request)) (frameworks.Server, error) {
	// The upgrader takes its buffer pool and payload release setting
	// from an engine; this one is never started, it only carries them.
	// A synchronous ServerExecutor and SupportServerOnly keep NewEngine
	// from starting task-pool goroutines that only Stop would end;
	// blocking connections call OnMessage synchronously either way.
	up.Engine = nbhttp.NewEngine(nbhttp.Config{
		ReleaseWebsocketPayload: true,
		BodyAllocator:           pool,
		ServerExecutor:          func(f func()) { f() },
		SupportServerOnly:       true,
	})
	bufSize := up.BlockingModReadBufferSize
	return startHTTP(cfg, func(s *httpServer, w http.ResponseWriter, r *http.Request) {
		// Upgrade without nbio starting its own read goroutine: this
		// handler goroutine reads instead, so Close can wait for it.
		c, err := up.UpgradeWithoutHandlingReadForConnFromSTDServer(w, r, nil)
		if err != nil {
			return // Upgrade has written the HTTP error response
		}
		nc := c.UnderlayerConn()
		if !s.conns.add(nc) {
			return
		}
		defer s.conns.done(nc)
		if opened != nil {
			opened(c, r)
		}
		c.HandleRead(bufSize)
	})
}

// startNbioEngine serves up on an nbhttp.Engine in the blocking, mixed or
// nonblocking io_mode, on listeners opened here.
func startNbioEngine(cfg frameworks.Config, up *websocket.Upgrader, pool mempool.Allocator, opened func(*websocket.Conn, *http.Request)) (frameworks.Server, error) {
	mode := cfg.String("io_mode")
	explicitBuf := cfg.Int("read_buffer") // 0 = library defaults
	// Open every listener before the engine starts: when one of nbio's own
	// Listen calls fails, nbhttp.Engine.Start closes the listeners it
	// opened and then waits forever in Stop for their accept goroutines,
	// which spin on the closed listener (nbio v1.6.8). Listen below only
	// hands these out.
	lns, err := listenAll(cfg.Addrs, cfg.Bool("nodelay"))
	if err != nil {
		return nil, err
	}
	byAddr := make(map[string]net.Listener, len(lns))
	for i, ln := range lns {
		byAddr[cfg.Addrs[i]] = ln
	}
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, func(w http.ResponseWriter, r *http.Request) {
		// The engine owns the connection from here on: the poller (or its
		// blocking read goroutine) parses frames and calls OnMessage.
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has written the HTTP error response
		}
		if opened != nil {
			opened(c, r)
		}
	})
	e := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		// NewEngine writes the bound addresses back into Addrs: copy.
		Addrs: append([]string(nil), cfg.Addrs...),
		// Start calls Listen once per address, from its own goroutine.
		Listen: func(_, addr string) (net.Listener, error) {
			ln, ok := byAddr[addr]
			if !ok {
				return nil, fmt.Errorf("nbio asked to listen on %s, not one of %v", addr, cfg.Addrs)
			}
			delete(byAddr, addr)
			return ln, nil
		},
		IOMod:                   nbioIOMods[mode],
		MaxBlockingOnline:       cfg.Int("max_blocking_online"), // >= 1: declared Min
		ReleaseWebsocketPayload: true,
		BodyAllocator:           pool,
		ReadBufferSize:          explicitBuf, // 0 = nbio's default
		BlockingReadBufferSize:  explicitBuf, // 0 = nbio's default
		Handler:                 mux,
	})
	up.Engine = e
	if err := e.Start(); err != nil {
		// Only the engine's pollers can have failed: no listener was
		// handed out yet.
		closeListeners(lns)
		return nil, fmt.Errorf("nbio %s engine: %w", mode, err)
	}
	return &nbioServer{e: e}, nil
}

// nbioIOMods maps the engine's io_mode values to nbhttp's IOMod.
var nbioIOMods = map[string]int{
	frameworks.NbioBlocking:    nbhttp.IOModBlocking,
	frameworks.NbioMixed:       nbhttp.IOModMixed,
	frameworks.NbioNonBlocking: nbhttp.IOModNonBlocking,
}

// nbioLogOnce guards the one write to nbio's global log output.
var nbioLogOnce sync.Once

// nbioServer is a started nbhttp.Engine.
type nbioServer struct {
	e         *nbhttp.Engine
	closeOnce sync.Once
	closeErr  error
}

// Close stops the listeners, closes every connection (blocking and
// non-blocking), waits for the count to reach zero and stops the pollers.
// A second Close returns the first one's result (nbio panics on a second
// Shutdown).
func (s *nbioServer) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), nbioShutdownTimeout)
		defer cancel()
		if err := s.e.Shutdown(ctx); err != nil {
			s.closeErr = fmt.Errorf("nbio shutdown: %w", err)
		}
	})
	return s.closeErr
}

// nbioMember is what a broadcast connection keeps in its nbio session.
type nbioMember struct {
	room    string
	include bool
}

// startNbioBroadcast serves BroadcastPath with the same engine and
// io_mode as startNbio: OnMessage writes the message to every member of
// the sender's room with WriteMessage, in turn (nbio has no pre-encoded
// message; in the engine's io modes WriteMessage appends to the
// connection's buffered writer and never blocks the publisher).
func startNbioBroadcast(cfg frameworks.Config) (frameworks.Server, error) {
	var rooms hub[*websocket.Conn]
	return startNbioWith(cfg, func(up *websocket.Upgrader) {
		up.OnMessage(func(c *websocket.Conn, mt websocket.MessageType, data []byte) {
			m, ok := c.Session().(*nbioMember)
			if !ok {
				return
			}
			for _, to := range rooms.members(nil, m.room, c, m.include) {
				// A failed member is closed by nbio and leaves in OnClose.
				_ = to.WriteMessage(mt, data)
			}
		})
		up.OnClose(func(c *websocket.Conn, _ error) {
			if m, ok := c.Session().(*nbioMember); ok {
				rooms.leave(m.room, c)
			}
		})
	}, func(c *websocket.Conn, r *http.Request) {
		room, include := roomOf(r)
		c.SetSession(&nbioMember{room: room, include: include})
		rooms.join(room, c)
	})
}
