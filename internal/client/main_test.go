package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// client is closed, and Close must stop its loops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
