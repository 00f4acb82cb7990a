package wstls

// The measurements behind the package's choice (doc.go and
// /work/notes/h6-tls-figures.md): one goroutine locked to its thread runs
// an edge-triggered epoll loop over N non-blocking sockets, as
// internal/client's loops do, with one 1 KiB echo in flight per
// connection, against crypto/tls echo servers in this process. Client CPU
// is the loop thread's CPU clock (the servers run on other threads).
//
//	go test ./internal/wstls -run '^$' -bench . -benchtime 200000x
//
// Candidates: plain TCP (the baseline), this package's record layer
// ("wstls"), crypto/tls driven through an in-memory net.Conn ("cryptotls",
// the same Session with the fast path off), lesismal/llib's non-blocking
// crypto/tls fork as nbio uses it ("llib"), and kernel TLS ("ktls", when
// the kernel has the tls ULP).

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// echoConns is how many connections the echo benchmark keeps busy.
const echoConns = 100

// BenchmarkEcho measures client CPU per 1 KiB echo round trip.
func BenchmarkEcho(b *testing.B) {
	for _, c := range candidates() {
		b.Run(c.name, func(b *testing.B) { benchEcho(b, c, echoConns) })
	}
	b.Run("ktls", func(b *testing.B) { b.Skip(kernelTLS()) })
}

// BenchmarkEcho2k is BenchmarkEcho over 2,000 connections (the issue's
// plan size): session state no longer fits in the CPU caches.
func BenchmarkEcho2k(b *testing.B) {
	for _, c := range candidates() {
		b.Run(c.name, func(b *testing.B) { benchEcho(b, c, 2000) })
	}
}

func benchEcho(b *testing.B, cand candidate, n int) {
	srv := benchServer(b, cand)
	type lconn struct {
		fd  int
		bc  benchConn
		got int
	}
	conns := make([]*lconn, n)
	for i := range conns {
		bc, nc := cand.dial(b, srv)
		conns[i] = &lconn{fd: rawFD(b, nc), bc: bc}
	}
	defer func() {
		for _, c := range conns {
			unix.Close(c.fd)
		}
	}()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(epfd)
	byFD := map[int]*lconn{}
	for _, c := range conns {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(c.fd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			b.Fatal(err)
		}
		byFD[c.fd] = c
	}
	fdTab := make([]*lconn, 0)
	for fd, c := range byFD {
		for len(fdTab) <= fd {
			fdTab = append(fdTab, nil)
		}
		fdTab[fd] = c
	}
	msg := payload(1024)
	wbuf := make([]byte, 0, 4096)
	rbuf := make([]byte, 256<<10)
	pbuf := make([]byte, 64<<10)
	events := make([]unix.EpollEvent, 1024)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	send := func(c *lconn) {
		out := c.bc.seal(wbuf[:0], msg)
		if w, e := rawWrite(c.fd, out); e != 0 || w != len(out) {
			panic(fmt.Sprintf("short write %d of %d: %v", w, len(out), e))
		}
	}
	total := b.N
	sent, done := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU()
	for _, c := range conns {
		if sent < total {
			send(c)
			sent++
		}
	}
	waits := 0
	for done < total {
		waits++
		k, err := unix.EpollWait(epfd, events, 5000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || k == 0 {
			b.Fatalf("epoll_wait: %d events, %v", k, err)
		}
		for i := 0; i < k; i++ {
			c := fdTab[events[i].Fd]
			for {
				r, e := rawRead(c.fd, rbuf)
				if e == syscall.EAGAIN {
					break
				}
				if e != 0 || r == 0 {
					b.Fatalf("read: %d %v", r, e)
				}
				c.bc.feed(rbuf[:r])
				for {
					m := c.bc.read(pbuf)
					if m == 0 {
						break
					}
					c.got += m
				}
				if r < len(rbuf) {
					break
				}
			}
			for c.got >= len(msg) {
				c.got -= len(msg)
				done++
				if sent < total {
					send(c)
					sent++
				}
			}
		}
	}
	cpu := threadCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/echo")
	// Client CPU per echo falls as epoll_wait returns more events at a
	// time, which depends on how fast the server answers: a slower (TLS)
	// server makes the client wait more often per echo.
	b.ReportMetric(float64(b.N)/float64(waits), "echoes/wait")
}

// kernelTLS says why the kernel TLS candidate cannot run here: the ULP
// must be registered (tcp_available_ulp lists it once the tls module is
// loaded). setsockopt(TCP_ULP, "tls") would ask the kernel to load the
// module, which a test must not do; without it the call fails with ENOENT
// (measured by hand: see doc.go).
func kernelTLS() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_ulp")
	if err != nil {
		return "kernel TLS: " + err.Error()
	}
	if !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " tls ") {
		return fmt.Sprintf("kernel TLS unavailable: tcp_available_ulp is %q (no tls module)", strings.TrimSpace(string(b)))
	}
	return "kernel TLS is available but this benchmark does not drive it"
}

