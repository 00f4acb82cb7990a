package frameworks

// Nettyws is the nettyws adapter's name.
const Nettyws = "nettyws"

// nettyws message types, the values of the message_type option.
const (
	NettywsBinary = "binary"
	NettywsText   = "text"
)

func init() {
	Register(Adapter{
		Name:    Nettyws,
		Library: "github.com/go-netty/go-netty-ws",
		Doc:     "go-netty-ws on net/http, goroutine per connection; echoes ONE message type (message_type) and answers the other with close 1003",
		Limits: Limits{
			OneMessageType:    func(v map[string]string) string { return v["message_type"] },
			OneMessageTypeWhy: "go-netty-ws fixes the opcode per server (message_type, binary as published) and does not tell the handler which one arrived",
			// go-netty-transport (v1.7.10) negotiates permessage-deflate
			// but then compresses every message of 512 bytes or more on
			// every connection, also those whose client did not offer the
			// extension: such a client receives RSV1 frames it cannot read.
			NoCompression: "go-netty-ws v1.0.7 compresses without regard to negotiation (clients that did not offer the extension get RSV1 frames)",
		},
		Options: []Option{
			{Name: "message_type", Type: TypeEnum, Enum: []string{NettywsBinary, NettywsText}, Default: NettywsBinary,
				Doc: "the one opcode served: go-netty-ws writes every message with it (binary = WithBinary()) and answers messages of the other type with close 1003, unsupported data"},
		},
		Broadcast: &Broadcast{Doc: "OnData writes to each member with Write in turn (no pre-encoded message in go-netty-ws); rooms carried to OnOpen in the request header, as go-netty-ws does not show its handlers the URL"},
	})
	RegisterPreset(Preset{
		Name:      Nettyws,
		Framework: Nettyws,
		// WithBufferSize(2048, 0) in the published server.
		Options: map[string]string{"message_type": NettywsBinary, "read_buffer": "2048"},
		Doc:     "go-netty-ws with WithBinary(), WithNoDelay, WithBufferSize(2048, 0); binary messages only",
	})
}
