package sysctl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeSys is a /sys tree with the given cpuidle driver (none when "") and,
// when poll is not "", haltpoll's poll window.
func fakeSys(t *testing.T, driver, poll string) FS {
	t.Helper()
	files := map[string]string{}
	if driver != "" {
		files[CPUIdleDriverKey] = driver + "\n"
	}
	if poll != "" {
		files[HaltPollKey] = poll + "\n"
	}
	return SysFS(newRoot(t, files, nil).Root)
}

func TestIdlePoll(t *testing.T) {
	got, err := ReadIdle(fakeSys(t, "haltpoll", "0")).Keys(200 * time.Microsecond)
	if err != nil || !reflect.DeepEqual(got, map[string]string{HaltPollKey: "200000"}) {
		t.Errorf("haltpoll: %v, %v; want guest_halt_poll_ns = 200000", got, err)
	}
	for _, tc := range []struct{ driver, want string }{
		{"intel_idle", `this host's is "intel_idle"`},
		{"none", `this host's is "none"`},
		{"", "reading it: /sys/devices/system/cpu/cpuidle/current_driver: no such sysctl"},
	} {
		got, err := ReadIdle(fakeSys(t, tc.driver, "")).Keys(time.Millisecond)
		if got != nil || !errors.Is(err, ErrNoHaltPoll) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("driver %q: %v, %v; want ErrNoHaltPoll saying %q", tc.driver, got, err, tc.want)
		}
	}
}

func TestIdleString(t *testing.T) {
	for _, tc := range []struct {
		driver, poll, want string
		halts              bool
	}{
		{"haltpoll", "200000", "haltpoll, polls up to 200µs before halting", false},
		{"haltpoll", "0", "haltpoll, halts at once (no polling)", true},
		{"haltpoll", "", "haltpoll", false},
		{"intel_idle", "", "intel_idle", false},
		{"", "", "", false},
	} {
		idle := ReadIdle(fakeSys(t, tc.driver, tc.poll))
		if got := idle.String(); got != tc.want {
			t.Errorf("driver %q poll %q: %q, want %q", tc.driver, tc.poll, got, tc.want)
		}
		if got := idle.HaltsAtOnce(); got != tc.halts {
			t.Errorf("driver %q poll %q: HaltsAtOnce %v, want %v", tc.driver, tc.poll, got, tc.halts)
		}
	}
}

// The keys under /sys go through Apply, Restore and the saved file like
// sysctls, and their errors name the path under /sys.
func TestRestoreSys(t *testing.T) {
	sys := fakeSys(t, "haltpoll", "0")
	want, err := ReadIdle(sys).Keys(100 * time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := Apply(sys, want)
	if err != nil || !reflect.DeepEqual(applied.Sysctl, map[string]string{HaltPollKey: "0"}) {
		t.Fatalf("Apply: %+v, %v", applied, err)
	}
	if v, _ := sys.Get(HaltPollKey); v != "100000" {
		t.Errorf("during the run: %q", v)
	}
	path := t.TempDir() + "/saved.json"
	if err := (Saved{Sysctl: map[string]string{}, Sys: applied.Sysctl}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadSaved(path)
	if err != nil || saved.Sys[HaltPollKey] != "0" {
		t.Fatalf("saved: %+v, %v", saved, err)
	}
	if err := RestoreSys(sys, saved); err != nil {
		t.Fatal(err)
	}
	if v, _ := sys.Get(HaltPollKey); v != "0" {
		t.Errorf("after RestoreSys: %q", v)
	}

	err = RestoreSys(fakeSys(t, "haltpoll", ""), saved)
	if want := "restoring /sys: /sys/module/haltpoll/parameters/guest_halt_poll_ns=\"0\": no such sysctl"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("restoring a missing key: %v, want %q…", err, want)
	}
}