// record returns the ciphertext a candidate receives for k echoes of msg,
// one piece per echo, captured without handing it to the candidate.
func record(tb testing.TB, bc benchConn, c net.Conn, msg []byte, k int, tlsRecords bool) [][]byte {
	var recs [][]byte
	buf := make([]byte, 64<<10)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < k; i++ {
		out := bc.seal(nil, msg)
		if _, err := c.Write(out); err != nil {
			tb.Fatal(err)
		}
		var got []byte
		for {
			n, err := c.Read(buf)
			if err != nil {
				tb.Fatal(err)
			}
			got = append(got, buf[:n]...)
			if !tlsRecords && len(got) >= len(msg) {
				break
			}
			if tlsRecords && wholeRecords(got) >= len(msg) {
				break
			}
		}
		recs = append(recs, got)
	}
	return recs
}

// wholeRecords returns the record body bytes in b if b ends at a record
// boundary, else 0.
func wholeRecords(b []byte) int {
	total := 0
	for len(b) > 0 {
		if len(b) < recordHeaderLen {
			return 0
		}
		n := recordHeaderLen + (int(b[3])<<8 | int(b[4]))
		if n > len(b) {
			return 0
		}
		total += n - recordHeaderLen
		b = b[n:]
	}
	return total
}

// protocolCost measures a candidate's client-side protocol work per echo
// in steady state, without the socket: seal one message, hand in one
// echo's ciphertext (recorded beforehand from the live connection), read
// it all. It returns allocations and bytes allocated per echo and the
// thread CPU per echo (cache-warm: one connection).
func protocolCost(tb testing.TB, cand candidate, runs int) (allocs, bytes, cpuNs float64) {
	srv := benchServer(tb, cand)
	bc, c := cand.dial(tb, srv)
	defer c.Close()
	msg := payload(1024)
	// Warm up (TLS 1.3 tickets, buffers), then record.
	for _, r := range record(tb, bc, c, msg, 3, cand.version != 0) {
		bc.feed(r)
		for bc.read(make([]byte, 64<<10)) > 0 {
		}
	}
	recs := record(tb, bc, c, msg, 3*runs+1, cand.version != 0)
	wbuf := make([]byte, 0, 4096)
	pbuf := make([]byte, 64<<10)
	i := 0
	bad := 0
	one := func() {
		bc.seal(wbuf[:0], msg)
		bc.feed(recs[i])
		got := 0
		for {
			m := bc.read(pbuf)
			if m == 0 {
				break
			}
			got += m
		}
		if got != len(msg) {
			bad++
		}
		i++
	}
	allocs = testing.AllocsPerRun(runs, one) // runs+1 echoes
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range runs {
		one()
	}
	runtime.ReadMemStats(&m1)
	runtime.LockOSThread()
	cpu0 := threadCPU()
	for range runs {
		one()
	}
	cpu := threadCPU() - cpu0
	runtime.UnlockOSThread()
	if bad > 0 {
		tb.Fatalf("%s: %d echoes read short", cand.name, bad)
	}
	return allocs, float64(m1.TotalAlloc-m0.TotalAlloc) / float64(runs), float64(cpu.Nanoseconds()) / float64(runs)
}

// TestSteadyStateAllocs proves the fast path allocates nothing per echo.
func TestSteadyStateAllocs(t *testing.T) {
	for _, cand := range candidates() {
		if !strings.HasPrefix(cand.name, "wstls") {
			continue
		}
		t.Run(cand.name, func(t *testing.T) {
			if a, _, _ := protocolCost(t, cand, 200); a != 0 {
				t.Fatalf("%v allocations per echo, want 0", a)
			}
		})
	}
}

// BenchmarkProtocol reports every candidate's client-side protocol cost
// per echo apart from the socket (see protocolCost; run with -benchtime
// 1x): the part of the loop's CPU that TLS adds, without the epoll
// batching noise of BenchmarkEcho.
func BenchmarkProtocol(b *testing.B) {
	for _, cand := range candidates() {
		b.Run(cand.name, func(b *testing.B) {
			allocs, bytes, cpu := protocolCost(b, cand, 2000)
			b.ReportMetric(allocs, "allocs/echo")
			b.ReportMetric(bytes, "B/echo")
			b.ReportMetric(cpu, "cpu-ns/echo")
		})
	}
}

