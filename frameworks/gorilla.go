package frameworks

// Gorilla is the gorilla adapter's name.
const Gorilla = "gorilla"

func init() {
	Register(Adapter{
		Name:      Gorilla,
		Library:   "github.com/gorilla/websocket",
		Doc:       "net/http server, goroutine per connection, NextReader into a reused buffer, WriteMessage",
		Broadcast: &Broadcast{Doc: "PreparedMessage (encoded once per message), WritePreparedMessage to each member in turn from the publisher's goroutine"},
	})
	RegisterPreset(Preset{
		Name:      Gorilla,
		Framework: Gorilla,
		Doc:       "gorilla/websocket on net/http, goroutine per connection",
	})
}
