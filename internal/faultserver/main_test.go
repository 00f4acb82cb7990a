package faultserver

import (
	"os"
	"testing"

	"github.com/wsplan/wsplan/internal/testenv"
)

// TestMain: the fault cases mostly wait out a server's silence (answers'
// 150 ms window), so eight run at once.
func TestMain(m *testing.M) { os.Exit(testenv.MainWaiting(m, 8)) }
