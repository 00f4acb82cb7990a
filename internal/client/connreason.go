package client

import (
	"encoding/json"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ConnectReason is why a connection was given up (its last attempt
// failed), as one of a fixed set: the live metrics' reason label, and
// nothing finer. The phase's results keep the full Reason texts (Errors).
type ConnectReason uint8

// Connect failure reasons.
const (
	ConnectRefused     ConnectReason = iota // nothing listens: ECONNREFUSED (a restart's gap)
	ConnectTimeout                          // no handshake or greeting within the attempt's timeout; ETIMEDOUT
	ConnectReset                            // the server reset the connection: ECONNRESET, EPIPE
	ConnectUnreachable                      // no route: EHOSTUNREACH, ENETUNREACH
	ConnectClosed                           // the server closed the connection during the handshake (no answer)
	ConnectHTTP4xx                          // the upgrade answered with a 4xx status
	ConnectHTTP5xx                          // the upgrade answered with a 5xx status
	ConnectHandshake                        // another bad upgrade response: a status other than 101, 4xx or 5xx, a header missing or wrong, an option not offered
	ConnectTLS                              // the TLS handshake failed (certificate, alert, version)
	ConnectProtocol                         // the protocol's greeting failed (MQTT CONNACK, STOMP ERROR, a refused namespace …)
	ConnectLocal                            // the client's own resources: sockets, file descriptors, source ports (EADDRNOTAVAIL)
	ConnectOther                            // none of these
	// NumConnectReasons is the number of reasons.
	NumConnectReasons
)

// connectReasonNames are the reasons' label values.
var connectReasonNames = [NumConnectReasons]string{
	"refused", "timeout", "reset", "unreachable", "closed", "http_4xx", "http_5xx", "handshake", "tls", "protocol", "local", "other",
}

// String is the reason's label value ("refused", "timeout", …).
func (r ConnectReason) String() string {
	if r < NumConnectReasons {
		return connectReasonNames[r]
	}
	return connectReasonNames[ConnectOther]
}

// errnoReasons classes the errno texts a connection attempt's system
// calls fail with ("connect: connection refused").
var errnoReasons = map[string]ConnectReason{
	unix.ECONNREFUSED.Error():  ConnectRefused,
	unix.ETIMEDOUT.Error():     ConnectTimeout,
	unix.ECONNRESET.Error():    ConnectReset,
	unix.EPIPE.Error():         ConnectReset,
	unix.ECONNABORTED.Error():  ConnectReset,
	unix.EHOSTUNREACH.Error():  ConnectUnreachable,
	unix.ENETUNREACH.Error():   ConnectUnreachable,
	unix.EADDRNOTAVAIL.Error(): ConnectLocal,
	unix.EADDRINUSE.Error():    ConnectLocal,
	unix.EMFILE.Error():        ConnectLocal,
	unix.ENFILE.Error():        ConnectLocal,
	unix.ENOBUFS.Error():       ConnectLocal,
	unix.ENOMEM.Error():        ConnectLocal,
}

// localCalls are the system calls whose failure is the client's own.
var localCalls = map[string]bool{"socket": true, "bind": true, "setsockopt": true, "getsockopt": true, "epoll_ctl": true}

// connectReasonOf classes reason, the failure of an attempt that was in
// state (stConnecting … stGreeting). It allocates nothing.
func connectReasonOf(reason Reason, state uint8) ConnectReason {
	s := string(reason)
	// A system call's failure is "call: errno text"; a call's name has no
	// space, so a server's words ("server close 1013: connection
	// refused") never pass for an errno.
	if call, text, ok := strings.Cut(s, ": "); ok && strings.IndexByte(call, ' ') < 0 {
		if k, ok := errnoReasons[text]; ok {
			return k
		}
		if localCalls[call] {
			return ConnectLocal
		}
	}
	switch {
	case reason == ReasonTimeout:
		return ConnectTimeout
	case reason == ReasonHandshakeEOF || reason == ReasonEOF:
		return ConnectClosed
	case strings.HasPrefix(s, "tls: "):
		return ConnectTLS
	case state == stGreeting:
		return ConnectProtocol
	}
	if code, ok := strings.CutPrefix(s, badStatus); ok {
		switch n, _ := strconv.Atoi(code); {
		case n >= 400 && n < 500:
			return ConnectHTTP4xx
		case n >= 500 && n < 600:
			return ConnectHTTP5xx
		}
		return ConnectHandshake
	}
	if state == stReceiving {
		return ConnectHandshake
	}
	return ConnectOther
}

// ConnectFailures counts connections given up by reason. JSON (the shard
// protocol's progress lines) is an object of the reasons counted:
// {"refused": 3}.
type ConnectFailures [NumConnectReasons]int64

// Total is the connections given up, whatever the reason.
func (f ConnectFailures) Total() int64 {
	var n int64
	for _, v := range f {
		n += v
	}
	return n
}

// add adds o's counts.
func (f *ConnectFailures) add(o ConnectFailures) {
	for i, v := range o {
		f[i] += v
	}
}

// MarshalJSON implements json.Marshaler.
func (f ConnectFailures) MarshalJSON() ([]byte, error) {
	m := map[string]int64{}
	for i, v := range f {
		if v != 0 {
			m[ConnectReason(i).String()] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON implements json.Unmarshaler; a reason it does not know
// (a newer shard's) counts as ConnectOther.
func (f *ConnectFailures) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*f = ConnectFailures{}
	for name, v := range m {
		k := ConnectOther
		for i, n := range connectReasonNames {
			if n == name {
				k = ConnectReason(i)
			}
		}
		f[k] += v
	}
	return nil
}

// ReasonTooLong: a template (a send, its topic, a header or query of the
// upgrade) would render more than script.MaxRenderBytes, its captured
// values and data columns included. The dialer fails an attempt with it
// and a script's step, so it is in a file of no kind.
const ReasonTooLong Reason = "template output over 4 MiB"
