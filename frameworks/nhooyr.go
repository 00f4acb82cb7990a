package frameworks

// Nhooyr is the nhooyr adapter's name.
const Nhooyr = "nhooyr"

func init() {
	Register(Adapter{
		Name:    Nhooyr,
		Library: "nhooyr.io/websocket",
		Doc:     "net/http server, goroutine per connection, Reader/Writer copy loop",
		Options: []Option{
			{Name: "read_limit", Type: TypeInt, Default: "0",
				Doc: "SetReadLimit: largest message accepted, in bytes; 0 = no limit (the library's own default, 32768, would close 1 MiB echoes with 1009)"},
		},
		Broadcast: &Broadcast{Doc: "a plain write loop: Write to each member in turn from the publisher's goroutine (no pre-encoded message in nhooyr)"},
	})
	RegisterPreset(Preset{
		Name:      Nhooyr,
		Framework: Nhooyr,
		Doc:       "nhooyr.io/websocket on net/http, goroutine per connection, reader/writer loop",
	})
}
