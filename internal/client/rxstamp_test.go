package client

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/testenv"
)

// tcpPair returns a loop with one registered TCP loopback connection (the
// loop's end, non-blocking; newTCPPairs) and the peer's fd.
func tcpPair(tb testing.TB) (*Loop, *Conn, int) {
	tb.Helper()
	p := newTCPPairs(tb, 1)
	l, err := newLoop(&Client{}, 0)
	if err != nil {
		p.close()
		tb.Fatal(err)
	}
	c := &Conn{fd: p.cli[0]}
	if err := l.register(c, EvIn); err != nil {
		tb.Fatal(err)
	}
	l.addOpen(c)
	tb.Cleanup(func() {
		l.shutdown() // closes c
		unix.Close(int(p.peer[0]))
	})
	return l, c, int(p.peer[0])
}

// TestStampedRead: on a stamped connection a read late by 30 ms still
// says when the data arrived (the kernel's receive timestamp); unstamped,
// it says when it was read; the stamp of several segments read together
// is the last one's; and a stamped read allocates nothing.
func TestStampedRead(t *testing.T) {
	l, c, peer := tcpPair(t)
	buf := make([]byte, 4096)
	send := func(s string) int64 {
		t.Helper()
		at := l.Now()
		if _, err := unix.Write(peer, []byte(s)); err != nil {
			t.Fatal(err)
		}
		return at
	}
	const late = 30 * time.Millisecond
	testenv.RetryTiming(t, func() string {
		if !l.batchReads([]*Conn{c}) || c.Flags&fStamp == 0 || !l.batching {
			t.Fatal("batchReads refused on a TCP socket")
		}
		sent := send("hello")
		time.Sleep(late)
		read := l.Now()
		n, at, e := l.read(c, buf)
		if e != 0 || string(buf[:n]) != "hello" {
			t.Fatalf("read %q, errno %v", buf[:n], e)
		}
		if d := time.Duration(at - sent); d < 0 || d > late/3 {
			return fmt.Sprintf("stamped read: arrival %v after the write, want about 0 (the read came %v later)", d, time.Duration(read-sent))
		}
		// Two segments read together: the stamp is the second's.
		send("a")
		time.Sleep(late)
		second := send("b")
		time.Sleep(late)
		n, at, _ = l.read(c, buf)
		if string(buf[:n]) != "ab" {
			t.Fatalf("read %q, want ab", buf[:n])
		}
		if d := time.Duration(at - second); d < 0 || d > late/3 {
			return fmt.Sprintf("two segments: stamp %v after the second write, want about 0", d)
		}
		l.promptReads()
		if c.Flags&fStamp != 0 || l.batching {
			t.Fatal("promptReads left the stamp on")
		}
		sent = send("x")
		time.Sleep(late)
		n, at, _ = l.read(c, buf)
		if n != 1 {
			t.Fatalf("read %d bytes, want 1", n)
		}
		if d := time.Duration(at - sent); d < late {
			return fmt.Sprintf("unstamped read: %v after the write, want the read's own time (>= %v)", d, late)
		}
		return ""
	})
	l.batchReads([]*Conn{c})
	one := []byte{1}
	if got := testing.AllocsPerRun(200, func() {
		_, _ = unix.Write(peer, one)
		if n, _, e := l.read(c, buf); n != 1 || e != 0 {
			t.Fatalf("read %d, errno %v", n, e)
		}
	}); got != 0 {
		t.Errorf("a stamped read allocates %v times, want 0", got)
	}
}

// TestStampParse: the timestamp is found among control messages, and a
// malformed control buffer yields none rather than garbage.
func TestStampParse(t *testing.T) {
	var s rxStamps
	put := func(level, typ int32, data []byte) int {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&s.oob[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(s.oob[unix.CmsgLen(0):], data)
		return unix.CmsgSpace(len(data))
	}
	ts := unix.NsecToTimespec(1_700_000_000_123_456_789)
	tsb := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	s.msg.Controllen = uint64(put(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, tsb))
	if got, ok := s.stamp(); !ok || got != 1_700_000_000_123_456_789 {
		t.Errorf("stamp() = %d, %v; want the timespec", got, ok)
	}
	s.msg.Controllen = uint64(put(unix.SOL_SOCKET, unix.SCM_RIGHTS, tsb))
	if _, ok := s.stamp(); ok {
		t.Error("an SCM_RIGHTS message read as a timestamp")
	}
	put(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, tsb)
	(*unix.Cmsghdr)(unsafe.Pointer(&s.oob[0])).Len = 1000
	if _, ok := s.stamp(); ok {
		t.Error("a control message longer than the buffer read as a timestamp")
	}
	s.msg.Controllen = 0
	if _, ok := s.stamp(); ok {
		t.Error("no control data read as a timestamp")
	}
}
