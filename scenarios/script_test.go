package scenarios

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/client"
)

// TestWatchClientMem: the watch reports how far the client's RSS rose
// above its reading at the start, at its highest (not at the end), and
// its goroutine ends with it.
func TestWatchClientMem(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var rss atomic.Int64
	rss.Store(100 << 20)
	w := watchClientMem(func() Mem { return Mem{Client: rss.Load()} })
	rss.Store(140 << 20) // users connected
	time.Sleep(3 * memWatchEvery)
	rss.Store(110 << 20) // and gone
	if got := w.stop(); got != 40<<20 {
		t.Fatalf("grew %d, want %d", got, 40<<20)
	}
	if got := watchClientMem(nil).stop(); got != 0 {
		t.Fatalf("no reader: %d", got)
	}
}

// TestScriptValuesPeak: users_peak comes from the result.
func TestScriptValuesPeak(t *testing.T) {
	v, _, _ := scriptValues(&client.ScriptResult{Users: 10, Peak: 7, Connect: client.NewHist()}, nil)
	if v.Int(scriptPeak) != 7 || v.Int(scriptUsers) != 10 {
		t.Fatalf("users_peak %v users %v", v[scriptPeak], v[scriptUsers])
	}
}
