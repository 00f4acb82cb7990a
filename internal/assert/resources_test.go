package assert

import (
	"errors"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/plan"
)

// An assertion on the server's CPU or memory of a url: server whose
// resources are not measured fails to load and says why; the same
// assertion limited to measured servers, or on client metrics, loads.
func TestCompileUnmeasuredServer(t *testing.T) {
	servers := []plan.Server{
		{Name: "local"},
		{Name: "remote", URLs: []string{"ws://127.0.0.1:1/ws"}},
		{Name: "withpid", URLs: []string{"ws://127.0.0.1:2/ws"}, PID: 42},
	}
	cases := []struct {
		a    plan.Assertion
		want string // "" = loads
	}{
		{plan.Assertion{Expr: "cpu_avg < 90", Line: 3}, `p.yaml:3: assert[0].expr: "cpu_avg < 90": cpu_avg is a server resource and server remote is a url: target without pid:, pid_file: or metrics_url:, so it is not measured (n/a)`},
		{plan.Assertion{Expr: "eer > 1", Phase: "echo", Line: 4}, `p.yaml:4: assert[0].expr: "eer > 1": eer is a server resource and server remote`},
		{plan.Assertion{Expr: "tps > results.remote.echo.server_cpu_per_1m", Phase: "echo", Servers: []string{"local"}, Line: 5}, `server_cpu_per_1m is a server resource and server remote`},
		{plan.Assertion{Expr: "cpu_avg < 90", Servers: []string{"local", "withpid"}}, ""},
		{plan.Assertion{Expr: "client_cpu_avg < 190 && tps > 0", Phase: "echo"}, ""},
		{plan.Assertion{Expr: "tps > results.withpid.echo.eer", Phase: "echo"}, ""},
	}
	for _, c := range cases {
		p := testPlan(c.a)
		p.Servers = servers
		_, err := Compile(p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v, want it to load", c.a.Expr, err)
			}
			continue
		}
		var errs plan.Errors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%q: got %v, want one error containing %q", c.a.Expr, err, c.want)
		}
	}
}
