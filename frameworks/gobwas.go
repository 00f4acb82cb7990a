package frameworks

// Gobwas is the gobwas adapter's name.
const Gobwas = "gobwas"

func init() {
	Register(Adapter{
		Name:      Gobwas,
		Library:   "github.com/gobwas/ws",
		Doc:       "net/http UpgradeHTTP, goroutine per connection, wsutil.ReadClientData / WriteServerMessage; read_buffer 0 = read frames unbuffered",
		Broadcast: &Broadcast{Doc: "ws.CompileFrame once per message (once more, compressed, for members that negotiated permessage-deflate), the same bytes written to each member's net.Conn in turn"},
	})
	RegisterPreset(Preset{
		Name:      Gobwas,
		Framework: Gobwas,
		Doc:       "gobwas/ws on net/http, goroutine per connection, wsutil helpers",
	})
}
