package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/sysctl"
)

func TestSysctl(t *testing.T) {
	rows := []sysctl.Row{
		{Key: "net.core.somaxconn", Want: "4096", Current: "4096", OK: true},
		{Key: "net.ipv4.ip_local_port_range", Want: "1024 65535", Current: "32768\t60999"},
		{Key: "fs.nr_open", Want: "2097152", Err: errors.New("not writable here")},
	}
	var b strings.Builder
	if err := Sysctl(&b, rows, "md"); err != nil {
		t.Fatal(err)
	}
	want := `| Key                          | Wanted       | Current        | State                    |
|:-----------------------------|:-------------|:---------------|:-------------------------|
| net.core.somaxconn           | "4096"       | "4096"         | OK                       |
| net.ipv4.ip_local_port_range | "1024 65535" | "32768\t60999" | DIFF                     |
| fs.nr_open                   | "2097152"    | ""             | ERROR: not writable here |
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
