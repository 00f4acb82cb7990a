package sysctl

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DefaultRoot is where the kernel exposes sysctls; FS uses it when Root is "".
const DefaultRoot = "/proc/sys"

// FS reads and writes sysctls as files under Root, the way sysctl(8) does:
// key "net.ipv4.ip_local_port_range" is the file
// Root/net/ipv4/ip_local_port_range. Tests point Root at a temporary
// directory. The zero value uses DefaultRoot.
//
// net.* keys belong to the network namespace of the process; a key that is
// writable on the host can be read-only (or absent) inside a container.
type FS struct {
	Root string // directory holding the sysctl tree; default DefaultRoot
	// Label is what errors print before a key: "" = "sysctl " (SysFS's is
	// SysLabel: its keys are paths under /sys).
	Label string
}

// The kinds of sysctl failure. An *Error wraps one of them, so callers can
// test with errors.Is(err, ErrNotWritable) and so on.
var (
	// ErrNoSuchKey: the key does not exist here (ENOENT, or a directory).
	ErrNoSuchKey = errors.New("no such sysctl")
	// ErrNotWritable: the key exists but cannot be written by this process
	// (EACCES, EPERM, EROFS): a read-only key, a /proc/sys mounted
	// read-only, or a net.* key owned by another network namespace.
	ErrNotWritable = errors.New("not writable here (read-only or outside this network namespace)")
	// ErrInvalidValue: the kernel rejected the value (EINVAL, ERANGE).
	ErrInvalidValue = errors.New("invalid value")
)

// Error is a failed sysctl read or write. Its message names the key (and the
// value for a write), the kind of failure and the system error, e.g.
//
//	sysctl net.core.somaxconn="abc": invalid value: invalid argument
type Error struct {
	Op    string // "read" or "write"
	Key   string // dotted key as given
	Value string // value being written; "" for a read
	Kind  error  // ErrNoSuchKey, ErrNotWritable, ErrInvalidValue, or nil when unclassified
	Err   error  // the underlying error, usually a syscall.Errno
	Label string // printed before Key; "" = "sysctl " (see FS.Label)
}

// Error formats the failure as shown in the type's comment.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Label == "" {
		b.WriteString("sysctl ")
	}
	b.WriteString(e.Label + e.Key)
	if e.Op == "write" {
		b.WriteString("=" + strconv.Quote(e.Value))
	}
	if e.Kind != nil {
		b.WriteString(": " + e.Kind.Error())
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind and the underlying error, so errors.Is matches
// both ErrNotWritable and, say, fs.ErrPermission.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func (f FS) root() string {
	if f.Root == "" {
		return DefaultRoot
	}
	return f.Root
}

// Path returns the file that holds key. A key containing "/" is taken as a
// path relative to Root as it is (sysctl(8) uses that form for names with
// dots in them, e.g. "net/ipv4/conf/eth0.100/rp_filter"); otherwise every
// "." becomes "/".
func (f FS) Path(key string) (string, error) {
	rel := key
	if !strings.Contains(key, "/") {
		rel = strings.ReplaceAll(key, ".", "/")
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return "", &Error{Op: "read", Key: key, Kind: ErrNoSuchKey, Err: errors.New("malformed name"), Label: f.Label}
		}
	}
	return filepath.Join(f.root(), filepath.FromSlash(rel)), nil
}

// maxValue bounds what Get reads: sysctl values are at most a page or so.
const maxValue = 1 << 16

// Get returns the current value of key with surrounding whitespace (the
// kernel's trailing newline) removed; inner tabs and spaces are kept as the
// kernel wrote them.
func (f FS) Get(key string) (string, error) {
	p, err := f.Path(key)
	if err != nil {
		return "", err
	}
	file, err := os.Open(p)
	if err != nil {
		return "", f.classify("read", key, "", err)
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxValue))
	if err != nil {
		return "", f.classify("read", key, "", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Set writes value (plus a newline, as echo(1) and sysctl(8) do) to key. It
// never creates a key: a missing file is ErrNoSuchKey.
func (f FS) Set(key, value string) error {
	p, err := f.Path(key)
	if err != nil {
		e := err.(*Error)
		e.Op, e.Value = "write", value
		return e
	}
	file, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return f.classify("write", key, value, err)
	}
	if _, err := file.Write([]byte(value + "\n")); err != nil {
		file.Close()
		return f.classify("write", key, value, err)
	}
	if err := file.Close(); err != nil {
		return f.classify("write", key, value, err)
	}
	return nil
}

// classify turns an OS error into an *Error of the right kind, keeping only
// the errno when there is one (the path is implied by the key).
func (f FS) classify(op, key, value string, err error) error {
	e := &Error{Op: op, Key: key, Value: value, Err: err, Label: f.Label}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.Err = errno
		e.Kind = kindOf(errno)
	}
	return e
}

func kindOf(errno syscall.Errno) error {
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EISDIR:
		return ErrNoSuchKey
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return ErrNotWritable
	case syscall.EINVAL, syscall.ERANGE:
		return ErrInvalidValue
	}
	return nil
}

// Equal reports whether two sysctl values are the same once the kernel has
// normalised them: fields are split on any run of spaces, tabs or newlines
// ("1024 65535" == "1024\t65535"), and fields that are both decimal integers
// compare by value ("01" == "1").
func Equal(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		x, errx := strconv.ParseInt(fa[i], 10, 64)
		y, erry := strconv.ParseInt(fb[i], 10, 64)
		if errx != nil || erry != nil || x != y {
			return false
		}
	}
	return true
}
