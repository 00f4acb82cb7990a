package secret

import (
	"encoding/json"
	"io"
	"reflect"
	"sync"
)

// Writer is a stream to w with the secrets of a Set replaced, wherever
// the writes cut it (a child's output read from a pipe in chunks): it
// holds back a tail that may begin a secret until the next write shows
// whether it does, or Close writes it out.
type Writer struct {
	s    *Set
	w    io.Writer
	mu   sync.Mutex
	held []byte
}

// Writer returns a redacting stream to w.
func (s *Set) Writer(w io.Writer) *Writer { return &Writer{s: s, w: w} }

// Write redacts what it can tell apart and writes it; it reports len(p)
// when that went through.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.s.Empty() && len(w.held) == 0 {
		return w.w.Write(p)
	}
	out, rest := w.s.scan(append(w.held, p...), false)
	w.held = append([]byte(nil), rest...)
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes what was held back. It does not close w.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	out, _ := w.s.scan(w.held, true)
	w.held = nil
	_, err := w.w.Write(out)
	return err
}

// RedactValue replaces the secrets in every string reachable from ptr, a
// pointer to a value: struct fields (exported), slices, arrays, map keys
// and values, interfaces, pointers and json.RawMessage. Other []byte are
// left alone (binary data).
func (s *Set) RedactValue(ptr any) {
	if s.Empty() {
		return
	}
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	s.redact(v.Elem(), map[uintptr]bool{})
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// redact redacts v, which is settable.
func (s *Set) redact(v reflect.Value, seen map[uintptr]bool) {
	if !holdsText(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.String:
		if r := s.Redact(v.String()); r != v.String() {
			v.SetString(r)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		s.redact(v.Elem(), seen)
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		s.redact(c, seen)
		v.Set(c)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				s.redact(v.Field(i), seen)
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessage {
			if r := s.Redact(string(v.Bytes())); r != string(v.Bytes()) {
				v.SetBytes([]byte(r))
			}
			return
		}
		for i := range v.Len() {
			s.redact(v.Index(i), seen)
		}
	case reflect.Array:
		for i := range v.Len() {
			s.redact(v.Index(i), seen)
		}
	case reflect.Map:
		s.redactMap(v, seen)
	}
}

// redactMap redacts a map's keys and values (neither is settable in
// place: each entry is copied, redacted and stored again).
func (s *Set) redactMap(v reflect.Value, seen map[uintptr]bool) {
	if v.IsNil() {
		return
	}
	type entry struct{ k, v reflect.Value }
	var all []entry
	it := v.MapRange()
	for it.Next() {
		k := reflect.New(it.Key().Type()).Elem()
		k.Set(it.Key())
		e := reflect.New(it.Value().Type()).Elem()
		e.Set(it.Value())
		all = append(all, entry{k, e})
	}
	for _, e := range all {
		old := reflect.New(e.k.Type()).Elem()
		old.Set(e.k)
		s.redact(e.k, seen)
		s.redact(e.v, seen)
		if !e.k.Equal(old) {
			v.SetMapIndex(old, reflect.Value{})
		}
		v.SetMapIndex(e.k, e.v)
	}
}

// textTypes caches holdsText.
var textTypes sync.Map // reflect.Type → bool

// holdsText reports whether a value of type t may hold a string: the
// walk skips the others (timelines, histograms of numbers) at once.
func holdsText(t reflect.Type) bool {
	if b, ok := textTypes.Load(t); ok {
		return b.(bool)
	}
	textTypes.Store(t, true) // a recursive type holds text until shown otherwise
	var b bool
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		b = true
	case reflect.Pointer, reflect.Array:
		b = holdsText(t.Elem())
	case reflect.Slice:
		b = t == rawMessage || holdsText(t.Elem())
	case reflect.Map:
		b = holdsText(t.Key()) || holdsText(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsText(f.Type) {
				b = true
				break
			}
		}
	}
	textTypes.Store(t, b)
	return b
}
