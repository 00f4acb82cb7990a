package client

import (
	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/proto"
)

// A driven loop is a loop that no goroutine runs: its caller drives it,
// feeding bytes as a socket would and pumping its run on a clock of its
// own. The kinds' packages prove their per-message paths allocate
// nothing (and benchmark them) on one, as this package's alloc tests do.

// NewDrivenLoop returns a driven loop with one open connection c over a
// Unix socket pair with large buffers (a message never waits for
// EPOLLOUT), and the pair's other end, peer, which the caller reads what
// the loop wrote from and closes. End it with StopDriven.
func NewDrivenLoop() (l *Loop, c *Conn, peer int, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, -1, err
	}
	for _, fd := range fds {
		for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 4<<20); err != nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
				return nil, nil, -1, err
			}
		}
	}
	l, err = newLoop(&Client{}, 0)
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, -1, err
	}
	c = &Conn{fd: int32(fds[0])}
	if err := l.register(c, unix.EPOLLIN); err != nil {
		l.shutdown()
		unix.Close(fds[1])
		return nil, nil, -1, err
	}
	l.addOpen(c)
	return l, c, fds[1], nil
}

// Feed hands b to c as if the loop had read it from c's socket at now.
func (l *Loop) Feed(c *Conn, b []byte, now int64) { l.feed(c, b, now) }

// StopDriven ends a driven loop: the run in progress finishes (its share
// is discarded), then the loop, whose connections are closed.
func (l *Loop) StopDriven() {
	if r := l.ph; r != nil {
		r.Finish(l, true, l.Now())
		<-l.results
	}
	l.shutdown()
}

// TakeShare finishes nothing: it receives the share the run in progress
// sent when it finished (Finished), for a driven loop's caller that ended
// the run itself.
func (l *Loop) TakeShare() Result { return (<-l.results).part }

// SpeakDriven makes a driven loop's client speak o's protocol and c a
// connection of it already greeted, in the protocol's state st (its own
// number; 0 = the state a greeting starts from): a kind's package drives
// a protocol's exchanges on it without a server's greeting.
func (l *Loop) SpeakDriven(c *Conn, o ProtocolOptions, st uint8) error {
	p, err := makeProtocol(o)
	if err != nil {
		return err
	}
	l.cl.proto = p
	if c.Sec == nil {
		c.Sec = &connSec{}
	}
	c.Sec.proto = &proto.Conn{State: st}
	return nil
}
