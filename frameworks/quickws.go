package frameworks

// Quickws is the quickws adapter's name.
const Quickws = "quickws"

func init() {
	Register(Adapter{
		Name:    Quickws,
		Library: "github.com/antlabs/quickws",
		Doc:     "net/http upgrade, goroutine per connection running quickws's read loop, WithServerCallback whose OnMessage writes back",
		Options: []Option{
			{Name: "parse_mode", Type: TypeEnum, Enum: []string{"window", "bufio"}, Default: "window",
				Doc: "window = quickws's default fixed-window frame parser; bufio = WithServerBufioParseMode, frames parsed from a bufio.Reader"},
		},
		Broadcast: &Broadcast{Doc: "a callback per connection; WriteMessage to each member in turn from the publisher's read loop (no pre-encoded message in quickws)"},
	})
	RegisterPreset(Preset{
		Name:      Quickws,
		Framework: Quickws,
		// 1024 bytes = quickws's default window (multiple 1.0).
		Options: map[string]string{"read_buffer": "1024"},
		Doc:     "quickws on net/http, WithServerCallback, goroutine per connection",
	})
}
