package servers

import "io"

// LogOutput receives the log lines of libraries that log on their own
// (nbio, greatws) from the servers started afterwards; default io.Discard.
// `wsplan serve` sets it to its stderr, which `wsplan run` sends to the
// server's log file. This package never writes to the terminal itself.
var LogOutput io.Writer = io.Discard
