package frameworks

// Nbio is the nbio adapter's name.
const Nbio = "nbio"

// nbio IO modes, the values of the io_mode option.
const (
	NbioBlocking    = "blocking"
	NbioMixed       = "mixed"
	NbioNonBlocking = "nonblocking"
	NbioStd         = "std"
)

func init() {
	Register(Adapter{
		Name:    Nbio,
		Library: "github.com/lesismal/nbio",
		Doc:     "nbhttp engine (blocking, mixed or epoll non-blocking IO) or net/http; OnMessage writes the message back; read_buffer sizes the message pool (+1024) and, only when set, nbio's socket reads",
		Limits: Limits{
			NoEmptyMessages: "nbio v1.6.8 never passes a message without payload bytes to any handler",
			NoTLS: func(v map[string]string) string {
				if v != nil && v["io_mode"] == NbioStd {
					return ""
				}
				return "nbio's engine io modes take the raw socket from the listener; only io_mode=std (net/http) serves TLS here"
			},
		},
		Options: []Option{
			{Name: "io_mode", Type: TypeEnum, Enum: []string{NbioBlocking, NbioMixed, NbioNonBlocking, NbioStd}, Default: NbioNonBlocking,
				Doc: "nbhttp IOMod (blocking: goroutine per connection; nonblocking: epoll loop; mixed: blocking up to max_blocking_online, then epoll) or std: nbio's upgrader on net/http"},
			{Name: "max_blocking_online", Type: TypeInt, Default: "10000", Min: 1,
				Doc: "io_mode=mixed only: connections served blocking before new ones go to the epoll loop"},
		},
		Broadcast: &Broadcast{Doc: "OnMessage writes to each member with WriteMessage in turn (nbio has no pre-encoded message; in the engine's io modes writes are buffered and never block the publisher)"},
	})
	for _, p := range []Preset{
		{Name: "nbio_blocking", Options: map[string]string{"io_mode": NbioBlocking},
			Doc: "nbhttp.Engine, IOModBlocking: goroutine per connection"},
		{Name: "nbio_mixed", Options: map[string]string{"io_mode": NbioMixed},
			Doc: "nbhttp.Engine, IOModMixed: blocking for the first 10000 connections, then the epoll loop"},
		{Name: "nbio_nonblocking", Options: map[string]string{"io_mode": NbioNonBlocking},
			Doc: "nbhttp.Engine, IOModNonBlocking: epoll event loop"},
		{Name: "nbio_std", Options: map[string]string{"io_mode": NbioStd},
			Doc: "nbio's websocket upgrader on a net/http server, goroutine per connection"},
	} {
		p.Framework = Nbio
		RegisterPreset(p)
	}
}
