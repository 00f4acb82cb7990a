package engine

import (
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
)

func TestRepeatNames(t *testing.T) {
	m := []plan.MatrixVar{{Name: "payload", Values: []string{"64", "1KiB"}}, {Name: "conns", Values: []string{"10"}}}
	combo := map[string]string{"payload": "1KiB", "conns": "10"}
	p := &plan.Plan{Matrix: m, Combo: combo}
	for _, tc := range []struct {
		got, want string
	}{
		{logTag(combo, m, 2), "-payload_1KiB-conns_10-r2"},
		{logTag(nil, nil, 0), ""},
		{logTag(map[string]string{"path": "/a b"}, []plan.MatrixVar{{Name: "path"}}, 0), "-path__a_b"},
		{roundName(p, 2, 3), "== payload=1KiB conns=10, repeat 2 of 3"},
		{roundName(p, 1, 1), "== payload=1KiB conns=10"},
		{roundName(&plan.Plan{}, 3, 5), "== repeat 3 of 5"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	o := &Options{Plan: &plan.Plan{Repeat: 4}}
	if o.count() != 4 {
		t.Errorf("count from repeat: = %d", o.count())
	}
	o.Count = 2
	if o.count() != 2 || len(o.plans()) != 1 {
		t.Errorf("--count wins: %d, plans %d", o.count(), len(o.plans()))
	}
}
