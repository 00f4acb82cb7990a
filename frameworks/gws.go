package frameworks

// Gws is the gws adapter's name.
const Gws = "gws"

// gwsReadBuffer is gws's default ReadBufferSize (the connection's bufio
// reader), which the published runs used by passing &gws.ServerOption{}.
const gwsReadBuffer = "4096"

func init() {
	Register(Adapter{
		Name:    Gws,
		Library: "github.com/lxzan/gws",
		Doc:     "gws event handler, OnMessage writes back; on gws's own HTTP-less listener or on net/http",
		Options: []Option{
			{Name: "server", Type: TypeEnum, Enum: []string{"gws", "std"}, Default: "gws",
				Doc: "gws = gws.NewServer: gws accepts and parses the upgrade itself, no net/http; std = gws.NewUpgrader in a net/http handler"},
			{Name: "parallel", Type: TypeBool, Default: "false",
				Doc: "ParallelEnabled: run OnMessage of one connection on up to parallel_golimit goroutines (echo order is then not guaranteed); false = in the read loop"},
			{Name: "parallel_golimit", Type: TypeInt, Default: "0",
				Doc: "ParallelGolimit: goroutines per connection when parallel is on; 0 = gws's default, 8"},
			{Name: "check_utf8", Type: TypeBool, Default: "false",
				Doc: "CheckUtf8Enabled: validate text messages; false = gws's default, no check"},
		},
		Broadcast: &Broadcast{Doc: "gws.Broadcaster: each message framed once, queued on every member's asynchronous write queue (a member that does not read never blocks the publisher)"},
	})
	RegisterPreset(Preset{
		Name:      Gws,
		Framework: Gws,
		Options:   map[string]string{"server": "gws", "read_buffer": gwsReadBuffer},
		Doc:       "gws.NewServer with &ServerOption{}: gws's own listener, goroutine per connection, OnMessage writes back",
	})
	RegisterPreset(Preset{
		Name:      "gws_std",
		Framework: Gws,
		Options:   map[string]string{"server": "std", "read_buffer": gwsReadBuffer},
		Doc:       "gws.NewUpgrader on a net/http server, ReadLoop in its own goroutine, OnMessage writes back",
	})
}
