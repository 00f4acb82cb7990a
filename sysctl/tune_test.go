package sysctl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	f := newRoot(t, map[string]string{
		"net.ipv4.ip_local_port_range": "1024\t65535\n",
		"net.core.somaxconn":           "4096\n",
	}, nil)
	rows := Check(f, map[string]string{
		"net.core.somaxconn":           "8192",
		"net.ipv4.ip_local_port_range": "1024 65535",
		"net.ipv4.tcp_nope":            "1",
	})
	want := []Row{
		{Key: "net.core.somaxconn", Want: "8192", Current: "4096"},
		{Key: "net.ipv4.ip_local_port_range", Want: "1024 65535", Current: "1024\t65535", OK: true},
		{Key: "net.ipv4.tcp_nope", Want: "1"},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		w := want[i]
		if r.Key != w.Key || r.Want != w.Want || r.Current != w.Current || r.OK != w.OK {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
		if (r.Err != nil) != (w.Key == "net.ipv4.tcp_nope") {
			t.Errorf("row %d: Err = %v", i, r.Err)
		}
	}
	if !errors.Is(rows[2].Err, ErrNoSuchKey) {
		t.Errorf("missing key: Err = %v, want ErrNoSuchKey", rows[2].Err)
	}
}

func TestApplyRestore(t *testing.T) {
	f := newRoot(t, map[string]string{
		"net.ipv4.ip_local_port_range": "32768\t60999\n",
		"net.core.somaxconn":           "4096\n",
		"net.ipv4.tcp_tw_reuse":        "1\n", // already right: must not be written
	}, nil)
	want := map[string]string{
		"net.ipv4.ip_local_port_range": "1024 65535",
		"net.core.somaxconn":           "8192",
		"net.ipv4.tcp_tw_reuse":        "1",
	}
	pre := Previous(Check(f, want))
	before := time.Now()
	saved, err := Apply(f, want)
	if err != nil {
		t.Fatal(err)
	}
	wantSaved := map[string]string{"net.ipv4.ip_local_port_range": "32768\t60999", "net.core.somaxconn": "4096"}
	if !reflect.DeepEqual(saved.Sysctl, wantSaved) {
		t.Errorf("saved = %v, want %v", saved.Sysctl, wantSaved)
	}
	if !reflect.DeepEqual(pre.Sysctl, wantSaved) {
		t.Errorf("Previous = %v, want what Apply saves: %v", pre.Sysctl, wantSaved)
	}
	if saved.Time.Before(before) {
		t.Errorf("saved.Time = %v, before Apply started", saved.Time)
	}
	for _, r := range Check(f, want) {
		if !r.OK {
			t.Errorf("after Apply: %+v", r)
		}
	}
	if got := raw(t, f, "net.ipv4.tcp_tw_reuse"); got != "1\n" {
		t.Errorf("an equal key was rewritten: %q", got)
	}

	// Through the file, as `wsplan tune --restore FILE` does after a crash.
	saved.Plan = "plans/1m.yaml"
	path := filepath.Join(t.TempDir(), "wsplan-saved.json")
	if err := saved.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSaved(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Sysctl, saved.Sysctl) || back.Plan != saved.Plan || !back.Time.Equal(saved.Time) {
		t.Errorf("ReadSaved = %+v, want %+v", back, saved)
	}
	if err := Restore(f, back); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"net.ipv4.ip_local_port_range": "32768\t60999\n",
		"net.core.somaxconn":           "4096\n",
		"net.ipv4.tcp_tw_reuse":        "1\n",
	} {
		if got := raw(t, f, k); got != v {
			t.Errorf("after Restore %s = %q, want %q", k, got, v)
		}
	}
}

