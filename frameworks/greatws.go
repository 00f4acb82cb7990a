package frameworks

import "fmt"

// Greatws is the greatws adapter's name.
const Greatws = "greatws"

// greatws callback modes, the values of the callback option.
const (
	GreatwsPool      = "pool"
	GreatwsEventLoop = "event_loop"
)

func init() {
	Register(Adapter{
		Name: Greatws,
		Limits: Limits{
			NoTLS: always("greatws moves the socket's fd into its own event loops after the upgrade; greatws v0.2.2 has no TLS there"),
		},
		Library: "github.com/antlabs/greatws",
		Doc:     "net/http upgrade, then greatws's epoll event loops; OnMessage on a worker pool or in the event loop; read_buffer does not apply (greatws sizes its own)",
		Options: []Option{
			{Name: "callback", Type: TypeEnum, Enum: []string{GreatwsPool, GreatwsEventLoop}, Default: GreatwsPool,
				Doc: "where OnMessage runs: pool = the business goroutine pool; event_loop = the IO goroutine that parsed the message (WithServerCallbackInEventLoop)"},
			{Name: "pool_init", Type: TypeInt, Default: "240", Min: 1, Doc: "business goroutines started, across all event loops (WithBusinessGoNum); <= pool_max"},
			{Name: "pool_min", Type: TypeInt, Default: "240", Min: 1, Doc: "business goroutines kept when idle, across all event loops; <= pool_max"},
			{Name: "pool_max", Type: TypeInt, Default: "240", Min: 1, Doc: "most business goroutines, across all event loops"},
			{Name: "event_loops", Type: TypeInt, Default: "0", Doc: "epoll event loops (WithEventLoops); 0 = runtime.NumCPU()"},
			{Name: "max_events", Type: TypeInt, Default: "1000", Min: 1, Doc: "most events one epoll_wait returns (WithMaxEventNum)"},
		},
		// greatws replaces values <= 0 by its own defaults (8/50/30000, 256
		// events), hence the Min of 1 above, and starts nothing sensible
		// with a pool smaller than its initial or idle size.
		Check:     checkGreatws,
		Broadcast: &Broadcast{Doc: "a callback per connection (UpgradeV2); WriteMessage to each member in turn (no pre-encoded message in greatws)"},
	})
	RegisterPreset(Preset{
		Name:      Greatws,
		Framework: Greatws,
		Options:   map[string]string{"callback": GreatwsPool},
		Doc:       "greatws event loops (NumCPU, 1000 events), OnMessage on a 240-goroutine business pool",
	})
	RegisterPreset(Preset{
		Name:      "greatws_event",
		Framework: Greatws,
		Options:   map[string]string{"callback": GreatwsEventLoop},
		Doc:       "as greatws, with OnMessage in the IO event loop (WithServerCallbackInEventLoop)",
	})
}

// checkGreatws checks the pool sizes against each other.
func checkGreatws(values map[string]string) error {
	c := Config{Values: values}
	if start, low, high := c.Int("pool_init"), c.Int("pool_min"), c.Int("pool_max"); start > high || low > high {
		return fmt.Errorf("options pool_init (%d) and pool_min (%d) must be <= pool_max (%d): set them with pool_max (their default is 240)", start, low, high)
	}
	return nil
}
