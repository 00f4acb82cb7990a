package client

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// client is closed, and Close must stop its loops. Goroutines running
// before any test are not the tests': nbio's package init starts task
// pools that nothing stops (the interop servers import it).
func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(serveChild(addr, os.Getenv(childTLSEnv)))
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
