package sysctl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// newRoot returns a temporary sysctl tree holding files (dotted key →
// content) and mode (dotted key → permission bits; default 0666). Every
// directory is world-searchable so asNobody can reach the files.
func newRoot(t *testing.T, files map[string]string, mode map[string]os.FileMode) FS {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := FS{Root: root}
	for k, v := range files {
		p, err := f.Path(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		m, ok := mode[k]
		if !ok {
			m = 0o666
		}
		if err := os.WriteFile(p, []byte(v), m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil { // WriteFile's mode is filtered by the umask
			t.Fatal(err)
		}
	}
	return f
}

// raw returns the exact bytes of key's file, to tell an untouched file from
// one rewritten with an equal value.
func raw(t *testing.T, f FS, key string) string {
	t.Helper()
	p, err := f.Path(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// asNobody runs fn with file permission checks made as user nobody, so that
// a 0444 file is read-only even when the tests run as root (root ignores
// file modes). It switches the file-system uid of one locked OS thread only.
func asNobody(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsuid(65534)
	defer unix.Setfsuid(0)
	if cur, _ := unix.SetfsuidRetUid(-1); cur != 65534 {
		t.Skipf("cannot switch the file-system uid to nobody (still %d)", cur)
	}
	fn()
}

func TestPath(t *testing.T) {
	f := FS{Root: "/r"}
	for _, tc := range []struct {
		key, want string
	}{
		{"net.ipv4.ip_local_port_range", "/r/net/ipv4/ip_local_port_range"},
		{"fs.file-max", "/r/fs/file-max"},
		{"net/ipv4/conf/eth0.100/rp_filter", "/r/net/ipv4/conf/eth0.100/rp_filter"},
	} {
		got, err := f.Path(tc.key)
		if err != nil || got != tc.want {
			t.Errorf("Path(%q) = %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	if got, _ := (FS{}).Path("net.core.somaxconn"); got != "/proc/sys/net/core/somaxconn" {
		t.Errorf("zero FS: Path = %q, want under /proc/sys", got)
	}
	for _, key := range []string{"", ".", "net..core", "net.core.", "../etc/passwd", "/etc/passwd", "net/../../etc"} {
		_, err := f.Path(key)
		if !errors.Is(err, ErrNoSuchKey) {
			t.Errorf("Path(%q): err = %v, want ErrNoSuchKey", key, err)
		}
	}
}

func TestGetSet(t *testing.T) {
	f := newRoot(t, map[string]string{
		"net.ipv4.ip_local_port_range": "32768\t60999\n",
		"net.core.somaxconn":           "4096\n",
	}, nil)

	got, err := f.Get("net.ipv4.ip_local_port_range")
	if err != nil || got != "32768\t60999" {
		t.Fatalf("Get = %q, %v; want %q", got, err, "32768\t60999")
	}
	if err := f.Set("net.core.somaxconn", "8192"); err != nil {
		t.Fatal(err)
	}
	if got := raw(t, f, "net.core.somaxconn"); got != "8192\n" {
		t.Errorf("after Set the file holds %q, want %q", got, "8192\n")
	}
	if got, err := f.Get("net.core.somaxconn"); err != nil || got != "8192" {
		t.Errorf("Get after Set = %q, %v", got, err)
	}
}

func TestErrors(t *testing.T) {
	f := newRoot(t, map[string]string{
		"net.core.somaxconn": "4096\n",
		"fs.file-nr":         "1 0 100\n",
	}, map[string]os.FileMode{"fs.file-nr": 0o444})

	for _, tc := range []struct {
		name string
		op   func(t *testing.T) error
		kind error
		msg  string
	}{
		{"get missing", func(*testing.T) error { _, err := f.Get("net.core.nope"); return err },
			ErrNoSuchKey, "sysctl net.core.nope: no such sysctl: no such file or directory"},
		{"get directory", func(*testing.T) error { _, err := f.Get("net.core"); return err },
			ErrNoSuchKey, "sysctl net.core: no such sysctl: is a directory"},
		{"set missing never creates", func(*testing.T) error { return f.Set("net.core.nope", "1") },
			ErrNoSuchKey, `sysctl net.core.nope="1": no such sysctl: no such file or directory`},
		{"set read-only", func(t *testing.T) (err error) { asNobody(t, func() { err = f.Set("fs.file-nr", "0") }); return err },
			ErrNotWritable, `sysctl fs.file-nr="0": not writable here (read-only or outside this network namespace): permission denied`},
		{"malformed", func(*testing.T) error { _, err := f.Get("net..core"); return err },
			ErrNoSuchKey, "sysctl net..core: no such sysctl: malformed name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(t)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			if err.Error() != tc.msg {
				t.Errorf("message:\n got %s\nwant %s", err, tc.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(f.Root, "net/core/nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Set created a missing key: %v", err)
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		want  error
	}{
		{syscall.ENOENT, ErrNoSuchKey},
		{syscall.EISDIR, ErrNoSuchKey},
		{syscall.EACCES, ErrNotWritable},
		{syscall.EPERM, ErrNotWritable},
		{syscall.EROFS, ErrNotWritable},
		{syscall.EINVAL, ErrInvalidValue},
		{syscall.ERANGE, ErrInvalidValue},
		{syscall.EIO, nil},
	} {
		if got := kindOf(tc.errno); got != tc.want {
			t.Errorf("kindOf(%v) = %v, want %v", tc.errno, got, tc.want)
		}
	}
	// The message of an invalid write, as the kernel reports it.
	err := FS{}.classify("write", "net.core.somaxconn", "abc", &fs.PathError{Op: "write", Path: "/proc/sys/net/core/somaxconn", Err: syscall.EINVAL})
	if want := `sysctl net.core.somaxconn="abc": invalid value: invalid argument`; err.Error() != want {
		t.Errorf("got %s\nwant %s", err, want)
	}
	if !errors.Is(err, ErrInvalidValue) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%v should match ErrInvalidValue and EINVAL", err)
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1024 65535", "1024\t65535", true},
		{"1024 65535\n", "  1024   65535 ", true},
		{"4096", "4096", true},
		{"01", "1", true},
		{"cubic", "cubic", true},
		{"", "", true},
		{"1024 65535", "1024 65534", false},
		{"1024 65535", "1024", false},
		{"1", "", false},
		{"cubic", "bbr", false},
		{"1", "1.0", false},
	} {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The real /proc/sys, read only: a missing key is ErrNoSuchKey, a present
// one reads.
func TestProcSysRead(t *testing.T) {
	if _, err := os.Stat(DefaultRoot); err != nil {
		t.Skip("no /proc/sys")
	}
	if _, err := (FS{}).Get("net.core.wsplan_no_such_key"); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("missing key: err = %v, want ErrNoSuchKey", err)
	}
	v, err := (FS{}).Get("net.ipv4.ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParsePortRange(v); err != nil {
		t.Errorf("ip_local_port_range %q: %v", v, err)
	}
}
