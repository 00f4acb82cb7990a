package frameworks

// Hertz is the hertz adapter's name.
const Hertz = "hertz"

// hertz transports, the values of the transport option.
const (
	HertzNetpoll  = "netpoll"
	HertzStandard = "standard"
)

func init() {
	Register(Adapter{
		Name: Hertz,
		Limits: Limits{
			NoTLS: always("hertz serves its own listeners here (netpoll takes the socket); serving hertz's TLS is not wired in this adapter"),
		},
		Library: "github.com/hertz-contrib/websocket",
		Doc:     "hertz server (one per address), goroutine per connection, NextReader into a reused read buffer, WriteMessage",
		Options: []Option{
			{Name: "transport", Type: TypeEnum, Enum: []string{HertzNetpoll, HertzStandard}, Default: HertzNetpoll,
				Doc: "hertz network library: netpoll (hertz's default, epoll based) or standard (net, standard.NewTransporter)"},
		},
		Broadcast: &Broadcast{Doc: "PreparedMessage (encoded once per message), WritePreparedMessage to each member in turn from the publisher's goroutine"},
	})
	RegisterPreset(Preset{
		Name:      Hertz,
		Framework: Hertz,
		Options:   map[string]string{"transport": HertzNetpoll},
		Doc:       "hertz-contrib/websocket on hertz with its default netpoll transport",
	})
	RegisterPreset(Preset{
		Name:      "hertz_std",
		Framework: Hertz,
		Options:   map[string]string{"transport": HertzStandard},
		Doc:       "hertz-contrib/websocket on hertz with standard.NewTransporter",
	})
}
