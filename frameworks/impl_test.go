package frameworks

import (
	"errors"
	"strings"
	"testing"
)

// TestStartNotLinked: this package's tests link no implementation, so
// starting a declared adapter fails with an error that says so, for both
// servers, instead of calling a nil func.
func TestStartNotLinked(t *testing.T) {
	if _, linked := Implementation(Gorilla); linked {
		t.Fatal("gorilla's implementation is linked into frameworks' own tests")
	}
	a, ok := LookupAdapter(Gorilla)
	if !ok || a.Broadcast == nil {
		t.Fatalf("gorilla: declared %v, broadcast %v", ok, a.Broadcast)
	}
	for what, start := range map[string]StartFunc{"Start": a.Start, "StartBroadcast": a.StartBroadcast} {
		srv, err := start(Config{Addrs: []string{"127.0.0.1:0"}, Path: "/ws", Payload: 1})
		if srv != nil || err == nil || !strings.Contains(err.Error(), "no server implementation is linked") {
			t.Errorf("%s: %v, %v; want no server and a not-linked error", what, srv, err)
		}
	}
}

// TestImplement: what Implement attaches is what Start and StartBroadcast
// run; a missing broadcast server, on either side, is an error; a
// second Implement and one without Start panic.
func TestImplement(t *testing.T) {
	errEcho, errRooms := errors.New("echo started"), errors.New("rooms started")
	t.Cleanup(func() { // the registry is the process's: -count=2 runs this again
		mu.Lock()
		defer mu.Unlock()
		delete(implementations, "fake_impl_test")
		delete(implementations, "fake_impl_test_echo")
	})
	Implement("fake_impl_test", Impl{
		Start:     func(Config) (Server, error) { return nil, errEcho },
		Broadcast: func(Config) (Server, error) { return nil, errRooms },
	})
	Implement("fake_impl_test_echo", Impl{Start: func(Config) (Server, error) { return nil, errEcho }})
	withRooms := Adapter{Name: "fake_impl_test", Broadcast: &Broadcast{Doc: "rooms"}}
	if _, err := withRooms.Start(Config{}); err != errEcho {
		t.Errorf("Start: %v, want %v", err, errEcho)
	}
	if _, err := withRooms.StartBroadcast(Config{}); err != errRooms {
		t.Errorf("StartBroadcast: %v, want %v", err, errRooms)
	}
	noRooms := Adapter{Name: "fake_impl_test", Limits: Limits{NoBroadcast: "no rooms here"}}
	if _, err := noRooms.StartBroadcast(Config{}); err == nil || !strings.Contains(err.Error(), "serves no /broadcast endpoint: no rooms here") {
		t.Errorf("StartBroadcast without a Broadcast declared: %v", err)
	}
	declaredOnly := Adapter{Name: "fake_impl_test_echo", Broadcast: &Broadcast{Doc: "rooms"}}
	if _, err := declaredOnly.StartBroadcast(Config{}); err == nil || !strings.Contains(err.Error(), "its implementation has none") {
		t.Errorf("StartBroadcast without a broadcast server: %v", err)
	}
	for name, impl := range map[string]Impl{
		"fake_impl_test":         {Start: func(Config) (Server, error) { return nil, nil }}, // a second one
		"fake_impl_test_nostart": {},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Implement(%s) did not panic", name)
				}
			}()
			Implement(name, impl)
		}()
	}
}
