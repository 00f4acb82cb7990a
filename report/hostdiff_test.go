package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

func TestHostDiff(t *testing.T) {
	old := result.Host{Kernel: "6.1", CPUModel: "X", Cores: 2, ServerCPUs: "0", ClientCPUs: "1", NoFileHard: 20000,
		CPUIdle: "haltpoll, halts at once (no polling)", Sysctl: map[string]string{"net.core.somaxconn": "4096", "fs.nr_open": "1048576"}}
	cur := old
	cur.CPUIdle = "haltpoll, polls up to 200µs before halting"
	cur.ClientCPUs = "1-3"
	cur.Sysctl = map[string]string{"net.core.somaxconn": "65535", "fs.nr_open": "1048576", "net.ipv4.tcp_tw_reuse": "1"}
	want := []string{
		"client cpus: 1 → 1-3",
		"cpuidle: haltpoll, halts at once (no polling) → haltpoll, polls up to 200µs before halting",
		"net.core.somaxconn: 4096 → 65535", // tcp_tw_reuse: not recorded in old, not compared
	}
	if got := HostDiff(old, cur); !reflect.DeepEqual(got, want) {
		t.Errorf("HostDiff:\n%q\nwant\n%q", got, want)
	}
	if got := HostDiff(old, old); len(got) != 0 {
		t.Errorf("same host: %q", got)
	}

	// Tables with a baseline from another setup say so before the tables;
	// with the same setup they do not.
	res := []result.Result{{Server: "gws", Phase: "echo", Kind: "echo", OK: true, Metrics: metrics.Values{"tps": 100.0}}}
	for _, tc := range []struct {
		base result.Host
		note bool
	}{{old, true}, {cur, false}} {
		var buf bytes.Buffer
		if err := Tables(&buf, &result.Run{Host: cur, Results: res}, &result.Run{Host: tc.base, Results: res}, "md"); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if has := strings.HasPrefix(out, "The baseline was measured on a different host or setup; its deltas include that:\n- client cpus: 1 → 1-3\n"); has != tc.note {
			t.Errorf("note %v, want %v:\n%s", has, tc.note, out)
		}
	}
}
