package sysctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Row is one line of Check: a wanted sysctl against the host.
type Row struct {
	Key     string // dotted key
	Want    string // value the plan asks for
	Current string // value on the host; "" when it could not be read
	OK      bool   // Current equals Want (see Equal)
	Err     error  // why Current could not be read (an *Error); nil otherwise
}

// Check compares every wanted key with the host and returns one row per key,
// sorted by key. It reads only.
func Check(fs FS, want map[string]string) []Row {
	rows := make([]Row, 0, len(want))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		cur, err := fs.Get(k)
		rows = append(rows, Row{Key: k, Want: want[k], Current: cur, OK: err == nil && Equal(cur, want[k]), Err: err})
	}
	return rows
}

// Saved records what Apply changed, so that Restore can put it back, even
// from another process after a crash (`wsplan tune --restore FILE`). Its JSON
// form is
//
//	{"sysctl": {"net.core.somaxconn": "4096"}, "time": "2026-…", "plan": "plans/1m.yaml"}
//
// with "sys": {"module/haltpoll/parameters/guest_halt_poll_ns": "0"} when
// the run also changed a key under /sys (host.idle_poll).
type Saved struct {
	Sysctl map[string]string `json:"sysctl"`        // key → value before Apply changed it; only keys Apply wrote
	Sys    map[string]string `json:"sys,omitempty"` // the same for keys under /sys (see IdlePoll); RestoreSys puts them back
	Time   time.Time         `json:"time"`          // when Apply ran
	Plan   string            `json:"plan"`          // plan file that asked for the values; set by the caller
}

// Previous returns what Apply would save for these rows (from Check): the
// current values of the keys that differ and could be read. Writing it to
// the saved-state file before Apply makes even a crash in the middle of
// Apply restorable; Restore skips keys that were never changed.
func Previous(rows []Row) Saved {
	s := Saved{Sysctl: map[string]string{}, Time: time.Now()}
	for _, r := range rows {
		if !r.OK && r.Err == nil {
			s.Sysctl[r.Key] = r.Current
		}
	}
	return s
}

// Apply writes every wanted key whose current value differs, in sorted key
// order, and returns the previous values of the keys it wrote.
//
// It first reads every key: if any cannot be read, nothing is written. If a
// write fails part way, the keys already written are restored (in reverse
// order) and the error names the failing key, plus any restore failure; the
// returned Saved then holds only the keys that could not be restored (empty
// when the host is back as it was), so the caller can still save and retry
// it.
func Apply(fs FS, want map[string]string) (Saved, error) {
	saved := Saved{Sysctl: map[string]string{}, Time: time.Now()}
	rows := Check(fs, want)
	var unread []error
	for _, r := range rows {
		if r.Err != nil {
			unread = append(unread, r.Err)
		}
	}
	if len(unread) > 0 {
		return saved, fmt.Errorf("nothing changed: %w", errors.Join(unread...))
	}
	var written []string
	for _, r := range rows {
		if r.OK {
			continue
		}
		if err := fs.Set(r.Key, r.Want); err != nil {
			var undo []error
			for _, k := range slices.Backward(written) {
				if uerr := fs.Set(k, saved.Sysctl[k]); uerr != nil {
					undo = append(undo, uerr)
					continue
				}
				delete(saved.Sysctl, k)
			}
			if len(undo) > 0 {
				return saved, fmt.Errorf("setting %s failed: %w; restoring the keys already written failed, still changed: %s: %w",
					r.Key, err, strings.Join(slices.Sorted(maps.Keys(saved.Sysctl)), ", "), errors.Join(undo...))
			}
			if len(written) == 0 {
				return saved, fmt.Errorf("setting %s failed: %w; nothing was changed", r.Key, err)
			}
			return saved, fmt.Errorf("setting %s failed: %w; restored %s, already written", r.Key, err, strings.Join(written, ", "))
		}
		saved.Sysctl[r.Key] = r.Current
		written = append(written, r.Key)
	}
	return saved, nil
}

// Restore writes back every saved key (in sorted order) whose value differs
// from the saved one. It goes on past failures and returns them joined.
func Restore(fs FS, saved Saved) error {
	if err := restore(fs, saved.Sysctl); err != nil {
		return fmt.Errorf("restoring sysctls: %w", err)
	}
	return nil
}

// RestoreSys is Restore for the keys under /sys (saved.Sys), through sys.
func RestoreSys(sys FS, saved Saved) error {
	if err := restore(sys, saved.Sys); err != nil {
		return fmt.Errorf("restoring %s: %w", SysRoot, err)
	}
	return nil
}

func restore(fs FS, saved map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(saved)) {
		prev := saved[k]
		if cur, err := fs.Get(k); err == nil && Equal(cur, prev) {
			continue
		}
		if err := fs.Set(k, prev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteFile writes s as indented JSON to path, through a temporary file in
// the same directory and a rename, so a crash never leaves half a file.
func (s Saved) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	// On failure the temporary file is removed best effort: the error that
	// matters is the one returned, and a stray *.tmp file is harmless.
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ReadSaved reads a file written by Saved.WriteFile. Unknown fields are an
// error (the file is ours; anything else in it is a mistake).
func ReadSaved(path string) (Saved, error) {
	var s Saved
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.Sysctl == nil {
		s.Sysctl = map[string]string{}
	}
	return s, nil
}
