package frameworks

// Fasthttp is the fasthttp adapter's name.
const Fasthttp = "fasthttp"

func init() {
	Register(Adapter{
		Name:      Fasthttp,
		Library:   "github.com/fasthttp/websocket",
		Doc:       "valyala/fasthttp server, goroutine per connection, NextReader into a reused buffer, WriteMessage",
		Broadcast: &Broadcast{Doc: "PreparedMessage (encoded once per message), WritePreparedMessage to each member in turn from the publisher's goroutine"},
	})
	RegisterPreset(Preset{
		Name:      Fasthttp,
		Framework: Fasthttp,
		Doc:       "fasthttp/websocket (gorilla's fork) on valyala/fasthttp, same loop as gorilla",
	})
}
