package scenarios

import (
	"os"
	"testing"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestMain: the conformance phase's cases mostly wait out their
// timeouts (a wrong pong, a close never answered), so eight run at once.
func TestMain(m *testing.M) { os.Exit(testenv.MainWaiting(m, 8)) }