// BenchmarkIdleMemory reports the heap a candidate keeps per idle
// connection after an echo (run with -benchtime 1x): the server side is
// closed first, so that only client state is counted.
func BenchmarkIdleMemory(b *testing.B) {
	const n = 2000
	for _, cand := range candidates() {
		b.Run(cand.name, func(b *testing.B) {
			srv := benchServer(b, cand)
			msg := payload(1024)
			held := make([]benchConn, 0, n)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			for i := 0; i < n; i++ {
				bc, c := cand.dial(b, srv)
				for _, r := range record(b, bc, c, msg, 1, cand.version != 0) {
					bc.feed(r)
					for bc.read(make([]byte, 2048)) > 0 {
					}
				}
				c.Close()
				held = append(held, bc)
			}
			srv.dropConns()
			time.Sleep(100 * time.Millisecond) // server goroutines exit
			runtime.GC()
			runtime.ReadMemStats(&ms)
			withConns := ms.HeapAlloc
			runtime.KeepAlive(held)
			held = nil //nolint:ineffassign // drop the sessions before the next GC
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(int64(withConns)-int64(ms.HeapAlloc))/n, "B/conn")
			b.ReportMetric(float64(int64(withConns)-int64(before))/n, "B/conn-all")
			_ = held
		})
	}
}

// BenchmarkHandshake measures client CPU per TLS handshake (TCP connect
// included), full and resumed, on the calling thread: the handshake
// coroutine runs there too.
func BenchmarkHandshake(b *testing.B) {
	type hsCase struct {
		name    string
		version uint16
		resume  bool
		x25519  bool // offer X25519 only, not Go's default hybrid X25519MLKEM768 first
	}
	cases := []hsCase{
		{"1.3", tls.VersionTLS13, false, false},
		{"1.3-resumed", tls.VersionTLS13, true, false},
		{"1.3-x25519", tls.VersionTLS13, false, true},
		{"1.2", tls.VersionTLS12, false, false},
		{"1.2-resumed", tls.VersionTLS12, true, false},
	}
	for _, tc := range cases {
		v, resume := tc.version, tc.resume
		{
			b.Run(tc.name, func(b *testing.B) {
				srv := newTestServer(b, false, func(cfg *tls.Config) { cfg.MaxVersion = v })
				cfg := clientConfig(b, srv, resume)
				if tc.x25519 {
					cfg.CurvePreferences = []tls.CurveID{tls.X25519}
				}
				msg := []byte("x")
				// Prime the session cache.
				s, c := dialSession(b, srv, cfg, false)
				if err := echo(s, c, msg, 4096); err != nil {
					b.Fatal(err)
				}
				c.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var pool Pool // a loop's, as internal/client has it
				defer pool.Close()
				b.ResetTimer()
				cpu0, proc0 := threadCPU(), processCPU()
				var hs time.Duration
				for i := 0; i < b.N; i++ {
					c, err := net.Dial("tcp", srv.addr())
					if err != nil {
						b.Fatal(err)
					}
					s := pool.NewClient(cfg)
					if err := handshake(s, c); err != nil {
						b.Fatal(err)
					}
					if s.State().DidResume != resume {
						b.Fatalf("resumed %v, want %v", s.State().DidResume, resume)
					}
					hs += s.HandshakeTime()
					if resume && v == tls.VersionTLS13 {
						// Take the new ticket, as a real connection would.
						if err := echo(s, c, msg, 4096); err != nil {
							b.Fatal(err)
						}
					}
					c.Close()
				}
				cpu, proc := threadCPU()-cpu0, processCPU()-proc0
				b.StopTimer()
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/hs")
				b.ReportMetric(float64(proc.Nanoseconds())/float64(b.N), "proc-cpu-ns/hs")
				b.ReportMetric(float64(b.N)/cpu.Seconds(), "hs/cpu-s")
				b.ReportMetric(float64(hs.Nanoseconds())/float64(b.N), "wall-ns/hs")
				srv.dropConns()
			})
		}
	}
}

// BenchmarkRecordLayer measures the fast record layer alone: seal 1 KiB,
// hand the record back in, open it (a session whose read keys are its
// write keys), per cipher suite.
func BenchmarkRecordLayer(b *testing.B) {
	for _, tc := range []struct {
		name    string
		version uint16
		suite   uint16
	}{
		{"1.3-aes128gcm", tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256},
		{"1.3-chacha20", tls.VersionTLS13, tls.TLS_CHACHA20_POLY1305_SHA256},
		{"1.2-aes128gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		{"1.2-chacha20", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := loopSession(b, tc.version, tc.suite)
			msg := payload(1024)
			wbuf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				ct, err := s.Seal(wbuf[:0], msg)
				if err != nil {
					b.Fatal(err)
				}
				s.Feed(ct)
				if p, err := s.Next(); err != nil || len(p) != len(msg) {
					b.Fatalf("%d bytes, %v", len(p), err)
				}
			}
		})
	}
}

// loopSession returns an established fast-path session that reads what
// it writes.
func loopSession(tb testing.TB, version, id uint16) *Session {
	st, ok := suiteFor(version, id)
	if !ok {
		tb.Fatalf("suite %#x", id)
	}
	s := &Session{mode: modeFast, version: version, st: st}
	key := make([]byte, st.keyLen)
	for _, h := range []*halfConn{&s.rd, &s.wr} {
		if err := h.setKey(st, key); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}
