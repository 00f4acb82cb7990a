package frameworks

import "io"

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
