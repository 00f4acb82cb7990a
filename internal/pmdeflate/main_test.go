package pmdeflate

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. The
// goroutines running before any test are ignored: nbio's websocket package
// builds a DefaultEngine at init, whose two task pools never stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
