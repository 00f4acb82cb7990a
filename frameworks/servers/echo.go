package servers

import "io"

// readerConn is the gorilla/websocket connection API, which
// fasthttp/websocket and hertz-contrib/websocket keep in their forks.
type readerConn interface {
	NextReader() (messageType int, r io.Reader, err error)
	WriteMessage(messageType int, data []byte) error
}

// echoLoop is the published gorilla-style echo: NextReader into a buffer
// of bufSize bytes reused for every message (grown when one does not fit),
// then WriteMessage with the same type. It returns when the connection
// fails or closes.
func echoLoop(c readerConn, bufSize int) {
	buf := make([]byte, bufSize)
	for {
		mt, rd, err := c.NextReader()
		if err != nil {
			return
		}
		var n int
		if buf, n, err = readMessage(rd, buf); err != nil {
			return
		}
		if err := c.WriteMessage(mt, buf[:n]); err != nil {
			return
		}
	}
}

// readMessage reads r to EOF into buf, growing buf when the message does not
// fit, and returns the buffer (reallocated if it grew; keep it for the next
// message) and the message length.
func readMessage(r io.Reader, buf []byte) ([]byte, int, error) {
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, max(len(buf), 512))...)
		}
		m, err := r.Read(buf[n:])
		n += m
		switch {
		case err == io.EOF:
			return buf, n, nil
		case err != nil:
			return buf, n, err
		}
	}
}