func TestApplyNothingToDo(t *testing.T) {
	f := newRoot(t, map[string]string{"net.core.somaxconn": "4096\n"}, nil)
	saved, err := Apply(f, map[string]string{"net.core.somaxconn": "4096"})
	if err != nil || len(saved.Sysctl) != 0 || saved.Sysctl == nil {
		t.Fatalf("Apply = %+v, %v; want an empty, non-nil map", saved, err)
	}
	b, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"sysctl":{},"time":"`) || !strings.HasSuffix(string(b), `","plan":""}`) {
		t.Errorf("JSON = %s", b)
	}
}

// A key that cannot be read stops Apply before it writes anything.
func TestApplyUnreadableKeyWritesNothing(t *testing.T) {
	f := newRoot(t, map[string]string{"a.one": "1\n", "c.three": "3\n"}, nil)
	saved, err := Apply(f, map[string]string{"a.one": "10", "b.two": "20", "c.three": "30"})
	if !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("err = %v, want ErrNoSuchKey", err)
	}
	if want := "nothing changed: sysctl b.two: no such sysctl: no such file or directory"; err.Error() != want {
		t.Errorf("err:\n got %s\nwant %s", err, want)
	}
	if len(saved.Sysctl) != 0 {
		t.Errorf("saved = %v, want empty", saved.Sysctl)
	}
	if got := raw(t, f, "a.one"); got != "1\n" {
		t.Errorf("a.one = %q: written although Apply failed first", got)
	}
}

// A write that fails half way: the key written before it is put back, the
// one after it is never touched, and the error names the failing key.
func TestApplyFailsHalfway(t *testing.T) {
	f := newRoot(t, map[string]string{
		"a.one":   "1\n",
		"b.two":   "2\n", // read-only: the write fails here
		"c.three": "3\n",
	}, map[string]os.FileMode{"b.two": 0o444})
	var saved Saved
	var err error
	asNobody(t, func() {
		saved, err = Apply(f, map[string]string{"a.one": "10", "b.two": "20", "c.three": "30"})
	})
	if !errors.Is(err, ErrNotWritable) {
		t.Fatalf("err = %v, want ErrNotWritable", err)
	}
	want := `setting b.two failed: sysctl b.two="20": not writable here (read-only or outside this network namespace): permission denied; restored a.one, already written`
	if err.Error() != want {
		t.Errorf("err:\n got %s\nwant %s", err, want)
	}
	for k, v := range map[string]string{"a.one": "1\n", "b.two": "2\n", "c.three": "3\n"} {
		if got := raw(t, f, k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(saved.Sysctl) != 0 {
		t.Errorf("saved = %v, want empty (everything was restored)", saved.Sysctl)
	}
}

// Restore goes on past a key it cannot write and reports it.
func TestRestoreContinues(t *testing.T) {
	f := newRoot(t, map[string]string{
		"a.one":   "10\n",
		"c.three": "3\n", // already at the saved value: not rewritten
	}, nil)
	err := Restore(f, Saved{Sysctl: map[string]string{"a.one": "1", "b.two": "2", "c.three": "3"}})
	want := `restoring sysctls: sysctl b.two="2": no such sysctl: no such file or directory`
	if err == nil || err.Error() != want {
		t.Errorf("err:\n got %v\nwant %s", err, want)
	}
	if got := raw(t, f, "a.one"); got != "1\n" {
		t.Errorf("a.one = %q, want restored", got)
	}
	if got := raw(t, f, "c.three"); got != "3\n" {
		t.Errorf("c.three = %q", got)
	}
}

func TestReadSaved(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, err string
	}{
		{"ok", `{"sysctl":{"net.core.somaxconn":"4096"},"time":"2026-01-02T03:04:05Z","plan":"p.yaml"}`, ""},
		{"no sysctl", `{"time":"2026-01-02T03:04:05Z","plan":"p.yaml"}`, ""},
		{"unknown field", `{"sysctl":{},"sysctls":{}}`, `json: unknown field "sysctls"`},
		{"not json", `sysctl: {}`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".json")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := ReadSaved(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), p+": ") {
					t.Fatalf("err = %v, want %q naming the file", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Sysctl == nil || s.Plan != "p.yaml" || s.Time.IsZero() {
				t.Errorf("ReadSaved = %+v", s)
			}
		})
	}
	if _, err := ReadSaved(filepath.Join(dir, "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: err = %v", err)
	}
}

// A first write that fails leaves nothing to restore.
func TestApplyFailsFirst(t *testing.T) {
	f := newRoot(t, map[string]string{"a.one": "1\n", "b.two": "2\n"}, map[string]os.FileMode{"a.one": 0o444})
	var err error
	asNobody(t, func() { _, err = Apply(f, map[string]string{"a.one": "10", "b.two": "20"}) })
	want := `setting a.one failed: sysctl a.one="10": not writable here (read-only or outside this network namespace): permission denied; nothing was changed`
	if err == nil || err.Error() != want {
		t.Errorf("err:\n got %v\nwant %s", err, want)
	}
	if got := raw(t, f, "b.two"); got != "2\n" {
		t.Errorf("b.two = %q, written after a failure", got)
	}
}
